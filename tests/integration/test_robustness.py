"""Failures of dependencies and hostile inputs: nothing accepted is lost, nothing deleted comes back."""

from datetime import UTC, datetime, timedelta

import boto3
import pytest

from hippocampus import wiring
from hippocampus.adapters.dynamodb_memory import DynamoMemoryStore
from hippocampus.adapters.dynamodb_table import Table
from hippocampus.adapters.s3 import S3Archive
from hippocampus.contracts.errors import DependencyUnavailable
from hippocampus.contracts.fact_ports import ABSENT, FactCommit, FactCounts, FactEntry
from hippocampus.contracts.models import Fact, Job
from tests.support.clients import ClientProxy

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
    assert response.status == 422 and response.body["error"]["details"][0]["field"] == "user_id"
    assert [f["id"] for f in service.call("GET", USER).body["facts"]] == ["memory"]


def test_facts_total_size_is_capped(service):
    big = "x" * 32_000
    facts = [{"id": f"f{n}", "text": big, "infer": False} for n in range(30)]
    for start in range(0, 120, 30):
        response = service.call("POST", USER, {"items": [dict(f, id=f"{f['id']}-{start}") for f in facts]})
        assert response.status == 202
    over = service.call("POST", USER, {"items": [dict(f, id=f"{f['id']}-more") for f in facts]})
    assert over.status == 422 and "in all" in over.body["error"]["message"]


def test_expired_memory_can_be_written_again(service, monkeypatch, aws):
    monkeypatch.setenv("MEMORY_TTL_DAYS", "1")
    wiring.reset()
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


def test_a_fact_written_after_the_tombstone_survives_the_erase(aws):
    dynamodb = boto3.client("dynamodb")
    store = DynamoMemoryStore(Table(aws.table_name, lambda: proxy))

    def commit(fact_id: str, generation: int) -> None:
        fact = Fact(id=fact_id, text=f"Fact {fact_id}.", updated_at=datetime.now(UTC))
        entry = FactEntry(fact_id, job(f"job-{fact_id}"), fact, 40, ABSENT)
        ledger = store.read_facts("acme", "alice")
        counts = FactCounts(1, 40)  # the first fact of each life: the counts are rebased
        store.commit_facts(FactCommit("acme", "alice", generation, [entry], counts, None, ledger.revision))

    def fact_lands_before_the_listing(**request):
        # After the generation bump, before the old facts are listed: a request writes a new fact.
        tombstone = dynamodb.update_item(**request)
        commit("new", generation=1)
        return tombstone

    proxy = ClientProxy(dynamodb)
    commit("old", generation=0)
    proxy.intercept("update_item", fact_lands_before_the_listing)
    store.erase_user("acme", "alice")
    assert [fact.id for fact in store.read_memory("acme", "alice", with_facts=True)[1]] == ["new"]
    assert store.read_facts("acme", "alice").counts == FactCounts(1, 40)  # the new life's fact


def test_s3_keys_that_refuse_deletion_make_delete_fail(aws):
    s3 = boto3.client("s3")
    s3.put_object(Bucket=aws.bucket_name, Key="raw/acme/alice/r1.json", Body=b"{}")
    proxy = ClientProxy(s3)
    proxy.intercept(
        "delete_objects",
        lambda **request: {"Errors": [{"Key": request["Delete"]["Objects"][0]["Key"], "Code": "SlowDown"}]},
    )
    with pytest.raises(DependencyUnavailable, match="SlowDown"):
        S3Archive(aws.bucket_name, lambda: proxy).erase_user("acme", "alice", generation=1)


def job(job_id: str) -> Job:
    now = datetime.now(UTC)
    return Job(
        job_id=job_id,
        tenant_id="acme",
        user_id="alice",
        item_id=job_id,
        status="completed",
        created_at=now,
        updated_at=now,
    )


def test_a_delete_sweeps_the_old_generations_and_keeps_the_new_life(aws):
    s3 = boto3.client("s3")
    archive = S3Archive(aws.bucket_name, lambda: s3)
    old = archive.put_raw("acme", "alice", 0, "before", {"items": []})
    new = archive.put_raw("acme", "alice", 1, "after", {"items": []})
    legacy = "raw/acme/alice/unversioned.json"
    s3.put_object(Bucket=aws.bucket_name, Key=legacy, Body=b"{}")
    other = archive.put_raw("acme", "bob", 0, "bob", {"items": []})
    archive.erase_user("acme", "alice", generation=1)
    assert sorted(all_keys(aws.bucket_name, "raw/")) == sorted([new, other])
    assert old not in all_keys(aws.bucket_name) and legacy not in all_keys(aws.bucket_name)
