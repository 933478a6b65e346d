"""The domain's promises under races and outages, on the in-memory fakes (no moto, no network).

Each race is staged with a fake's hook: the concurrent writer runs exactly between the read and
the conditional write, where the naive read → LLM → write design would lose an update.
"""

import pytest

from hippocampus.adapters.llm.offline import OfflineModel
from hippocampus.contracts.errors import DependencyUnavailable, VersionConflict
from hippocampus.contracts.models import IngestRequest
from hippocampus.contracts.prompt_format import count_words
from tests.support.fakes import Outage, Ports, ScriptedModel

T, U = "acme", "alice"


def ingest(ports: Ports, *items: dict, request_id: str = "r1"):
    return ports.ingest().ingest(T, U, IngestRequest.model_validate({"items": list(items)}), request_id)


def turn(item_id: str, text: str) -> dict:
    return {"id": item_id, "user_assistant_pairs": [{"user": text, "assistant": "Noted."}]}


@pytest.fixture
def ports() -> Ports:
    return Ports()


def test_a_put_during_condensation_is_kept_and_the_item_applied_on_top(ports):
    model = OfflineModel(max_words=50)
    job = ingest(ports, turn("t1", "I sell handmade candles.")).jobs[0]
    edits = ports.edits()
    ports.store.before_write = lambda: edits.put_memory(T, U, "Alice lives in Lisbon.", 0)

    ports.consolidation(model).process_batch(ports.queued())

    body = ports.reads().get_memory(T, U)
    assert body.version == 2
    assert "Lisbon" in (body.memory or "") and "candles" in (body.memory or "")
    assert ports.jobs.jobs[job.job_id].memory_version == 2


def test_a_stale_put_is_a_conflict_and_changes_nothing(ports):
    edits = ports.edits()
    edits.put_memory(T, U, "Alice sells candles.", 0)
    with pytest.raises(VersionConflict):
        edits.put_memory(T, U, "Alice sells soap.", 0)
    assert ports.reads().get_memory(T, U).memory == "Alice sells candles."


def test_a_delete_during_condensation_wins(ports):
    job = ingest(ports, turn("t1", "I sell handmade candles.")).jobs[0]
    edits = ports.edits()
    ports.store.before_write = lambda: edits.delete_memory(T, U)

    failures = (
        ports.consolidation(ScriptedModel("Alice sells candles.")).process_batch(ports.queued()).failures
    )

    assert failures == {}
    assert ports.jobs.status(job.job_id) == "skipped"
    assert ports.reads().get_memory(T, U).memory is None
    assert ports.archive.history_count() == 0 and ports.archive.raw == {}


def test_a_redelivered_message_makes_no_second_llm_call(ports):
    ingest(ports, turn("t1", "I sell handmade candles."))
    model = ScriptedModel("Alice sells candles.")
    consolidation = ports.consolidation(model)
    consolidation.process_batch(ports.queued())
    consolidation.process_batch(ports.queued(receive_count=2))
    assert model.calls == 1
    assert ports.reads().get_memory(T, U).version == 1


def test_one_llm_call_per_user_per_batch_in_arrival_order(ports):
    for n in range(3):
        ingest(ports, turn(f"t{n}", f"Fact number {n}."), request_id=f"r{n}")
    model = ScriptedModel("Alice has three facts.")
    ports.consolidation(model).process_batch(ports.queued())
    assert model.calls == 1
    prompt = model.prompts[0]
    assert prompt.index("Fact number 0") < prompt.index("Fact number 1") < prompt.index("Fact number 2")


def test_the_summary_never_exceeds_the_budget(ports):
    rambling = " ".join(["word"] * 40) + "."
    model = ScriptedModel(rambling, rambling)
    ingest(ports, turn("t1", "I sell handmade candles."))
    ports.consolidation(model, max_words=10).process_batch(ports.queued())
    body = ports.reads().get_memory(T, U)
    assert model.calls == 2  # one firmer retry, then the cut
    assert body.word_count == count_words(body.memory) <= 10


def test_a_failing_llm_keeps_the_job_queued_until_the_last_attempt(ports):
    job = ingest(ports, turn("t1", "I sell handmade candles.")).jobs[0]
    consolidation = ports.consolidation(ScriptedModel(Outage("LLM down")), max_receive_count=2)
    assert set(consolidation.process_batch(ports.queued(receive_count=1)).failures) == {"m0"}
    assert ports.jobs.status(job.job_id) == "queued"
    consolidation.process_batch(ports.queued(receive_count=2))
    assert ports.jobs.status(job.job_id) == "failed"
    assert ports.reads().get_memory(T, U).memory is None


