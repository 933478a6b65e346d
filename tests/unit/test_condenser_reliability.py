"""Accepted items are never lost by the condenser (issue 8), on the in-memory fakes.

Deferred users, empty answers, summaries of a few huge "words", and invocations that run out of
time: each ends with the memory intact and every job either applied or final with a reason.
"""

import dataclasses
import threading
import time

import pytest

from hippocampus.adapters.llm.offline import OfflineModel
from hippocampus.contracts.errors import ConfigurationError, LimitExceeded
from hippocampus.contracts.models import IngestRequest
from hippocampus.contracts.prompt_format import NOTHING_TO_KEEP, count_words
from hippocampus.domain.budget import fit_budget, max_memory_chars
from hippocampus.domain.condense.queued import QueuedItem
from hippocampus.settings import load_settings
from tests.support.fakes import Outage, Ports, ScriptedModel

T = "acme"
LLM_TIMEOUT_S = 20.0  # the default: a user's worst case is 4 * 20 + 5 = 85 s


class InvocationClock:
    """The time left in the invocation (`remaining_ms`), spent by the test's model."""

    def __init__(self, remaining_s: float) -> None:
        self.remaining_s = remaining_s

    def __call__(self) -> int:
        return int(self.remaining_s * 1000)

    def spend(self, seconds: float) -> None:
        self.remaining_s -= seconds


@pytest.fixture
def ports() -> Ports:
    return Ports()


def ingest(ports: Ports, user: str, text: str, item_id: str = "t1") -> str:
    request = IngestRequest.model_validate({"items": [{"id": item_id, "text": text}]})
    return ports.ingest().ingest(T, user, request, f"r-{user}-{len(ports.queue.messages)}").jobs[0].job_id


def received(ports: Ports, counts: dict[str, int]) -> list[QueuedItem]:
    """The queued messages in arrival order, each received as often as `counts` says for its user."""
    return [
        dataclasses.replace(item, receive_count=counts[item.message.user_id])
        for item in ports.queued()
        if item.message.user_id in counts
    ]


def status(ports: Ports, job_id: str) -> tuple[str, str | None]:
    job = ports.jobs.jobs[job_id]
    return job.status, job.error.code if job.error else None


# --- 1. deferred users ------------------------------------------------------------------------


def test_the_user_closest_to_the_dlq_runs_first(ports):
    alice = ingest(ports, "alice", "Alice sells candles.")
    bob = ingest(ports, "bob", "Bob repairs bikes.")
    clock = InvocationClock(30)  # one user's call fits, a second user's worst case does not
    service = ports.consolidation(ScriptedModel("A durable fact."), llm_timeout_s=LLM_TIMEOUT_S)

    failures = service.process_batch(received(ports, {"alice": 1, "bob": 5}), clock).failures

    assert status(ports, bob) == ("completed", None)  # on its last receive: it ran first
    assert status(ports, alice) == ("queued", None) and set(failures) == {"m0"}  # back next delivery


def test_a_record_deferred_on_its_last_receive_fails_and_sending_it_again_queues_it(ports):
    alice = ingest(ports, "alice", "Alice sells candles.")
    bob = ingest(ports, "bob", "Bob repairs bikes.")
    clock = InvocationClock(60)
    model = ScriptedModel(reply=lambda prompt: clock.spend(40) or "A durable fact.")
    service = ports.consolidation(model, llm_timeout_s=LLM_TIMEOUT_S)

    service.process_batch(received(ports, {"alice": 5, "bob": 5}), clock)

    assert status(ports, alice) == ("completed", None)
    assert status(ports, bob) == ("failed", "condensation_timeout")  # its message leaves for the DLQ
    sent = len(ports.queue.messages)
    assert ports.jobs.jobs[ingest(ports, "bob", "Bob repairs bikes.")].status == "queued"
    assert len(ports.queue.messages) == sent + 1  # queued again, under the same job id


