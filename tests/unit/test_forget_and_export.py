"""Forgetting a user forgets its jobs and Idempotency-Key records; the export gives back everything
stored (docs/api.md "Forgetting a user", "Export"); no job stays open once its message is in the
dead-letter queue."""

from typing import Any

import pytest

from hippocampus.api.queue_batch import condenser_function
from hippocampus.contracts.errors import NotFound
from hippocampus.contracts.models import IngestRequest, JobError
from tests.support.fakes import Ports, ScriptedModel
from tests.support.lambda_harness import Context

T, U = "acme", "alice"
MEMORY = f"/v1/tenants/{T}/users/{U}/memory"


@pytest.fixture
def ports() -> Ports:
    return Ports()


@pytest.fixture
def call(ports):
    def call(method: str, path: str, body: Any = None, **kwargs: Any) -> tuple[int, Any]:
        status, _, answer = ports.call(method, path, body, **kwargs)
        return status, answer

    return call


def ingest(ports: Ports, *items: dict[str, Any]) -> list[Any]:
    request = IngestRequest.model_validate({"items": list(items)})
    return ports.ingest().ingest(T, U, request, f"r{len(ports.archive.raw)}").jobs


def condense(ports: Ports, answer: str = "Alice sells candles.") -> None:
    ports.consolidation(ScriptedModel(answer)).process_batch(ports.queued())
    ports.queue.messages.clear()


def test_a_delete_erases_finished_jobs_and_keeps_a_job_in_flight_redacted_as_skipped(ports):
    done = ingest(ports, {"id": "t1", "text": "I sell candles."})[0]
    condense(ports)
    fact = ingest(ports, {"id": "f1", "text": "Likes tea.", "infer": False})[0]
    in_flight = ingest(ports, {"id": "t2", "text": "I moved to Paris."})[0]
    ports.edits().delete_memory(T, U)
    for job in (done, fact):
        with pytest.raises(NotFound):
            ports.reads().get_job(T, job.job_id)
    caught = ports.reads().get_job(T, in_flight.job_id)
    assert (caught.status, caught.item_id, caught.memory_version) == ("skipped", None, None)
    assert caught.error is not None and caught.error.code == "user_deleted"
    model = ScriptedModel("Alice moved to Paris.")
    ports.consolidation(model).process_batch(ports.queued())  # the queued message arrives late
    assert model.calls == 0 and ports.reads().get_job(T, in_flight.job_id) == caught


def test_a_replayed_idempotency_key_after_a_delete_is_a_new_request(call, ports):
    body = {"items": [{"id": "t1", "text": "I sell candles."}]}
    key = {"Idempotency-Key": "k-1"}
    status, first = call("POST", MEMORY, body, headers=key)
    assert status == 202 and ports.idempotency[(T, U)]
    assert call("DELETE", MEMORY)[0] == 204
    assert ports.idempotency.get((T, U), {}) == {}  # the record went with the user
    status, replay = call("POST", MEMORY, body, headers=key)
    assert status == 202 and replay != first  # a job of the user's new life
    assert [message.generation for message, _ in ports.queue.messages] == [0, 1]
    condense(ports)
    assert call("GET", f"/v1/tenants/{T}/jobs/{replay['jobs'][0]['job_id']}")[1]["status"] == "completed"


def test_the_export_holds_everything_stored_about_the_user(call, ports):
    call("POST", MEMORY, {"items": [{"id": "t1", "text": "I sell candles."}]})
    condense(ports)
    call("POST", MEMORY, {"items": [{"id": "f1", "text": "Likes tea.", "infer": False}]})
    call("PUT", MEMORY, {"memory": "Alice sells candles in Lyon.", "expected_version": 1})
    status, export = call("GET", MEMORY + "/export")
    assert status == 200 and export["next_cursor"] is None
    assert export["memory"]["memory"] == "Alice sells candles in Lyon."
    assert [fact["text"] for fact in export["memory"]["facts"]] == ["Likes tea."]
    assert [item["text"] for item in export["items"]] == ["I sell candles."]
    assert [version["version"] for version in export["history"]] == [2, 1]
    assert [job["item_id"] for job in export["jobs"]] == ["t1", "f1"]
    assert call("DELETE", MEMORY)[0] == 204
    _, after = call("GET", MEMORY + "/export")
    assert (after["memory"]["memory"], after["memory"]["facts"]) == (None, [])
    assert (after["items"], after["history"], after["jobs"]) == ([], [], [])