def test_a_failure_mid_request_leaves_no_orphan_queued_job(ports):
    ports.store.fail_next_fact = Outage("throttled")
    items = [turn("t1", "I sell handmade candles."), {"id": "f1", "text": "Likes tea.", "infer": False}]
    with pytest.raises(Outage):
        ingest(ports, *items)
    assert ports.queue.messages == [] and ports.raw_payloads() == 0
    assert all(job.status == "failed" for job in ports.jobs.jobs.values())
    retry = ingest(ports, *items, request_id="r2")
    assert [job.status for job in retry.jobs] == ["queued", "completed"]
    assert len(ports.queue.messages) == 1


def test_a_queue_outage_fails_the_request_and_the_jobs_say_failed(ports):
    ports.queue.fail_next = Outage("SQS down")
    with pytest.raises(DependencyUnavailable):
        ingest(ports, turn("t1", "I sell handmade candles."))
    assert [job.status for job in ports.jobs.jobs.values()] == ["failed"]
    retry = ingest(ports, turn("t1", "I sell handmade candles."), request_id="r2")
    assert retry.jobs[0].status == "queued" and len(ports.queue.messages) == 1


def test_a_fact_sent_while_the_user_is_deleted_is_applied_after_the_delete(ports):
    """The request read the user before the delete and writes after it: nothing of the old life
    is written, and the fact lands in the new one, with a job that can be read."""
    edits = ports.edits()
    ports.store.before_fact = lambda: edits.delete_memory(T, U)
    job = ingest(ports, {"id": "f1", "text": "Likes tea.", "infer": False}).jobs[0]
    assert job.status == "completed"
    assert [fact.text for fact in ports.reads().get_memory(T, U).facts] == ["Likes tea."]
    assert ports.reads().get_job(T, job.job_id) == job
    assert ports.store.read_generation(T, U) == 1


def test_a_history_copy_landing_after_a_delete_is_erased(ports):
    edits = ports.edits()
    ports.archive.before_history = lambda: edits.delete_memory(T, U)
    edits.put_memory(T, U, "Alice sells candles.", 0)
    assert ports.archive.history_count() == 0


def test_a_duplicate_turn_returns_the_first_job_and_queues_nothing(ports):
    first = ingest(ports, turn("t1", "I sell handmade candles.")).jobs[0]
    again = ingest(ports, turn("t1", "I sell handmade candles."), request_id="r2").jobs[0]
    assert again.job_id == first.job_id
    assert len(ports.queue.messages) == 1
    assert ports.raw_payloads() == 1  # the duplicate's payload is not kept


def test_one_trace_from_the_request_through_the_queue_to_the_condenser(ports):
    ingest(ports, turn("t1", "I sell handmade candles."))
    assert ports.tracing.names() == ["dynamodb.read_memory", "s3.put_raw", "dynamodb.create_job", "sqs.send"]
    assert all(annotations["tenant_id"] == T for _, annotations in ports.tracing.spans)
    assert [header for _, header in ports.queue.messages] == [ports.tracing.header]

    ports.consolidation(ScriptedModel("Alice sells candles.")).process_batch(ports.queued())
    assert ports.tracing.continued == [ports.tracing.header]
    assert {"llm.condense", "dynamodb.write_memory", "s3.put_history"} <= set(ports.tracing.names())


def test_a_delete_between_the_read_and_the_payload_keeps_nothing_of_the_old_life(ports):
    """The request read the user before the delete; its payload lands after the delete's S3 sweep.
    Its job cannot be written in the old generation, so the request is applied after the delete."""
    edits = ports.edits()
    ports.archive.before_raw = lambda: edits.delete_memory(T, U)
    job = ingest(ports, turn("t1", "I sell handmade candles.")).jobs[0]
    assert not [key for key in ports.archive.raw if "/g000000/" in key]  # the late payload is erased
    assert [message.generation for message, _ in ports.queue.messages] == [1]
    model = ScriptedModel("Alice sells candles.")
    ports.consolidation(model).process_batch(ports.queued())
    assert ports.jobs.status(job.job_id) == "completed"
    assert ports.reads().get_memory(T, U).memory == "Alice sells candles."


def test_items_sent_after_a_delete_keep_their_payload_whatever_the_sweep_finds(ports):
    edits = ports.edits()
    edits.delete_memory(T, U)
    job = ingest(ports, turn("t1", "I sell handmade candles.")).jobs[0]
    ports.archive.erase_user(T, U, generation=1)  # a sweep of the same delete, running late
    ports.consolidation(ScriptedModel("Alice sells candles.")).process_batch(ports.queued())
    assert ports.jobs.status(job.job_id) == "completed"
    assert ports.reads().get_memory(T, U).memory == "Alice sells candles."
