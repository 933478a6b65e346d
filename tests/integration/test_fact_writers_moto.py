"""Twenty writers of one user's facts at once, on the local stack's moto (one DynamoDB request at a
time, each conditional write atomic, as DynamoDB applies them): every request is answered, none
waits for another, the limits hold to the fact, and the counts on the memory item are those of
the facts stored (docs/architecture.md "Fact limits")."""

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from hippocampus.adapters.dynamodb_jobs import DynamoJobStore
from hippocampus.adapters.dynamodb_memory import DynamoMemoryStore
from hippocampus.adapters.dynamodb_receipts import DynamoReceiptStore
from hippocampus.adapters.dynamodb_table import Table
from hippocampus.adapters.s3 import S3Archive
from hippocampus.adapters.sqs import SqsJobQueue
from hippocampus.adapters.tracing import NoTracing
from hippocampus.contracts.errors import LimitExceeded, NotFound, WriteConflict
from hippocampus.contracts.models import IngestRequest, Job
from hippocampus.domain.ingest.fact_rules import live_counts
from hippocampus.domain.ingest.service import IngestService
from hippocampus.domain.reads.edits import EditService
from local_stack import aws as local_aws
from local_stack.defaults import load as load_defaults
from local_stack.moto_endpoint import MotoEndpoint
from tests.support.clients import ClientProxy

T = "acme"
WRITERS = 20


@dataclass
class Stack:
    dynamodb: ClientProxy
    table_name: str
    store: DynamoMemoryStore
    jobs: DynamoJobStore
    ingest: IngestService
    edits: EditService


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    endpoint = MotoEndpoint()
    url = endpoint.start()
    resources = local_aws.provision(url, "us-east-1", load_defaults().config)
    clients = {name: local_aws.aws_client(name, url, "us-east-1") for name in ("dynamodb", "s3", "sqs")}
    dynamodb = ClientProxy(clients["dynamodb"])  # a test may stage a race between two commits
    table = Table(resources.table_name, lambda: dynamodb)
    store, jobs = DynamoMemoryStore(table), DynamoJobStore(table)
    archive = S3Archive(resources.bucket_name, lambda: clients["s3"])
    queue = SqsJobQueue(resources.queue_url, lambda: clients["sqs"])
    tracing = NoTracing()
    ingest = IngestService(store, jobs, archive, lambda: queue, tracing)
    edits = EditService(store, jobs, archive, tracing, max_words=50, receipts=DynamoReceiptStore(table))
    try:
        yield Stack(dynamodb, resources.table_name, store, jobs, ingest, edits)
    finally:
        endpoint.stop()


@pytest.fixture
def user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def fact(fact_id: str) -> dict[str, Any]:
    return {"id": fact_id, "text": f"Fact {fact_id}.", "infer": False}


CONFLICT_ATTEMPTS = 5


def send(stack: Stack, user: str, items: list[dict[str, Any]]) -> list[Job]:
    """Ingest `items`; a 409 `write_conflict` (nothing written: on a busy machine the request's
    retries can run out while the others keep committing) is sent again, as `hippocampus backfill` does."""
    request = IngestRequest.model_validate({"items": items})
    for _ in range(CONFLICT_ATTEMPTS - 1):
        try:
            return stack.ingest.ingest(T, user, request, uuid.uuid4().hex).jobs
        except WriteConflict:
            continue
    return stack.ingest.ingest(T, user, request, uuid.uuid4().hex).jobs


def all_at_once(count: int, work: Any) -> list[Any]:
    """`work(n)` for n in range(count), in as many threads, started together."""
    start = threading.Barrier(count)

    def run(n: int) -> Any:
        start.wait()
        return work(n)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(run, range(count)))


def assert_counted_exactly(stack: Stack, user: str, facts: int) -> None:
    ledger = stack.store.read_facts(T, user)
    assert len(ledger.facts) == facts
    assert ledger.counts == live_counts(ledger)


def test_twenty_writers_of_one_user_are_all_applied_and_counted(stack, user):
    def writer(n: int) -> list[str]:
        statuses = []
        for request in range(3):
            items = [fact(f"w{n}-r{request}-{k}") for k in range(2)] + [
                {"text": f"Writer {n} turn {request}."}
            ]
            statuses += [job.status for job in send(stack, user, items)]
        return statuses

    answers = all_at_once(WRITERS, writer)
    assert all(statuses == ["completed", "completed", "queued"] * 3 for statuses in answers)
    assert_counted_exactly(stack, user, WRITERS * 3 * 2)
    assert len(stack.jobs.list_user_jobs(T, user)) == WRITERS * 3 * 3


