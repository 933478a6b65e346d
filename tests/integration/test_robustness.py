"""Failures of dependencies and hostile inputs: nothing accepted is lost, nothing deleted comes back."""

from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.exceptions import ClientError

from hippocampus import runtime
from hippocampus.adapters.dynamodb import DynamoMemoryStore
from hippocampus.adapters.s3 import S3Archive

USER = "/v1/tenants/acme/users/alice/memory"


def all_keys(bucket, prefix=""):
    return [
        o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    ]


@pytest.mark.parametrize(
    "body",
    [
        '{"items": [{"text": "x", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}]}",
        '{"items": [{"text": ' + "9" * 5000 + "}]}",
    ],
    ids=["nesting that breaks the parser", "integer too long to parse"],
)
def test_bodies_that_break_the_parser_are_400(service, body):
    response = service.call("POST", USER, raw_body=body)
    assert response.status == 400 and response.body["error"]["code"] == "malformed_json"


def test_deep_metadata_is_422_and_reads_keep_working(service):
    deep = {}
    node = deep
    for _ in range(900):
        node["a"] = {}
        node = node["a"]
    response = service.call(
        "POST", USER, {"items": [{"id": "f", "text": "t", "infer": False, "metadata": deep}]}
    )
    assert response.status == 422 and response.body["error"]["details"][0]["field"] == "items[0].metadata"
    assert service.call("GET", USER).status == 200


def test_an_encoded_slash_cannot_reach_another_route(service):
    service.call("POST", USER, {"items": [{"id": "memory", "text": "keep me", "infer": False}]})
    response = service.call("DELETE", "/v1/tenants/acme/users/alice%2Fmemory%2Ffacts/memory")
    assert response.status in (404, 422)
    assert [f["id"] for f in service.call("GET", USER).body["facts"]] == ["memory"]


def test_failure_mid_request_leaves_no_orphan_queued_job(service, monkeypatch):
    item = {"id": "turn-1", "text": "Alice sells candles."}
    fact = {"id": "f1", "text": "Likes tea.", "infer": False}
    original = DynamoMemoryStore.put_fact
    error = ClientError({"Error": {"Code": "TransactionConflict", "Message": "busy"}}, "TransactWriteItems")

    def conflict_once(self, *args, **kwargs):
        monkeypatch.setattr(DynamoMemoryStore, "put_fact", original)
        raise error

    monkeypatch.setattr(DynamoMemoryStore, "put_fact", conflict_once)
    first = service.call("POST", USER, {"items": [item, fact]})
    assert first.status == 503 and first.body["error"]["code"] == "dependency_unavailable"
    retry = service.call("POST", USER, {"items": [item, fact]})
    assert retry.status == 202 and retry.body["jobs"][0]["status"] == "queued"
    assert service.drain() == 1
    job_id = retry.body["jobs"][0]["job_id"]
    assert service.call("GET", f"/v1/tenants/acme/jobs/{job_id}").body["status"] == "completed"


def test_queue_outage_is_503_and_the_jobs_say_failed(service, monkeypatch):
    from hippocampus.adapters.sqs import SqsJobQueue

    original = SqsJobQueue.send

    def unavailable(self, messages, trace_header):
        raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "down"}}, "SendMessageBatch")

    monkeypatch.setattr(SqsJobQueue, "send", unavailable)
    response = service.call("POST", USER, {"items": [{"id": "turn-1", "text": "Alice sells candles."}]})
    assert response.status == 503
    monkeypatch.setattr(SqsJobQueue, "send", original)
    retry = service.call("POST", USER, {"items": [{"id": "turn-1", "text": "Alice sells candles."}]})
    assert retry.body["jobs"][0]["status"] == "queued" and service.drain() == 1


def test_history_written_after_a_delete_is_erased(service, aws, monkeypatch):
    original = S3Archive.put_history

    def delete_first(self, tenant_id, user_id, generation, entry):
        service.call("DELETE", USER)  # lands between the memory write and its archive copy
        original(self, tenant_id, user_id, generation, entry)

    monkeypatch.setattr(S3Archive, "put_history", delete_first)
    service.call("PUT", USER, {"memory": "Alice sells candles.", "expected_version": 0})
    assert all_keys(aws.bucket_name, "history/") == []


