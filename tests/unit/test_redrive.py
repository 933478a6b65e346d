"""The redrive of the dead-letter queue, on fakes (docs/operations.md "The dead-letter queue"): each
user's messages go back in order, batch after batch; their failed jobs are queued again; the
condenser's direct action answers with counts, or with the error envelope."""

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from hippocampus.api.queue_batch import condenser_function
from hippocampus.contracts.models import CondenseMessage, IngestRequest, JobError
from hippocampus.contracts.recall import IndexMessage
from hippocampus.domain.condense.queued import QueuedItem
from tests.support.fakes import Ports, ScriptedModel, group_of
from tests.support.lambda_harness import Context

T = "acme"
LLM_DOWN = JobError(code="llm_or_dependency_error", message="APITimeoutError: condensation failed")


@pytest.fixture
def ports() -> Ports:
    return Ports()


def dead_letter(ports: Ports, user: str, *texts: str, status: str = "failed") -> list[CondenseMessage]:
    """Turns of `user` whose messages reached the DLQ, their jobs `status` (failed: with LLM_DOWN)."""
    items = [
        {"id": f"{user}-{len(ports.archive.raw)}-{index}", "text": text} for index, text in enumerate(texts)
    ]
    ports.ingest().ingest(
        T, user, IngestRequest.model_validate({"items": items}), f"r{len(ports.archive.raw)}"
    )
    messages = [message for message, _ in ports.queue.messages]
    ports.queue.messages.clear()
    for message in messages:
        error = LLM_DOWN if status == "failed" else None
        ports.jobs.set_job_status(T, [message.job_id], status, error)
    return messages


def condenser(ports: Ports, with_redrive: bool = True) -> Any:
    return condenser_function(
        lambda: ports.consolidation(ScriptedModel("never called")),
        ports.reconciler,
        ports.indexer,
        ports.redrive if with_redrive else None,
    )


def by_group(messages: list[Any]) -> dict[tuple[str, ...], list[Any]]:
    groups: dict[tuple[str, ...], list[Any]] = {}
    for message in messages:
        groups.setdefault(group_of(message), []).append(message)
    return groups


def test_each_users_messages_go_back_in_order_across_batches(ports):
    alice = dead_letter(ports, "alice", *(f"Alice turn {n}." for n in range(13)))
    bob = dead_letter(ports, "bob", *(f"Bob turn {n}." for n in range(4)))
    # Dead-lettered interleaved, as an outage leaves them.
    ports.dead_letters.messages = [*alice[:3], *bob[:2], *alice[3:], *bob[2:]]
    result = ports.redrive().redrive(100)
    assert (result.moved, result.jobs_requeued, result.remaining) == (17, 17, 0)
    assert len(ports.dead_letters.move_limits) >= 2  # more than one receive
    assert by_group(ports.dead_letters.moved) == {(T, "alice"): alice, (T, "bob"): bob}


def test_failed_jobs_are_queued_again_with_their_error_and_settled_ones_stay(ports):
    failed = dead_letter(ports, "alice", "I sell candles.", "On Shopify.")
    completed = dead_letter(ports, "alice", "Prefers email.", status="completed")
    skipped = dead_letter(ports, "alice", "Old life.", status="skipped")
    processing = dead_letter(ports, "alice", "Still held.", status="processing")
    ports.dead_letters.messages = [*failed, *completed, *skipped, *processing]
    result = ports.redrive().redrive(100)
    assert (result.moved, result.jobs_requeued) == (5, 2)
    for message in failed:
        job = ports.reads().get_job(T, message.job_id)
        assert (job.status, job.error) == ("queued", LLM_DOWN)  # a retry after a failure keeps it
    statuses = [ports.jobs.status(m.job_id) for m in (*completed, *skipped, *processing)]
    assert statuses == ["completed", "skipped", "processing"]


def test_the_limit_is_kept_and_the_rest_stays_in_the_dlq(ports):
    ports.dead_letters.messages = list(dead_letter(ports, "alice", *(f"Turn {n}." for n in range(25))))
    result = ports.redrive().redrive(12)
    assert (result.moved, result.jobs_requeued, result.remaining) == (12, 12, 13)
    assert ports.dead_letters.move_limits == [12, 2]
    rest = ports.redrive().redrive(100)
    assert (rest.moved, rest.remaining) == (13, 0)


def test_an_index_request_is_moved_without_a_job(ports):
    (turn,) = dead_letter(ports, "alice", "I sell candles.")
    index = IndexMessage(tenant_id=T, user_id="alice", requested_at=datetime.now(UTC))
    ports.dead_letters.messages = [index, turn]
    result = ports.redrive().redrive(100)
    assert (result.moved, result.jobs_requeued) == (2, 1)
    assert ports.dead_letters.moved == [index, turn]


