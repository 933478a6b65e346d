"""Per-tenant token budgets (docs/architecture.md "Token budgets"): over its budget, a tenant's turns
are kept as episodes and parked with their jobs `deferred`, never dropped; they are condensed after
the budget resets, oldest first, in each user's order; no other tenant waits."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hippocampus.api.queue_batch import condenser_function
from hippocampus.contracts.budgets import RELEASED_PER_PASS, RESEND_AFTER_S, DailyUsage, TokenBudgets
from hippocampus.contracts.models import IngestRequest
from tests.support.fakes import Ports, ScriptedModel
from tests.support.lambda_harness import Context

T, U = "acme", "alice"
DAY = datetime(2026, 12, 5, 15, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = DAY

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ports(clock) -> Ports:
    return Ports(budgets=TokenBudgets({T: 1_000}), clock=clock)


def ingest(ports: Ports, text: str, tenant: str = T, user: str = U) -> Any:
    request = IngestRequest.model_validate({"items": [{"text": text}]})
    return ports.ingest().ingest(tenant, user, request, f"r{len(ports.archive.raw)}").jobs[0]


def condense(ports: Ports, model: ScriptedModel) -> dict[str, Exception]:
    outcome = ports.consolidation(model).process_batch(ports.queued())
    ports.queue.messages.clear()
    return outcome.failures


def spend(ports: Ports, tenant: str = T, tokens: int = 1_000) -> None:
    ports.usage.add_usage(tenant, DAY.date(), DailyUsage(calls=3, prompt_tokens=tokens, completion_tokens=0))


def status(ports: Ports, job: Any) -> tuple[str, str | None]:
    found = ports.reads().get_job(job.tenant_id, job.job_id)
    return found.status, found.error.code if found.error else None


def test_over_its_budget_a_tenant_s_turns_are_parked_as_episodes_and_other_tenants_go_on(ports):
    spend(ports)
    parked = ingest(ports, "I moved to Berlin.")
    other = ingest(ports, "I sell candles.", tenant="globex")
    model = ScriptedModel("Sells candles.")
    assert condense(ports, model) == {}  # every message leaves the queue
    assert model.calls == 1  # the other tenant's turn only
    assert status(ports, parked) == ("deferred", "token_budget_exhausted")
    assert status(ports, other)[0] == "completed"
    episodes = ports.lists().list_episodes(T, U, 10, None).episodes
    assert [episode.text for episode in episodes] == ["I moved to Berlin."]  # recall finds it at once
    assert ports.reads().read_memory(T, U).body.memory is None
    assert ports.usage_service().usage(T).deferred_jobs == 1


def test_parked_turns_are_condensed_after_the_reset_oldest_first(ports, clock):
    spend(ports)
    first, second = ingest(ports, "I moved to Berlin."), ingest(ports, "I adopted a cat named Zanzibar.")
    condense(ports, ScriptedModel("unused"))
    assert ports.release().release() == 0  # still today: nothing goes back
    clock.now = DAY + timedelta(days=1)
    assert ports.release().release() == 2
    assert [message.job_id for message, _ in ports.queue.messages] == [first.job_id, second.job_id]
    assert status(ports, first) == ("queued", None)
    model = ScriptedModel("Lives in Berlin; has Zanzibar.")
    condense(ports, model)
    assert model.calls == 1 and model.prompts[0].index("Berlin") < model.prompts[0].index("Zanzibar")
    assert status(ports, first)[0] == status(ports, second)[0] == "completed"
    assert ports.deferrals.count(T) == 0
    # Counted against the new day.
    assert ports.usage_service().usage(T).calls == 1


def test_a_turn_sent_after_a_parked_one_waits_behind_it_even_within_the_budget(ports, clock):
    spend(ports)
    parked = ingest(ports, "I moved to Berlin.")
    condense(ports, ScriptedModel("unused"))
    clock.now = DAY + timedelta(days=1)  # the budget has reset, the pass has not run yet
    later = ingest(ports, "Actually I moved on to Paris.")
    model = ScriptedModel("unused")
    condense(ports, model)
    assert model.calls == 0 and status(ports, later)[0] == "deferred"
    ports.release().release()
    model = ScriptedModel("Lives in Paris.")
    condense(ports, model)
    assert model.prompts[0].index("Berlin") < model.prompts[0].index("Paris")
    assert status(ports, parked)[0] == status(ports, later)[0] == "completed"


def test_a_pass_sends_back_a_bounded_step_oldest_first(ports, clock):
    spend(ports)
    for n in range(RELEASED_PER_PASS + 5):
        ingest(ports, f"Note number {n}.")
    condense(ports, ScriptedModel("unused"))
    clock.now = DAY + timedelta(days=1)
    assert ports.release().release() == RELEASED_PER_PASS
    assert ports.release().release() == 5  # the rest, at the next pass
    condense(ports, ScriptedModel("Many notes."))
    assert {job.status for job in ports.jobs.list_user_jobs(T, U)} == {"completed"}
    assert ports.deferrals.count(T) == 0


def test_a_turn_whose_message_was_lost_is_sent_again_and_applied_once(ports, clock):
    spend(ports)
    job = ingest(ports, "I moved to Berlin.")
    condense(ports, ScriptedModel("unused"))
    clock.now = DAY + timedelta(days=1)
    ports.queue.fail_next = ConnectionError("the pass died")
    assert ports.release().release() == 0  # marked sent, never sent (the tenant's failure is logged)
    assert status(ports, job) == ("queued", None) and ports.queue.messages == []
    assert ports.release().release() == 0  # not yet given up on
    clock.now += timedelta(seconds=RESEND_AFTER_S + 1)
    assert ports.release().release() == 1
    ports.queue.messages.append(ports.queue.messages[0])  # and suppose it arrives twice
    model = ScriptedModel("Lives in Berlin.")
    condense(ports, model)
    assert model.calls == 1 and status(ports, job)[0] == "completed"
    assert ports.deferrals.count(T) == 0


def test_a_turn_sent_back_into_a_spent_budget_is_parked_again_and_sent_again_later(ports, clock):
    spend(ports)
    job = ingest(ports, "I moved to Berlin.")
    condense(ports, ScriptedModel("unused"))
    clock.now = DAY + timedelta(days=1)
    ports.release().release()
    ports.usage.add_usage(T, clock.now.date(), DailyUsage(1, 1_000, 0))  # spent again before it ran
    condense(ports, ScriptedModel("unused"))
    assert status(ports, job) == ("deferred", "token_budget_exhausted")
    assert ports.release().release() == 0  # the same day: it waits
    clock.now = DAY + timedelta(days=2)
    assert ports.release().release() == 1
    condense(ports, ScriptedModel("Lives in Berlin."))
    assert status(ports, job)[0] == "completed"


def test_forgetting_a_user_erases_its_parked_turns_and_the_receipt_counts_them(ports):
    spend(ports)
    ingest(ports, "I moved to Berlin.")
    condense(ports, ScriptedModel("unused"))
    receipt = ports.edits().delete_memory(T, U)
    # Its job is answered as the other jobs a delete caught: skipped, user_deleted.
    assert (receipt.erased.queue.messages_skipped, receipt.erased.queue.deferred_turns) == (1, 1)
    assert ports.deferrals.count(T) == 0
    assert [
        (job.status, job.error.code if job.error else None) for job in ports.jobs.list_user_jobs(T, U)
    ] == [("skipped", "user_deleted")]
    assert ports.release().release() == 0


def test_the_usage_says_the_day_s_calls_and_tokens_against_the_budget(ports):
    ingest(ports, "I sell candles.")
    condense(ports, ScriptedModel("Sells candles."))
    usage = ports.usage_service().usage(T)
    assert usage.calls == 1 and usage.tokens == usage.prompt_tokens + usage.completion_tokens > 0
    assert usage.budget == 1_000 and usage.remaining == 1_000 - usage.tokens
    assert usage.day == DAY.date() and usage.resets_at == datetime(2026, 12, 6, tzinfo=UTC)
    assert ports.usage_service().usage("globex").budget is None


def test_without_a_budget_nothing_waits():
    ports = Ports()
    job = ingest(ports, "I sell candles.")
    spend(ports, tokens=10**9)
    condense(ports, ScriptedModel("Sells candles."))
    assert status(ports, job)[0] == "completed"


@pytest.mark.parametrize(
    ("text", "budgets"),
    [
        ("200000", TokenBudgets(default=200_000)),
        ('{"acme": 5000, "*": 100}', TokenBudgets({"acme": 5000}, 100)),
        (" ", TokenBudgets()),
    ],
)
def test_budgets_are_a_number_or_a_json_object(text, budgets):
    assert TokenBudgets.parse(text) == budgets


@pytest.mark.parametrize("text", ["0", "1.5", '{"acme": "5000"}', '{"acme": true}', "[1]", "lots"])
def test_a_bad_budget_is_refused(text):
    with pytest.raises(ValueError, match="whole number"):
        TokenBudgets.parse(text)


def test_the_scheduled_pass_releases_parked_turns_even_when_its_dlq_pass_fails(ports, clock):
    spend(ports)
    ingest(ports, "I moved to Berlin.")
    condense(ports, ScriptedModel("unused"))
    clock.now = DAY + timedelta(days=1)

    def broken() -> Any:
        raise ConnectionError("the DLQ is unreachable")

    handler = condenser_function(
        lambda: ports.consolidation(ScriptedModel("x")), broken, ports.indexer, release=ports.release
    )
    with pytest.raises(ConnectionError):  # the invocation fails, for EventBridge to retry
        handler({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}, Context())
    assert len(ports.queue.messages) == 1  # released all the same
