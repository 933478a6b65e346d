"""A request of 100 turns on moto: its jobs are created in a few transactions (49 jobs each), not
one per turn, and everything a user sees stays as it was: every job queued once, a resend answers
the same jobs and queues nothing, a delete while the jobs are written wins (docs/architecture.md
"Ingest", step 4)."""

import uuid
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from hippocampus.adapters.dynamodb_jobs import DynamoJobStore
from hippocampus.adapters.dynamodb_memory import DynamoMemoryStore
from hippocampus.adapters.dynamodb_receipts import DynamoReceiptStore
from hippocampus.adapters.dynamodb_table import Table
from hippocampus.adapters.s3 import S3Archive
from hippocampus.adapters.sqs import SqsJobQueue
from hippocampus.adapters.tracing import NoTracing
from hippocampus.contracts.models import IngestRequest, Job, JobError
from hippocampus.domain.ingest.service import IngestService
from hippocampus.domain.reads.edits import EditService
from tests.support.clients import ClientProxy

T, U = "acme", "alice"
TURNS = 100


@dataclass
class Stack:
    dynamodb: ClientProxy
    jobs: DynamoJobStore
    store: DynamoMemoryStore
    ingest: IngestService
    edits: EditService
    queue_url: str
    transactions: list[int]  # the number of writes of each TransactWriteItems sent


@pytest.fixture
def stack(aws) -> Stack:
    client = boto3.client("dynamodb")
    transactions: list[int] = []
    client.meta.events.register(
        "before-parameter-build.dynamodb.TransactWriteItems",
        lambda params, **_: transactions.append(len(params["TransactItems"])),
    )
    dynamodb = ClientProxy(client)
    table = Table(aws.table_name, lambda: dynamodb)
    store, jobs = DynamoMemoryStore(table), DynamoJobStore(table)
    archive = S3Archive(aws.bucket_name, lambda: boto3.client("s3"))
    queue = SqsJobQueue(aws.queue_url, lambda: boto3.client("sqs"))
    tracing = NoTracing()
    ingest = IngestService(store, jobs, archive, lambda: queue, tracing)
    edits = EditService(store, jobs, archive, tracing, max_words=50, receipts=DynamoReceiptStore(table))
    return Stack(dynamodb, jobs, store, ingest, edits, aws.queue_url, transactions)


def turns(first: int, count: int) -> list[dict[str, Any]]:
    return [{"id": f"t{n}", "text": f"Alice says thing {n}."} for n in range(first, first + count)]


def send(stack: Stack, items: list[dict[str, Any]]) -> list[Job]:
    request = IngestRequest.model_validate({"items": items})
    return stack.ingest.ingest(T, U, request, uuid.uuid4().hex).jobs


def messages_on_queue(stack: Stack) -> int:
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=stack.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def test_a_hundred_turns_are_queued_in_three_transactions(stack):
    jobs = send(stack, turns(0, TURNS))

    assert [job.item_id for job in jobs] == [f"t{n}" for n in range(TURNS)]
    assert len(stack.transactions) == 3 and max(stack.transactions) <= 100
    stored = stack.jobs.get_jobs(T, [job.job_id for job in jobs])
    assert len(stored) == TURNS and {job.status for job in stored.values()} == {"queued"}
    assert len(stack.jobs.list_user_jobs(T, U)) == TURNS  # each with its reference in the index
    assert messages_on_queue(stack) == TURNS


def test_a_resend_answers_the_same_jobs_and_queues_only_the_new_turns(stack):
    first = send(stack, turns(0, TURNS))
    stack.transactions.clear()

    again = send(stack, turns(0, TURNS))
    assert [job.job_id for job in again] == [job.job_id for job in first]
    assert [job.status for job in again] == ["queued"] * TURNS
    assert len(stack.transactions) == 3  # each refused as a whole, its jobs read in one batch
    assert messages_on_queue(stack) == TURNS

    mixed = send(stack, turns(50, TURNS))  # t50..t99 again, t100..t149 new
    assert [job.job_id for job in mixed[:50]] == [job.job_id for job in first[50:]]
    assert len(stack.jobs.list_user_jobs(T, U)) == TURNS + 50
    assert messages_on_queue(stack) == TURNS + 50


def test_a_delete_between_two_transactions_of_jobs_wins(stack):
    stack.edits.put_memory(T, U, "Alice sells candles.", 0)
    real = stack.dynamodb.target.transact_write_items
    calls = 0

    def delete_before_the_second_transaction(**request: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:  # the first 49 jobs are written, under the generation read before the delete
            stack.dynamodb.restore("transact_write_items")
            stack.edits.delete_memory(T, U)
        return real(**request)

    stack.dynamodb.intercept("transact_write_items", delete_before_the_second_transaction)
    jobs = send(stack, turns(0, TURNS))

    generation = stack.store.read_memory(T, U, with_facts=False)[0].generation
    assert generation == 1
    assert [job.status for job in jobs] == ["queued"] * TURNS
    assert {job.job_id for job in stack.jobs.list_user_jobs(T, U)} == {job.job_id for job in jobs}
    assert messages_on_queue(stack) == TURNS  # only the new life's: the old generation's never left
    assert stack.store.read_memory(T, U, with_facts=False)[0].memory is None


def test_a_turn_twice_in_a_request_is_one_job_and_a_failed_one_sent_again_is_queued_again(stack):
    first = send(stack, turns(0, 3))
    failure = JobError(code="condensation_failed", message="the model failed")
    stack.jobs.set_job_status(T, [first[1].job_id], "failed", failure)
    t0, t1, t3 = turns(0, 1)[0], turns(1, 1)[0], turns(3, 1)[0]

    jobs = send(stack, [t1, t3, t3, t0])

    assert [job.item_id for job in jobs] == ["t1", "t3", "t3", "t0"]
    assert jobs[0].job_id == first[1].job_id and jobs[3].job_id == first[0].job_id
    assert jobs[1].job_id == jobs[2].job_id
    assert [job.status for job in jobs] == ["queued"] * 4
    assert stack.jobs.get_jobs(T, [first[1].job_id])[first[1].job_id].status == "queued"
    assert messages_on_queue(stack) == 3 + 2  # t1 again and t3, once