def test_a_fact_written_after_the_tombstone_survives_the_erase(service, monkeypatch):
    service.call("POST", USER, {"items": [{"id": "old", "text": "Old fact.", "infer": False}]})
    original = DynamoMemoryStore.erase_user

    def write_during_erase(self, tenant_id, user_id):
        # Wrap the query step: a new fact lands after the generation bump, before the facts are listed.
        query = self._query_partition

        def racing_query(pk, projection=False):
            if projection:
                service.call("POST", USER, {"items": [{"id": "new", "text": "New fact.", "infer": False}]})
            return query(pk, projection)

        monkeypatch.setattr(self, "_query_partition", racing_query)
        return original(self, tenant_id, user_id)

    monkeypatch.setattr(DynamoMemoryStore, "erase_user", write_during_erase)
    assert service.call("DELETE", USER).status == 204
    assert [f["id"] for f in service.call("GET", USER).body["facts"]] == ["new"]


def test_facts_total_size_is_capped(service):
    big = "x" * 32_000
    facts = [{"id": f"f{n}", "text": big, "infer": False} for n in range(30)]
    for start in range(0, 120, 30):
        response = service.call("POST", USER, {"items": [dict(f, id=f"{f['id']}-{start}") for f in facts]})
        assert response.status == 202
    over = service.call("POST", USER, {"items": [dict(f, id=f"{f['id']}-more") for f in facts]})
    assert over.status == 422 and "in all" in over.body["error"]["message"]


def test_s3_keys_that_refuse_deletion_make_delete_fail(service, monkeypatch):
    service.call("POST", USER, {"items": [{"text": "Alice sells candles."}]})
    s3 = runtime.write_service()._archive._client()

    def partial(**kwargs):
        return {"Errors": [{"Key": kwargs["Delete"]["Objects"][0]["Key"], "Code": "SlowDown"}]}

    monkeypatch.setattr(s3, "delete_objects", partial)
    response = service.call("DELETE", USER)
    assert response.status == 503 and response.body["error"]["code"] == "dependency_unavailable"


def test_expired_memory_can_be_written_again(service, monkeypatch, aws):
    monkeypatch.setenv("MEMORY_TTL_DAYS", "1")
    runtime.reset()
    service.call("PUT", USER, {"memory": "Alice sells candles.", "expected_version": 0})
    table = boto3.client("dynamodb")
    past = int((datetime.now(UTC) - timedelta(days=1)).timestamp())
    table.update_item(
        TableName=aws.table_name,
        Key={"pk": {"S": "T#acme#U#alice"}, "sk": {"S": "MEMORY"}},
        UpdateExpression="SET expires_at = :past",
        ExpressionAttributeValues={":past": {"N": str(past)}},
    )
    assert service.call("GET", USER).body["version"] == 0  # expired, not yet reaped by DynamoDB
    again = service.call("PUT", USER, {"memory": "Alice sells soap.", "expected_version": 0})
    assert again.status == 200 and again.body["memory"] == "Alice sells soap."


def test_an_expired_job_sent_again_is_queued_again(service, aws):
    item = {"id": "turn-1", "text": "Alice sells candles."}
    job_id = service.call("POST", USER, {"items": [item]}).body["jobs"][0]["job_id"]
    service.drain()
    boto3.client("dynamodb").update_item(
        TableName=aws.table_name,
        Key={"pk": {"S": f"T#acme#J#{job_id}"}, "sk": {"S": "JOB"}},
        UpdateExpression="SET expires_at = :past",
        ExpressionAttributeValues={":past": {"N": "1"}},
    )
    again = service.call("POST", USER, {"items": [item]}).body["jobs"][0]
    assert again["status"] == "queued"
    assert service.call("GET", f"/v1/tenants/acme/jobs/{job_id}").body["status"] == "queued"
