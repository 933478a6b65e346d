"""PII masking (docs/architecture.md "PII masking"): with MEMORY_PII=mask no model sees a value
and nothing stored from an item holds it; each value is one placeholder per user, everywhere."""

import json
from typing import Any

import pytest

from hippocampus.adapters.pii.patterns import PatternDetector
from hippocampus.contracts.errors import ConditionFailed, LimitExceeded
from hippocampus.contracts.models import IngestRequest
from hippocampus.contracts.pii import PiiSpan
from hippocampus.contracts.recall import ContextRequest, QueryRequest
from hippocampus.domain.privacy.masking import Masker, UserScope
from tests.support.fakes import Ports, ScriptedModel

T, U = "acme", "alice"
EMAIL, OTHER_EMAIL = "alice.smith@example.com", "bob@example.org"
PHONE, PHONE_AGAIN = "(415) 555-0132", "+1 415 555 0132"  # one number, spelled twice
CARD = "4111 1111 1111 1111"
# Long enough that no id or time stored beside them can hold one by chance.
ORIGINALS = (EMAIL, OTHER_EMAIL, "555-0132", "555 0132", "4111 1111")


@pytest.fixture
def ports() -> Ports:
    return Ports(pii=True)


def ingest(ports: Ports, *items: dict[str, Any]) -> list[Any]:
    request = IngestRequest.model_validate({"items": list(items)})
    return ports.ingest().ingest(T, U, request, f"r{len(ports.archive.raw)}").jobs


def condense(ports: Ports, model: ScriptedModel) -> None:
    ports.consolidation(model).process_batch(ports.queued())
    ports.queue.messages.clear()


def echo_summary(prompt: str) -> str:
    """A model that keeps, as its summary, the new content it was shown (so placeholders survive)."""
    shown = [line for line in prompt.splitlines() if "@" in line or "[" in line]
    return " ".join(shown)[-300:] or "Nothing."


def stored_everywhere(ports: Ports) -> str:
    """Everything the fakes hold about the user, as one text."""
    state, facts = ports.store.read_memory(T, U, with_facts=True)
    episodes = ports.store.episodes(T, U, state.generation)
    records = ports.store.records(T, U, state.generation)
    history = ports.reads().get_history(T, U, 100)
    return json.dumps(
        [
            state.memory,
            [fact.model_dump(mode="json") for fact in facts],
            [episode.model_dump(mode="json") for episode in episodes],
            [record.model_dump(mode="json") for record in records],
            history.model_dump(mode="json"),
            ports.archive.raw,
        ]
    )


def test_one_value_is_one_placeholder_within_an_item_and_across_items(ports):
    ingest(
        ports,
        {"text": f"My email is {EMAIL}. Write to {EMAIL} or call {PHONE}."},
        {"text": f"My other number is {PHONE_AGAIN}; my friend is {OTHER_EMAIL}."},
    )
    model = ScriptedModel(reply=echo_summary)
    condense(ports, model)
    prompt = model.prompts[0]
    assert prompt.count("[EMAIL_1]") == 2 and prompt.count("[PHONE_1]") == 2
    assert "[EMAIL_2]" in prompt and "[PHONE_2]" not in prompt
    assert not any(original in prompt for original in ORIGINALS)


def test_a_later_turn_gets_the_same_placeholder(ports):
    ingest(ports, {"text": f"Reach me at {EMAIL}."})
    condense(ports, ScriptedModel(reply=echo_summary))
    ingest(ports, {"text": f"Did you note {OTHER_EMAIL} and {EMAIL}?"})
    model = ScriptedModel(reply=echo_summary)
    condense(ports, model)
    assert "[EMAIL_2] and [EMAIL_1]" in model.prompts[0]


def test_nothing_stored_from_an_item_holds_a_value(ports):
    ingest(
        ports,
        {
            "text": f"Card {CARD}, mail {EMAIL}.",
            "title": f"About {EMAIL}",
            "metadata": {"contact": {"email": EMAIL, "phones": [PHONE]}},
        },
        {"user_assistant_pairs": [{"user": f"Call {PHONE}", "assistant": "Noted."}]},
        {"id": "f1", "text": f"Works email: {OTHER_EMAIL}", "infer": False},
    )
    condense(ports, ScriptedModel(reply=echo_summary))
    stored = stored_everywhere(ports)
    assert not any(original in stored for original in ORIGINALS)
    assert "[CARD_1]" in stored and "[EMAIL_2]" in stored and "[PHONE_1]" in stored
    # The fact is stored at once, so its value is numbered first.
    fact = ports.reads().read_memory(T, U).body.facts[0]
    assert fact.text == "Works email: [EMAIL_1]"


def test_the_payload_is_masked_before_the_model_is_called_and_erased_once_condensed(ports):
    ingest(ports, {"text": f"Mail {EMAIL}."}, {"text": "Nothing personal here."})
    seen_by_the_model: list[str] = []

    def reply(prompt: str) -> str:
        seen_by_the_model.append(json.dumps(ports.archive.raw))
        return "Alice has an email address."

    condense(ports, ScriptedModel(reply=reply))
    assert EMAIL not in seen_by_the_model[0] and "[EMAIL_1]" in seen_by_the_model[0]
    assert ports.raw_payloads() == 0
    assert {job.status for job in ports.jobs.list_user_jobs(T, U)} == {"completed"}


def test_a_failed_condensation_keeps_only_the_masked_payload_for_its_retry(ports):
    [job] = ingest(ports, {"text": f"Mail {EMAIL}."})
    outcome = ports.consolidation(ScriptedModel(TimeoutError("slow"))).process_batch(ports.queued())
    assert outcome.failures
    assert EMAIL not in json.dumps(ports.archive.raw) and "[EMAIL_1]" in json.dumps(ports.archive.raw)
    model = ScriptedModel(reply=echo_summary)
    condense(ports, model)
    assert "[EMAIL_1]" in model.prompts[0]
    assert ports.reads().get_job(T, job.job_id).status == "completed"