def test_a_long_export_comes_in_pages_that_add_up_to_the_whole(ports):
    for index in range(6):
        ingest(ports, {"id": f"t{index}", "text": f"Turn number {index}. " + "words " * 40})
        condense(ports, f"Alice said {index} things.")
    whole = ports.exports().export(T, U)
    assert whole.next_cursor is None and (len(whole.items), len(whole.history), len(whole.jobs)) == (6, 6, 6)
    exports = ports.exports(page_bytes=700)
    pages = [exports.export(T, U)]
    while pages[-1].next_cursor is not None:
        pages.append(exports.export(T, U, pages[-1].next_cursor))
    assert len(pages) > 3 and pages[0].memory == whole.memory
    assert all(page.memory is None for page in pages[1:])
    assert [item for page in pages for item in page.items] == whole.items
    assert [version for page in pages for version in page.history] == whole.history
    assert [job for page in pages for job in page.jobs] == whole.jobs


def test_no_entry_comes_twice_when_history_grows_between_pages(ports):
    for index in range(3):
        ingest(ports, {"id": f"t{index}", "text": f"Turn {index}."})
        condense(ports, f"Version {index + 1}.")
    exports = ports.exports(page_bytes=400)
    first = exports.export(T, U)
    ingest(ports, {"id": "t9", "text": "A later turn."})
    condense(ports, "Version 4.")  # newest first: the entries after the cursor do not shift
    rest = []
    cursor = first.next_cursor
    while cursor is not None:
        page = exports.export(T, U, cursor)
        rest.append(page)
        cursor = page.next_cursor
    versions = [v.version for page in [first, *rest] for v in page.history]
    assert versions == sorted(set(versions), reverse=True) and {1, 2, 3} <= set(versions)


# --- dead letters -------------------------------------------------------------------------------


def test_the_dead_letter_pass_closes_only_the_open_jobs_of_dead_lettered_messages(ports):
    crashed, retried, done = (
        ingest(ports, {"id": item, "text": f"Turn {item}."})[0] for item in ("crashed", "retried", "done")
    )
    messages = {message.item_id: message for message, _ in ports.queue.messages}
    ports.jobs.set_job_status(T, [crashed.job_id], "processing")  # the condenser died holding it
    ports.jobs.set_job_status(T, [retried.job_id], "queued", error=JobError(code="llm_error", message="boom"))
    ports.jobs.set_job_status(T, [done.job_id], "completed", memory_version=1)
    ports.dead_letters.messages = [messages["crashed"], messages["retried"], messages["done"]]
    assert ports.reconciler().reconcile() == 2
    first, second, third = (ports.reads().get_job(T, job.job_id) for job in (crashed, retried, done))
    assert (first.status, first.error and first.error.code) == ("failed", "dead_lettered")
    assert (second.status, second.error and second.error.code) == ("failed", "llm_error")  # its own reason
    assert third.status == "completed"
    assert len(ports.dead_letters.messages) == 3  # left in the DLQ for a redrive
    assert ports.reconciler().reconcile() == 0  # nothing left open


def test_a_scheduled_event_runs_the_pass_instead_of_a_batch(ports):
    (job,) = ingest(ports, {"id": "t1", "text": "I sell candles."})
    ports.dead_letters.messages = [message for message, _ in ports.queue.messages]
    handler = condenser_function(
        lambda: ports.consolidation(ScriptedModel("never called")), ports.reconciler, ports.indexer
    )
    scheduled = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
    assert handler(scheduled, Context()) == {"batchItemFailures": []}
    assert ports.jobs.status(job.job_id) == "failed"


def test_a_forget_sent_again_after_a_failure_still_leaves_no_stored_copy_of_the_episodes(call, ports):
    ingest(ports, {"id": "t1", "text": "My number ends 4471."})
    condense(ports)
    ports.archive.episode_copies[(T, U)] = "a copy stored while the first forget ran"
    # The episode went with the first forget, which failed after its transaction: this one finds
    # nothing to forget, and still drops the copy that may hold it.
    ports.store.episode_items[(T, U)].clear()
    status, _ = call("DELETE", f"{MEMORY}/episodes/t1")
    assert status == 404
    assert (T, U) not in ports.archive.episode_copies


def test_a_forget_drops_the_stored_copy_and_its_receipt_counts_it(call, ports):
    ingest(ports, {"id": "t1", "text": "My number ends 4471."})
    condense(ports)
    ports.archive.episode_copies[(T, U)] = "the copy the condenser stored"
    status, answer = call("DELETE", f"{MEMORY}/episodes/t1")
    assert status == 202, answer
    receipt = call("GET", f"{MEMORY}/deletions/{answer['receipt_id']}")[1]
    assert receipt["erased"]["s3"]["episode_copies"] == 1
    assert (T, U) not in ports.archive.episode_copies
