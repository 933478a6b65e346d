"""On DynamoDB and S3 (moto): a delete leaves nothing of the user in the table, the export gives
back everything stored, and the facts limit holds against a concurrent writer, which never waits
(docs/api.md "Forgetting a user", "Export", "Limits")."""

import boto3
import pytest

from hippocampus import wiring
from hippocampus.adapters.llm.offline import OfflineModel
from hippocampus.domain.ingest import fact_rules
from tests.support.clients import ClientProxy, aws_error, fail, proxied_service
from tests.support.lambda_harness import Context

USER = "/v1/tenants/acme/users/alice/memory"


@pytest.fixture
def clients(aws, monkeypatch):
    wiring.reset()
    return {name: ClientProxy(boto3.client(name)) for name in ("dynamodb", "s3", "sqs")}


@pytest.fixture
def proxied(aws, clients):
    return proxied_service(aws, **clients, model=OfflineModel())


def table_items(aws, user="alice"):
    """Every item of the table that names the user (its key, or a job's attributes)."""
    items = boto3.client("dynamodb").scan(TableName=aws.table_name)["Items"]
    return [
        item for item in items if f"#U#{user}" in item["pk"]["S"] or item.get("user_id", {}).get("S") == user
    ]


def test_a_delete_leaves_only_the_redacted_jobs_it_caught(service, aws):
    service.call(
        "POST", USER, {"items": [{"id": "t1", "text": "I sell candles."}]}, headers={"Idempotency-Key": "k1"}
    )
    service.drain()
    service.call("POST", USER, {"items": [{"id": "f1", "text": "Likes tea.", "infer": False}]})
    caught = service.call("POST", USER, {"items": [{"id": "t2", "text": "I moved to Paris."}]}).body["jobs"][
        0
    ]
    assert any(item["sk"]["S"].startswith("ingest#") for item in table_items(aws))  # the key's record
    assert service.call("DELETE", USER).status == 204
    left = [item for item in table_items(aws) if item["sk"]["S"] != "MEMORY"]  # the tombstone
    assert [(item["sk"]["S"], item["status"]["S"], "item_id" in item) for item in left] == [
        ("JOB", "skipped", False)
    ]
    assert (
        service.call("GET", f"/v1/tenants/acme/jobs/{caught['job_id']}").body["error"]["code"]
        == "user_deleted"
    )
    service.drain()  # its message arrives: nothing comes back
    assert sorted(item["sk"]["S"] for item in table_items(aws)) == ["JOB", "MEMORY"]


def test_a_replayed_idempotency_key_after_a_delete_ingests_again(service):
    body, key = {"items": [{"id": "t1", "text": "I sell candles."}]}, {"Idempotency-Key": "k1"}
    first = service.call("POST", USER, body, headers=key).body
    assert service.call("POST", USER, body, headers=key).body == first  # a replay
    service.call("DELETE", USER)
    again = service.call("POST", USER, body, headers=key)
    assert again.status == 202 and again.body != first
    service.drain()
    assert "candles" in service.call("GET", USER).body["memory"]


def test_the_export_holds_memory_facts_items_history_and_jobs(service):
    service.call("POST", USER, {"items": [{"id": "t1", "text": "I sell handmade candles."}]})
    service.drain()
    service.call("POST", USER, {"items": [{"id": "f1", "text": "Likes tea.", "infer": False}]})
    export = service.call("GET", USER + "/export")
    assert export.status == 200 and export.body["next_cursor"] is None
    body = export.body
    assert "candles" in body["memory"]["memory"] and body["memory"]["facts"][0]["id"] == "f1"
    assert [item["text"] for item in body["items"]] == ["I sell handmade candles."]
    assert [version["version"] for version in body["history"]] == [1]
    assert [(job["item_id"], job["status"]) for job in body["jobs"]] == [
        ("t1", "completed"),
        ("f1", "completed"),
    ]
    direct = service.get_memory.lambda_handler(
        {"action": "export_memory", "tenant_id": "acme", "user_id": "alice"}, Context()
    )
    assert direct | {"exported_at": body["exported_at"]} == body


def test_a_concurrent_fact_writer_never_waits_and_the_limit_is_never_overshot(proxied, clients, monkeypatch):
    # The limit made small (20 facts instead of 200) to keep the test fast: the rule is the same.
    monkeypatch.setattr(fact_rules, "MAX_FACTS_PER_USER", 20)
    facts = lambda prefix, count: [{"id": f"{prefix}{i}", "text": "x", "infer": False} for i in range(count)]  # noqa: E731
    assert proxied.call("POST", USER, {"items": facts("a", 15)}).status == 202
    answers = []

    def another_request_meanwhile(**request):
        # Between this request's read and its commit, a second one adds 4 facts: it gets in, and
        # this one, decided again on the facts now stored, would make 23.
        clients["dynamodb"].restore("transact_write_items")
        answers.append(proxied.call("POST", USER, {"items": facts("c", 4)}))
        return clients["dynamodb"].target.transact_write_items(**request)

    clients["dynamodb"].intercept("transact_write_items", another_request_meanwhile)
    late = proxied.call("POST", USER, {"items": facts("d", 4)})
    assert answers[0].status == 202
    assert (late.status, late.body["error"]["code"]) == (422, "limit_exceeded")
    assert "would make 23" in late.body["error"]["message"]
    stored = {fact["id"] for fact in proxied.call("GET", USER).body["facts"]}
    assert len(stored) == 19 and not any(fact_id.startswith("d") for fact_id in stored)


def test_a_commit_cancelled_by_a_concurrent_transaction_is_tried_again(proxied, clients):
    refused = fail(
        clients["dynamodb"],
        "transact_write_items",
        aws_error(
            "TransactionCanceledException",
            "TransactWriteItems",
            CancellationReasons=[{"Code": "TransactionConflict"}, {"Code": "None"}, {"Code": "None"}],
        ),
        times=2,
    )
    answer = proxied.call("POST", USER, {"items": [{"id": "f1", "text": "Likes tea.", "infer": False}]})
    assert len(refused) == 2 and answer.status == 202 and answer.body["jobs"][0]["status"] == "completed"
    assert [fact["id"] for fact in proxied.call("GET", USER).body["facts"]] == ["f1"]


def test_a_message_dead_lettered_by_a_crashed_condenser_leaves_no_open_job(service, aws):
    """The condenser died on the last delivery: SQS moved the message, the job still says processing."""
    (job,) = service.call("POST", USER, {"items": [{"id": "t1", "text": "I sell candles."}]}).body["jobs"]
    sqs = boto3.client("sqs")
    for _ in range(5):  # five deliveries, none acknowledged (the condenser crashed each time)
        (message,) = sqs.receive_message(QueueUrl=aws.queue_url, VisibilityTimeout=0)["Messages"]
    boto3.client("dynamodb").update_item(
        TableName=aws.table_name,
        Key={"pk": {"S": f"T#acme#J#{job['job_id']}"}, "sk": {"S": "JOB"}},
        UpdateExpression="SET #s = :processing",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":processing": {"S": "processing"}},
    )
    assert sqs.receive_message(QueueUrl=aws.queue_url).get("Messages") is None  # moved on the 6th
    service.invoke("condenser", {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}})
    closed = service.call("GET", f"/v1/tenants/acme/jobs/{job['job_id']}").body
    assert (closed["status"], closed["error"]["code"]) == ("failed", "dead_lettered")
    attributes = sqs.get_queue_attributes(QueueUrl=aws.dlq_url, AttributeNames=["All"])["Attributes"]
    in_dlq = int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )
    assert in_dlq == 1 and message["Body"]  # still there, for a redrive
