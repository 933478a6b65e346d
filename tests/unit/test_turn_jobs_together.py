"""A request's turn jobs are created together (JobStore.create_jobs), on the in-memory fakes: the
answer keeps the items' order, duplicates answer the job they repeat and queue nothing, a failed
job sent again is queued again, and a delete while the jobs are written still wins."""

import pytest

from hippocampus.contracts.models import IngestRequest, JobError, JobsResponse
from tests.support.fakes import Ports

T, U = "acme", "alice"


def ingest(ports: Ports, *items: dict, request_id: str) -> JobsResponse:
    return ports.ingest().ingest(T, U, IngestRequest.model_validate({"items": list(items)}), request_id)


def turn(item_id: str) -> dict:
    return {"id": item_id, "text": f"Alice says {item_id}."}


def fact(item_id: str) -> dict:
    return {"id": item_id, "text": f"Fact {item_id}.", "infer": False}


def queued_job_ids(ports: Ports) -> list[str]:
    return [message.job_id for message, _ in ports.queue.messages]


@pytest.fixture
def ports() -> Ports:
    return Ports()


def test_duplicates_among_new_turns_keep_the_order_and_answer_the_jobs_they_repeat(ports):
    earlier = ingest(ports, turn("t1"), turn("t2"), request_id="r1").jobs
    sent_before = queued_job_ids(ports)

    jobs = ingest(
        ports, turn("t3"), turn("t1"), fact("f1"), turn("t4"), turn("t2"), turn("t3"), request_id="r2"
    ).jobs

    assert [job.item_id for job in jobs] == ["t3", "t1", "f1", "t4", "t2", "t3"]
    assert jobs[1].job_id == earlier[0].job_id and jobs[4].job_id == earlier[1].job_id
    assert jobs[5].job_id == jobs[0].job_id  # the same turn twice in one request is one job
    assert [job.status for job in jobs] == ["queued", "queued", "completed", "queued", "queued", "queued"]
    assert queued_job_ids(ports) == [*sent_before, jobs[0].job_id, jobs[3].job_id]  # only the new turns


def test_a_failed_turn_sent_again_with_new_ones_is_queued_again(ports):
    [failed] = ingest(ports, turn("t1"), request_id="r1").jobs
    ports.jobs.set_job_status(T, [failed.job_id], "failed", JobError(code="condensation_failed", message="x"))

    jobs = ingest(ports, turn("t0"), turn("t1"), request_id="r2").jobs

    assert jobs[1].job_id == failed.job_id
    assert [job.status for job in jobs] == ["queued", "queued"]
    assert queued_job_ids(ports)[-2:] == [jobs[0].job_id, failed.job_id]


def test_a_delete_while_the_turn_jobs_are_written_wins_and_the_request_lands_after_it(ports):
    edits = ports.edits()
    edits.put_memory(T, U, "Alice sells candles.", 0)
    real_create_job = ports.jobs.create_job
    calls = []

    def delete_before_the_second_job(job, generation, source=None):
        calls.append(job.job_id)
        if len(calls) == 2:
            edits.delete_memory(T, U)
        return real_create_job(job, generation, source)

    ports.jobs.create_job = delete_before_the_second_job  # type: ignore[method-assign]

    jobs = ingest(ports, turn("t1"), turn("t2"), request_id="r1").jobs

    assert [job.status for job in jobs] == ["queued", "queued"]
    generation = ports.store.read_memory(T, U, with_facts=False)[0].generation
    assert generation == 1
    assert all(ports.jobs.generations[job.job_id] == generation for job in jobs)
    stored = {job.job_id: job.status for job in ports.jobs.jobs.values()}
    assert [stored[job.job_id] for job in jobs] == ["queued", "queued"]
    assert queued_job_ids(ports)[-2:] == [job.job_id for job in jobs]