def test_a_user_on_its_last_receive_runs_on_less_than_its_worst_case(ports):
    alice = ingest(ports, "alice", "Alice sells candles.")
    bob = ingest(ports, "bob", "Bob repairs bikes.")
    clock = InvocationClock(100)
    model = ScriptedModel(reply=lambda prompt: clock.spend(45) or "A durable fact.")
    service = ports.consolidation(model, llm_timeout_s=LLM_TIMEOUT_S)

    assert service.process_batch(received(ports, {"alice": 5, "bob": 5}), clock).failures == {}

    assert status(ports, alice) == status(ports, bob) == ("completed", None)
    assert model.timeouts == [95, 50]  # the second call is capped by what the first one left


def test_every_llm_call_ends_before_the_io_margin(ports):
    ingest(ports, "alice", "Alice sells candles.")
    model = ScriptedModel(" ".join(["word"] * 80) + ".", "Alice sells candles.")
    ports.consolidation(model).process_batch(ports.queued(), InvocationClock(50))
    assert model.timeouts == [45, 45]  # the first call and the budget retry: 50 s left less 5 s


def test_the_budget_retry_is_skipped_without_time_for_it_and_the_answer_cut(ports):
    job = ingest(ports, "alice", "Alice sells candles.")
    clock = InvocationClock(110)
    rambling = "Alice sells candles. " * 30
    model = ScriptedModel(reply=lambda prompt: clock.spend(90) or rambling)
    ports.consolidation(model, llm_timeout_s=LLM_TIMEOUT_S).process_batch(ports.queued(), clock)
    body = ports.reads().get_memory(T, "alice")
    assert model.calls == 1 and status(ports, job) == ("completed", None)
    assert 0 < body.word_count <= 50


def test_a_failing_budget_retry_falls_back_to_the_cut_first_answer(ports):
    job = ingest(ports, "alice", "Alice sells candles.")
    model = ScriptedModel("Alice sells candles. " * 30, Outage("LLM down"))
    assert ports.consolidation(model).process_batch(ports.queued()).failures == {}
    assert model.calls == 2 and status(ports, job) == ("completed", None)
    assert ports.reads().get_memory(T, "alice").word_count <= 50


def test_an_llm_timeout_the_condenser_cannot_fit_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv("MEMORY_LLM_TIMEOUT_S", "30")
    with pytest.raises(ConfigurationError, match=r"MEMORY_LLM_TIMEOUT_S: .*at most 28\.75"):
        load_settings()
    monkeypatch.setenv("MEMORY_LLM_TIMEOUT_S", "28.75")
    assert load_settings().llm_timeout_s == 28.75


# --- 2. empty answers -------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["", "  \n", "<<<OLD_MEMORY>>>\n<<<END_OLD_MEMORY>>>", "```\n```"])
def test_an_empty_answer_keeps_the_memory_and_the_item_until_the_last_attempt(ports, answer):
    ports.edits().put_memory(T, "alice", "Alice sells candles.", 0)
    job = ingest(ports, "alice", "Alice moved to Porto.")
    service = ports.consolidation(ScriptedModel(answer))

    assert set(service.process_batch(ports.queued(receive_count=1)).failures) == {"m0"}
    assert status(ports, job) == ("queued", "empty_llm_answer")
    service.process_batch(ports.queued(receive_count=5))
    assert status(ports, job) == ("failed", "empty_llm_answer")
    body = ports.reads().get_memory(T, "alice")
    assert (body.memory, body.version) == ("Alice sells candles.", 1)


def test_an_empty_answer_on_an_empty_memory_is_retried_too(ports):
    job = ingest(ports, "alice", "Alice moved to Porto.")
    ports.consolidation(ScriptedModel("")).process_batch(ports.queued())
    assert status(ports, job) == ("queued", "empty_llm_answer")


def test_nothing_to_keep_completes_the_job_at_the_current_version(ports):
    job = ingest(ports, "alice", "Hi, thanks!")
    ports.consolidation(ScriptedModel(NOTHING_TO_KEEP)).process_batch(ports.queued())
    assert status(ports, job) == ("completed", None) and ports.jobs.jobs[job].memory_version == 0
    assert ports.store.writes == 0