def test_writers_racing_past_the_limit_store_exactly_200_and_the_refused_write_nothing(stack, user):
    for start in range(0, 50, 25):
        send(stack, user, [fact(f"seed-{n}") for n in range(start, start + 25)])

    def writer(n: int) -> str:
        try:
            send(stack, user, [fact(f"w{n}-{k}") for k in range(10)])
        except LimitExceeded as refused:
            assert "at most 200 facts" in refused.message
            return "refused"
        return "stored"

    outcomes = all_at_once(WRITERS, writer)
    assert outcomes.count("stored") == 15 and outcomes.count("refused") == 5
    stored = set(stack.store.read_facts(T, user).facts)
    refused = {f"w{n}" for n, outcome in enumerate(outcomes) if outcome == "refused"}
    assert len(stored) == 200 and not {fact_id.split("-")[0] for fact_id in stored} & refused
    assert len(stack.jobs.list_user_jobs(T, user)) == 50 + 15 * 10  # none of a refused request
    assert_counted_exactly(stack, user, 200)


def test_a_request_of_100_facts_takes_four_commits_and_counts_exactly(stack, user):
    jobs = send(stack, user, [fact(f"f{n}") for n in range(100)])
    assert [job.status for job in jobs] == ["completed"] * 100
    assert_counted_exactly(stack, user, 100)
    again = send(stack, user, [fact(f"f{n}") for n in range(100)])  # replaced: the counts stay
    assert [job.status for job in again] == ["completed"] * 100
    assert_counted_exactly(stack, user, 100)


def test_a_later_commit_leaves_a_fact_replaced_meanwhile_to_its_later_writer(stack, user):
    """A request of 40 facts takes two commits; between them, another request replaces f35: its
    text stays (the first request is ordered before it), every job is completed, the counts hold."""
    commits = 0

    def rival_before_the_second_commit(**request: Any) -> Any:
        nonlocal commits
        commits += 1
        if commits == 2:
            stack.dynamodb.restore("transact_write_items")
            send(stack, user, [{"id": "f35", "text": "The rival's text.", "infer": False}])
        return stack.dynamodb.target.transact_write_items(**request)

    stack.dynamodb.intercept("transact_write_items", rival_before_the_second_commit)
    try:
        jobs = send(stack, user, [fact(f"f{n}") for n in range(40)])
    finally:
        stack.dynamodb.restore("transact_write_items")
    assert [job.status for job in jobs] == ["completed"] * 40
    facts = stack.store.read_facts(T, user).facts
    assert facts["f35"].fact.text == "The rival's text." and facts["f34"].fact.text == "Fact f34."
    assert_counted_exactly(stack, user, 40)


def test_deleting_facts_while_others_are_written_keeps_the_counts(stack, user):
    send(stack, user, [fact(f"old-{n}") for n in range(20)])

    def work(n: int) -> None:
        if n % 2:
            stack.edits.delete_fact(T, user, f"old-{n}")
        else:
            send(stack, user, [fact(f"new-{n}")])

    all_at_once(20, work)
    assert_counted_exactly(stack, user, 20)  # 10 deleted, 10 written
    with pytest.raises(NotFound):
        stack.edits.delete_fact(T, user, "old-1")


def test_facts_stored_before_they_were_counted_are_counted_on_the_next_write(stack, user):
    pk = f"T#{T}#U#{user}"
    stack.dynamodb.put_item(
        TableName=stack.table_name, Item={"pk": {"S": pk}, "sk": {"S": "MEMORY"}, "generation": {"N": "0"}}
    )
    for n in range(3):  # the item of a fact as written before the counts existed
        stack.dynamodb.put_item(
            TableName=stack.table_name,
            Item={
                "pk": {"S": pk},
                "sk": {"S": f"FACT#legacy-{n}"},
                "id": {"S": f"legacy-{n}"},
                "text": {"S": "Written by an earlier version."},
                "metadata": {"S": "{}"},
                "additional_metadata": {"S": "{}"},
                "is_markdown": {"BOOL": False},
                "updated_at": {"S": "2026-01-01T00:00:00Z"},
                "generation": {"N": "0"},
            },
        )
    assert stack.store.read_facts(T, user).counts is None
    all_at_once(5, lambda n: send(stack, user, [fact(f"new-{n}")]))
    assert_counted_exactly(stack, user, 8)
    stack.edits.delete_fact(T, user, "legacy-0")
    assert_counted_exactly(stack, user, 7)


def test_a_forget_drops_the_counts_and_the_new_life_counts_its_own(stack, user):
    send(stack, user, [fact(f"f{n}") for n in range(30)])
    stack.edits.delete_memory(T, user)
    assert stack.store.read_facts(T, user).counts is None
    all_at_once(10, lambda n: send(stack, user, [fact(f"again-{n}")]))
    assert_counted_exactly(stack, user, 10)
