"""Keep them closed: each dependency fails, and the job, the memory and the queue say what a user expects.

DynamoDB fails through a `ClientProxy` around the client the real adapters use (`proxied_service`
composes the functions as `hippocampus.wiring` does). The LLM is in test_failure_injection_llm.py,
S3 and SQS in test_failure_injection_storage.py; the helpers here serve all three.
"""

import boto3
import pytest

from hippocampus import wiring
from hippocampus.adapters.dynamodb_job_creation import JOBS_PER_TRANSACTION
from hippocampus.adapters.llm.offline import OfflineModel
from tests.support.clients import ClientProxy, aws_error, fail, proxied_service

USER = "/v1/tenants/acme/users/alice/memory"
KEPT = "Alice sells candles."
MAX_WORDS = 50
THROTTLES = ["ProvisionedThroughputExceededException", "ThrottlingException"]


@pytest.fixture
def clients(aws, monkeypatch):
    monkeypatch.setenv("MEMORY_MAX_WORDS", str(MAX_WORDS))
    wiring.reset()
    return {name: ClientProxy(boto3.client(name)) for name in ("dynamodb", "s3", "sqs")}


@pytest.fixture
def build(aws, clients):
    """A service on the proxied clients, condensing with `model` (the offline provider by default)."""
    return lambda model=None: proxied_service(aws, **clients, model=model or OfflineModel())


def job(service, job_id):
    response = service.call("GET", f"/v1/tenants/acme/jobs/{job_id}")
    assert response.status == 200, response.body
    return response.body


def memory(service):
    return service.call("GET", USER).body


def stored_jobs(aws):
    """Every job record in the table: {item id (the key of a redacted job): (status, error code)}."""
    items = boto3.client("dynamodb").scan(TableName=aws.table_name)["Items"]
    return {
        item.get("item_id", item["pk"])["S"]: (
            item["status"]["S"],
            item["error"]["M"]["code"]["S"] if "error" in item else None,
        )
        for item in items
        if item["sk"]["S"] == "JOB"
    }


# A job creation whose job put (the first of its transaction) found a live job with the id.
JOB_EXISTS = aws_error(
    "TransactionCanceledException",
    "TransactWriteItems",
    CancellationReasons=[{"Code": "ConditionalCheckFailed"}, {"Code": "None"}, {"Code": "None"}],
)


def with_memory_and_one_item(service, text="Alice moved to Porto."):
    """Version 1 holds KEPT; one item is queued: returns its job id and its message."""
    assert service.call("PUT", USER, {"memory": KEPT, "expected_version": 0}).status == 200
    response = service.call("POST", USER, {"items": [{"id": "turn-1", "text": text}]})
    assert response.status == 202, response.body
    [message] = service.receive()
    return response.body["jobs"][0]["job_id"], message


def assert_retried_then_failed(service, job_id, message, code):
    """Receive 1: reported failed, job `queued` with `code`; receive 5: job `failed`; memory kept throughout."""
    assert service.deliver([message], receive_count=1) == {message["MessageId"]}
    retrying = job(service, job_id)
    assert retrying["status"] == "queued" and retrying["error"]["code"] == code, retrying
    assert memory(service)["memory"] == KEPT and memory(service)["version"] == 1
    assert service.deliver([message], receive_count=5) == {message["MessageId"]}
    failed = job(service, job_id)
    assert failed["status"] == "failed" and failed["error"]["code"] == code and failed["error"]["message"]
    assert memory(service)["memory"] == KEPT and memory(service)["version"] == 1


# --- DynamoDB ------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", THROTTLES)
def test_a_throttled_condenser_write_keeps_the_memory_and_retries_until_the_dlq(build, clients, code):
    service = build()
    job_id, message = with_memory_and_one_item(service)
    refused = fail(clients["dynamodb"], "transact_write_items", aws_error(code, "TransactWriteItems"))
    assert_retried_then_failed(service, job_id, message, "llm_or_dependency_error")
    assert len(refused) == 2
    clients["dynamodb"].restore("transact_write_items")
    assert service.deliver([message], receive_count=1) == set()  # redriven from the DLQ
    assert job(service, job_id)["status"] == "completed" and "Porto" in memory(service)["memory"]