def test_the_offline_model_says_nothing_to_keep_for_small_talk_on_an_empty_memory(ports):
    job = ingest(ports, "alice", "Hello! Thanks so much.")
    assert ports.consolidation(OfflineModel(50)).process_batch(ports.queued()).failures == {}
    assert status(ports, job) == ("completed", None)
    assert ports.reads().get_memory(T, "alice").memory is None


# --- 3. the character bound -------------------------------------------------------------------


@pytest.mark.parametrize("word_chars", [5_000, 25_000])
def test_a_summary_of_a_few_huge_words_is_held_to_the_character_bound(ports, word_chars):
    job = ingest(ports, "alice", "Alice sells candles.")
    huge = " ".join(["x" * word_chars] * 20)
    model = ScriptedModel(huge)
    ports.consolidation(model).process_batch(ports.queued())
    body = ports.reads().get_memory(T, "alice")
    assert status(ports, job) == ("completed", None)
    assert 0 < len(body.memory or "") <= max_memory_chars(50)
    assert "600 characters" in model.prompts[1]  # the budget retry named the character limit


def test_the_cut_keeps_whole_sentences_within_the_character_bound():
    long_words = "Alice maintains " + "supercalifragilistic " * 8 + "tooling. "
    text = "Alice sells candles. " + long_words + "She lives in Porto."
    cut, was_cut = fit_budget(text, 10)
    assert was_cut and cut == "Alice sells candles."
    assert len(fit_budget("y" * 1_000, 10)[0]) == max_memory_chars(10)  # one word over the bound
    assert count_words(fit_budget("ab " * 100, 50)[0]) == 50  # short words: the word budget binds


def test_a_put_over_the_character_bound_is_refused_naming_memory(ports):
    with pytest.raises(LimitExceeded) as refused:
        ports.edits().put_memory(T, "alice", " ".join(["y" * 100] * 10), 0)
    assert [detail["field"] for detail in refused.value.details] == ["memory"]
    assert "characters" in str(refused.value)
    assert ports.reads().get_memory(T, "alice").version == 0
    assert ports.edits().put_memory(T, "alice", "z" * max_memory_chars(50), 0).body.version == 1


# --- 4. no job left open when the message leaves ----------------------------------------------


def test_no_job_is_marked_processing_without_time_for_the_llm_call(ports):
    job = ingest(ports, "alice", "Alice sells candles.")
    model = ScriptedModel("Alice sells candles.")
    failures = (
        ports.consolidation(model, llm_timeout_s=LLM_TIMEOUT_S)
        .process_batch(ports.queued(receive_count=5), InvocationClock(22))
        .failures
    )
    assert set(failures) == {"m0"} and model.calls == 0
    assert status(ports, job) == ("failed", "condensation_timeout")


def test_jobs_of_a_last_receive_are_failed_before_a_hung_invocation_times_out(ports):
    job = ingest(ports, "alice", "Alice sells candles.")
    deadline = time.monotonic() + 5.5  # the guard fires 2 s before: 3.5 s from now
    hung, release = threading.Event(), threading.Event()

    def storage_hangs() -> None:  # after the LLM answered, the conditional write stalls
        hung.set()
        release.wait(10)

    ports.store.before_write = storage_hangs
    service = ports.consolidation(ScriptedModel("Alice sells candles."))
    remaining_ms = lambda: int((deadline - time.monotonic()) * 1000)  # noqa: E731
    worker = threading.Thread(
        target=service.process_batch, args=(ports.queued(receive_count=5), remaining_ms)
    )
    worker.start()
    assert hung.wait(5)
    while status(ports, job)[0] == "processing" and time.monotonic() < deadline:
        time.sleep(0.05)
    # Had the invocation been stopped now, the message would be in the DLQ: the job says so.
    assert status(ports, job) == ("failed", "condensation_timeout")

    release.set()  # it finished after all: the write applies the job, which wins
    worker.join(5)
    assert status(ports, job) == ("completed", None)