def test_the_condenser_then_completes_the_redriven_jobs(ports):
    ports.dead_letters.messages = list(dead_letter(ports, "alice", "I sell candles.", "On Shopify."))
    ports.redrive().redrive(100)
    items = [QueuedItem(f"m{n}", message, 1) for n, message in enumerate(ports.dead_letters.moved)]
    assert (
        ports.consolidation(ScriptedModel("Alice sells candles on Shopify.")).process_batch(items).failures
        == {}
    )
    for item in items:
        job = ports.reads().get_job(T, item.message.job_id)
        assert (job.status, job.error, job.memory_version) == ("completed", None, 1)


def test_a_refused_message_stays_and_the_answer_is_the_503_envelope(ports):
    messages = dead_letter(ports, "alice", *(f"Turn {n}." for n in range(4)))
    ports.dead_letters.messages = list(messages)
    ports.dead_letters.refuse_next = 1
    answer = condenser(ports)({"action": "redrive_dead_letters"}, Context())
    assert answer["error"]["status"] == 503 and answer["error"]["code"] == "dependency_unavailable"
    assert ports.dead_letters.messages == messages[3:]  # the refused one, for the next redrive
    assert [ports.jobs.status(m.job_id) for m in messages] == ["queued", "queued", "queued", "failed"]


def test_no_batch_is_started_without_time_left(ports):
    ports.dead_letters.messages = list(dead_letter(ports, "alice", "I sell candles."))
    result = ports.redrive().redrive(100, remaining_ms=lambda: 5_000)
    assert (result.moved, result.remaining) == (0, 1)


def test_the_direct_action_answers_counts_and_logs_no_body(ports, capsys, caplog, monkeypatch):
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    messages = dead_letter(ports, "alice", "I sell candles.", "On Shopify.")
    ports.dead_letters.messages = list(messages)
    capsys.readouterr()
    answer = condenser(ports)({"action": "redrive_dead_letters", "limit": 1000}, Context())
    assert answer == {"moved": 2, "jobs_requeued": 2, "remaining": 0}
    (logged,) = [record for record in caplog.records if record.getMessage() == "dead letters redriven"]
    assert (logged.moved, logged.jobs_requeued) == (2, 2)  # type: ignore[attr-defined]
    output = capsys.readouterr().out
    (blob,) = [json.loads(line) for line in output.splitlines() if line.startswith("{") and '"_aws"' in line]
    assert (blob["DeadLettersRedriven"], blob["RedrivenJobsRequeued"]) == ([2.0], [2.0])
    logged_text = output + "".join(str(record.__dict__) for record in caplog.records)
    for message in messages:  # the messages' ids and pointers never reach a log line
        assert message.job_id not in logged_text and message.raw_key not in logged_text


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"action": "redrive_dead_letters", "limit": 0}, "limit"),
        ({"action": "redrive_dead_letters", "limit": 1001}, "limit"),
        ({"action": "redrive_dead_letters", "limit": "5"}, "limit"),
        ({"action": "redrive_dead_letters", "limit": True}, "limit"),
        ({"action": "redrive_dead_letters", "limit": 5.0}, "limit"),
        ({"action": "redrive_dead_letters", "tenant_id": "acme"}, "tenant_id"),
        ({"limit": 5}, "action"),
        ({"action": "get_memory", "tenant_id": "acme", "user_id": "alice"}, "action"),
        ({"action": 7}, "action"),
        (["redrive_dead_letters"], "payload"),
        ("redrive_dead_letters", "payload"),
        (None, "payload"),
    ],
)
def test_a_bad_payload_is_the_422_envelope_naming_the_field(ports, payload, field):
    ports.dead_letters.messages = list(dead_letter(ports, "alice", "I sell candles."))
    answer = condenser(ports)(payload, Context())
    assert answer["error"]["status"] == 422 and answer["error"]["code"] == "validation_error"
    assert [detail["field"] for detail in answer["error"]["details"]] == [field]
    assert ports.dead_letters.moved == []


def test_a_lone_surrogate_is_malformed_json(ports):
    answer = condenser(ports)({"action": "redrive_dead_letters", "note\ud800": 1}, Context())
    assert answer["error"]["status"] == 400 and answer["error"]["code"] == "malformed_json"


def test_a_condenser_wired_without_the_redrive_refuses_the_action(ports):
    answer = condenser(ports, with_redrive=False)({"action": "redrive_dead_letters"}, Context())
    assert answer["error"]["status"] == 422 and answer["error"]["details"][0]["field"] == "action"


def test_batches_and_the_schedule_are_still_routed_as_before(ports):
    (message,) = dead_letter(ports, "alice", "I sell candles.", status="processing")
    ports.dead_letters.messages = [message]
    handler = condenser(ports)
    scheduled = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
    assert handler(scheduled, Context()) == {"batchItemFailures": []}
    assert ports.jobs.status(message.job_id) == "failed" and ports.dead_letters.moved == []
    assert handler({"Records": []}, Context()) == {"batchItemFailures": []}