def test_a_condenser_write_that_always_loses_its_condition_fails_with_a_reason(build, clients):
    service = build()
    job_id, message = with_memory_and_one_item(service)
    cancelled = aws_error(
        "TransactionCanceledException",
        "TransactWriteItems",
        CancellationReasons=[{"Code": "ConditionalCheckFailed"}, {"Code": "None"}],
    )
    refused = fail(clients["dynamodb"], "transact_write_items", cancelled)
    assert_retried_then_failed(service, job_id, message, "condensation_failed")
    assert len(refused) == 6  # 3 attempts per delivery, then the record goes back to SQS


def test_a_condenser_write_that_loses_once_is_condensed_again_and_applied_once(build, clients):
    service = build()
    job_id, message = with_memory_and_one_item(service)
    cancelled = aws_error(
        "TransactionCanceledException",
        "TransactWriteItems",
        CancellationReasons=[{"Code": "ConditionalCheckFailed"}],
    )
    fail(clients["dynamodb"], "transact_write_items", cancelled, times=1)
    assert service.deliver([message], receive_count=1) == set()
    assert job(service, job_id) | {"status": "completed", "memory_version": 2} == job(service, job_id)
    assert memory(service)["version"] == 2


@pytest.mark.parametrize("which", [0, 1], ids=["first transaction", "second transaction"])
@pytest.mark.parametrize("code", THROTTLES)
def test_a_throttled_job_creation_is_503_and_leaves_nothing_queued(build, clients, aws, code, which):
    service = build()
    turns = 2 if which == 0 else JOBS_PER_TRANSACTION + 1  # a request's jobs share transactions
    items = [{"id": f"turn-{n}", "text": f"Alice sells soap number {n}."} for n in range(1, turns + 1)]
    calls = iter(range(100))
    when = lambda **request: next(calls) == which  # noqa: E731
    fail(
        clients["dynamodb"], "transact_write_items", aws_error(code, "TransactWriteItems"), times=1, when=when
    )
    response = service.call("POST", USER, {"items": items})
    assert response.status == 503 and response.body["error"]["code"] == "dependency_unavailable"
    assert service.receive() == []
    assert boto3.client("s3").list_objects_v2(Bucket=aws.bucket_name, Prefix="raw/").get("KeyCount") == 0
    if which == 1:  # the jobs created before the failure are not left `queued` with no message
        first = range(1, JOBS_PER_TRANSACTION + 1)
        assert stored_jobs(aws) == {f"turn-{n}": ("failed", "dependency_unavailable") for n in first}
    again = service.call("POST", USER, {"items": items})  # the documented answer to a 5xx: repeat it
    assert again.status == 202 and [j["status"] for j in again.body["jobs"]] == ["queued"] * turns
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=aws.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert int(attributes["ApproximateNumberOfMessages"]) == turns
    assert all(job(service, j["job_id"])["status"] == "queued" for j in again.body["jobs"])


def test_a_job_creation_refused_by_a_job_that_is_then_gone_is_put_again_not_reported_phantom(build, clients):
    # The condition saw a live job with this id; by the read that follows it is gone (it expired).
    # Before the fix the answer was a `queued` job that was neither stored nor queued.
    service = build()
    fail(clients["dynamodb"], "transact_write_items", JOB_EXISTS, times=1)
    response = service.call("POST", USER, {"items": [{"id": "turn-1", "text": "Alice moved to Porto."}]})
    assert response.status == 202 and response.body["jobs"][0]["status"] == "queued"
    assert job(service, response.body["jobs"][0]["job_id"])["status"] == "queued"
    assert len(service.receive()) == 1