def test_a_replaced_summary_is_masked(ports):
    answer = ports.edits().put_memory(T, U, f"Alice: {EMAIL}, {PHONE}.", expected_version=0)
    assert answer.body.memory == "Alice: [EMAIL_1], [PHONE_1]."


def test_a_query_is_masked_with_the_users_numbers(ports):
    ingest(ports, {"id": "f1", "text": f"Email: {EMAIL}", "infer": False})
    answer = ports.recall().query(T, U, QueryRequest(query=f"What about {EMAIL} and {OTHER_EMAIL}?"))
    assert [result.text for result in answer.results][:1] == ["Email: [EMAIL_1]"]
    context = ports.recall().context(T, U, ContextRequest(query=f"mail {EMAIL}"))
    assert "[EMAIL_1]" in context.context and EMAIL not in context.context


def test_a_metadata_filter_on_a_value_finds_what_was_stored_masked(ports):
    ingest(ports, {"id": "f1", "text": "Prefers SMS.", "infer": False, "metadata": {"email": EMAIL}})
    answer = ports.recall().query(T, U, QueryRequest(query="SMS", metadata_filters={"email": EMAIL}))
    assert [result.text for result in answer.results] == ["Prefers SMS."]


def test_a_query_numbers_nothing(ports):
    answer = ports.recall().context(T, U, ContextRequest(query=f"Is {EMAIL} known?"))
    assert answer.context == "" or EMAIL not in answer.context
    ingest(ports, {"id": "f1", "text": f"Mail {OTHER_EMAIL}", "infer": False})
    # The value the query named got no number: the first value the user sends is the first.
    assert ports.reads().read_memory(T, U).body.facts[0].text == "Mail [EMAIL_1]"


def test_a_turn_that_grows_past_its_limit_when_masked_is_still_condensed_after_a_failure(ports):
    text = "x" * 31_990 + " a@b.co"  # `[EMAIL_1]` is 3 characters longer than the address
    [job] = ingest(ports, {"text": text})
    outcome = ports.consolidation(ScriptedModel(TimeoutError("slow"))).process_batch(ports.queued())
    assert outcome.failures  # retried by SQS: its payload is read again
    model = ScriptedModel("Has an address.")
    condense(ports, model)
    assert ports.reads().get_job(T, job.job_id).status == "completed"
    assert "[EMAIL_1]" in model.prompts[0] and "a@b.co" not in model.prompts[0]


def test_a_replaced_summary_that_masking_makes_too_long_is_refused(ports):
    edits = ports.edits(max_words=5)  # at most 60 characters
    summary = "Mail a@b.co " + "y" * 48  # 60 characters as sent, 63 once masked
    with pytest.raises(LimitExceeded, match="once its personal data is masked"):
        edits.put_memory(T, U, summary, expected_version=0)
    assert ports.reads().read_memory(T, U).body.memory is None


def test_masking_a_masked_text_changes_nothing(ports):
    assert ports.masker is not None
    scope = UserScope(T, U, 0)
    once = ports.masker.mask_texts(scope, [f"{EMAIL}, {PHONE}, card {CARD}"])
    assert ports.masker.mask_texts(scope, once) == once == ["[EMAIL_1], [PHONE_1], card [CARD_1]"]


def test_numbering_fails_once_the_user_is_forgotten(ports):
    assert ports.masker is not None
    ports.edits().delete_memory(T, U)
    with pytest.raises(ConditionFailed):
        ports.masker.mask_texts(UserScope(T, U, 0), [EMAIL])
    assert ports.masker.mask_texts(UserScope(T, U, 1), [EMAIL]) == ["[EMAIL_1]"]


def test_without_masking_nothing_changes():
    ports = Ports()
    ingest(ports, {"text": f"Mail {EMAIL}."})
    model = ScriptedModel(reply=echo_summary)
    condense(ports, model)
    assert EMAIL in model.prompts[0]


def test_a_turn_sent_again_leaves_no_original_in_the_archive(ports):
    ingest(ports, {"id": "t1", "text": f"Mail {EMAIL}."})
    condense(ports, ScriptedModel(reply=echo_summary))
    ingest(ports, {"id": "t1", "text": f"Mail {EMAIL}."}, {"id": "t2", "text": "New turn."})  # t1 again
    assert EMAIL not in json.dumps(ports.archive.raw)
    condense(ports, ScriptedModel(reply=echo_summary))
    assert ports.raw_payloads() == 0


class CountingDetector:
    """The pattern detector, counting the texts it is asked about (with Comprehend, paid calls)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._detector = PatternDetector()

    def detect(self, text: str) -> list[PiiSpan]:
        self.texts.append(text)
        return self._detector.detect(text)


def test_a_backlog_condensed_in_several_prompts_masks_each_item_once(ports):
    detector = CountingDetector()
    ports.masker = Masker(detector, ports.placeholders)
    for index in range(8):
        ingest(ports, {"id": f"t{index}", "text": f"Item {index}: write to {EMAIL}. " + "x" * 30_000})
    model = ScriptedModel(reply=echo_summary)
    ports.consolidation(model, prompt_max_chars=100_000).process_batch(ports.queued())
    assert len(model.prompts) > 1  # the backlog took several prompts, each reading the items left
    assert {job.status for job in ports.jobs.list_user_jobs(T, U)} == {"completed"}
    assert len(detector.texts) == 8 == len(set(detector.texts))  # each item's text looked at once
    assert not any(EMAIL in prompt for prompt in model.prompts)