def test_a_job_creation_that_keeps_refusing_a_job_that_is_gone_is_503_and_queues_nothing(build, clients):
    service = build()
    item = {"id": "turn-1", "text": "Alice moved to Porto."}
    fail(clients["dynamodb"], "transact_write_items", JOB_EXISTS, times=2)
    response = service.call("POST", USER, {"items": [item]})
    assert response.status == 503 and response.body["error"]["code"] == "dependency_unavailable"
    assert service.receive() == []
    again = service.call("POST", USER, {"items": [item]})
    assert again.status == 202 and len(service.receive()) == 1


def throttle_once(proxy, operation, code):
    fail(proxy, operation, aws_error(code, operation), times=1)


@pytest.mark.parametrize("code", THROTTLES)
@pytest.mark.parametrize(
    ("path", "operation", "then"),
    [
        (USER, "query", 200),
        (USER + "/history", "get_item", 200),
        ("/v1/tenants/acme/jobs/job-1", "get_item", 404),  # an unknown job, once DynamoDB answers
    ],
    ids=["memory", "history", "job"],
)
def test_a_throttled_read_is_a_503_envelope_and_the_next_read_works(
    build, clients, path, operation, then, code
):
    service = build()
    service.call("PUT", USER, {"memory": KEPT, "expected_version": 0})
    throttle_once(clients["dynamodb"], operation, code)
    response = service.call("GET", path)
    assert response.status == 503, response.body
    assert (
        response.body["error"] | {"code": "dependency_unavailable", "status": 503} == response.body["error"]
    )
    assert "Traceback" not in str(response.body)
    assert service.call("GET", path).status == then
    assert memory(service)["memory"] == KEPT


@pytest.mark.parametrize("code", THROTTLES)
def test_throttled_job_updates_in_the_condenser_fail_the_record_not_the_batch(build, clients, code):
    service = build()
    job_id, message = with_memory_and_one_item(service)
    service.call("POST", "/v1/tenants/acme/users/bob/memory", {"items": [{"text": "Bob sells soap."}]})
    [bob_message] = [m for m in service.receive() if m["MessageId"] != message["MessageId"]]
    refused = fail(
        clients["dynamodb"],
        "update_item",
        aws_error(code, "UpdateItem"),
        when=lambda **request: job_id in str(request["Key"]),  # only alice's job
    )
    assert service.deliver([message, bob_message], receive_count=1) == {message["MessageId"]}
    assert refused and memory(service)["memory"] == KEPT
    assert service.call("GET", "/v1/tenants/acme/users/bob/memory").body["version"] == 1
    clients["dynamodb"].restore("update_item")
    assert service.deliver([message], receive_count=2) == set()
    assert job(service, job_id)["status"] == "completed" and "Porto" in memory(service)["memory"]


@pytest.mark.parametrize("code", THROTTLES)
@pytest.mark.parametrize(
    ("method", "body", "operation"),
    [
        ("PUT", {"memory": "Alice sells soap.", "expected_version": 1}, "transact_write_items"),
        ("DELETE", None, "update_item"),
        ("POST", {"items": [{"id": "turn-1", "text": "Alice moved to Porto."}]}, "get_item"),
    ],
    ids=["PUT", "DELETE", "ingest's read"],
)
def test_a_throttled_write_is_a_503_that_changes_nothing_and_can_be_repeated(
    build, clients, aws, method, body, operation, code
):
    service = build()
    assert service.call("PUT", USER, {"memory": KEPT, "expected_version": 0}).status == 200
    throttle_once(clients["dynamodb"], operation, code)
    response = service.call(method, USER, body)
    assert response.status == 503 and response.body["error"]["code"] == "dependency_unavailable"
    assert memory(service)["memory"] == KEPT and memory(service)["version"] == 1
    assert service.receive() == [] and stored_jobs(aws) == {}
    assert service.call(method, USER, body).status in (200, 202, 204)
