"""Records through the real handlers and adapters on moto (docs/api.md "Records", "Forget one
episode"): written in the memory's transaction, listed as of a time, never read by a memory read,
erased with the user; forgetting one episode blanks its raw payload and rebuilds the summary in
the same write, and recall forgets it at once."""

import json
from typing import Any

import boto3

from tests.support.fakes import ScriptedModel

T, U = "acme", "alice"
MEMORY = f"/v1/tenants/{T}/users/{U}/memory"
KEYS = ("op", "record_id", "text", "category", "valid_from", "source_items")


def answer(summary: str, *operations: dict[str, Any]) -> str:
    return json.dumps({"summary": summary, "operations": [{k: op.get(k) for k in KEYS} for op in operations]})


def ingest(service: Any, *items: dict[str, Any]) -> list[dict[str, Any]]:
    response = service.call("POST", MEMORY, {"items": list(items)})
    assert response.status == 202, response.body
    jobs: list[dict[str, Any]] = response.body["jobs"]
    return jobs


def records(service: Any, **query: str) -> list[dict[str, Any]]:
    response = service.call("GET", MEMORY + "/records", query=query or None)
    assert response.status == 200, response.body
    items: list[dict[str, Any]] = response.body["items"]
    return items


def move_to_berlin(service: Any) -> None:
    """Alice lived in Paris (told in t1, 2023) and moved to Berlin (told in t2, 2024)."""
    service.condense_with(
        ScriptedModel(
            answer(
                "Alice lives in Paris and likes tea.",
                {
                    "op": "add",
                    "text": "Alice lives in Paris.",
                    "category": "location",
                    "source_items": ["t1"],
                },
                {"op": "add", "text": "Alice likes tea.", "category": "preference", "source_items": ["t1"]},
            )
        )
    )
    ingest(
        service, {"id": "t1", "text": "I live in Paris and like tea.", "occurred_at": "2023-05-08T10:00:00Z"}
    )
    assert service.drain() >= 1
    paris = next(record for record in records(service) if "Paris" in record["text"])
    replace = {
        "op": "invalidate",
        "record_id": paris["id"],
        "text": "Alice lives in Berlin.",
        "source_items": ["t2"],
    }
    service.condense_with(ScriptedModel(answer("Alice lives in Berlin and likes tea.", replace)))
    ingest(service, {"id": "t2", "text": "I moved to Berlin.", "occurred_at": "2024-03-01T10:00:00Z"})
    assert service.drain() >= 1


def test_records_are_kept_over_time_and_a_memory_read_never_reads_them(service: Any, aws: Any) -> None:
    move_to_berlin(service)
    assert sorted(r["text"] for r in records(service)) == ["Alice likes tea.", "Alice lives in Berlin."]
    history = records(service, include_invalidated="true")
    paris = next(r for r in history if "Paris" in r["text"])
    berlin = next(r for r in history if "Berlin" in r["text"])
    assert (paris["superseded_by"], paris["valid_to"]) == (berlin["id"], "2024-03-01T10:00:00Z")
    assert sorted(r["text"] for r in records(service, as_of="2023-12-31T00:00:00Z")) == [
        "Alice likes tea.",
        "Alice lives in Paris.",
    ]
    # The memory read is one Query from FACT# to MEMORY: the records sort after it.
    client = boto3.client("dynamodb")
    items = client.query(
        TableName=aws.table_name,
        KeyConditionExpression="pk = :pk AND sk BETWEEN :from AND :to",
        ExpressionAttributeValues={
            ":pk": {"S": f"T#{T}#U#{U}"},
            ":from": {"S": "FACT#"},
            ":to": {"S": "MEMORY"},
        },
    )["Items"]
    assert [item["sk"]["S"] for item in items] == ["MEMORY"]
    body = service.call("GET", MEMORY).body
    assert body["memory"] == "Alice lives in Berlin and likes tea." and "records" not in body
    export = service.call("GET", MEMORY + "/export").body
    assert sorted(r["text"] for r in export["records"]) == sorted(r["text"] for r in history)


def test_forgetting_one_episode_on_the_table_and_the_archive(service: Any, aws: Any) -> None:
    move_to_berlin(service)
    before = service.call("POST", MEMORY + "/query", {"query": "moved to Berlin", "types": ["episode"]}).body
    assert "t2" in [result["id"] for result in before["results"]]  # recall now keeps the user's episodes
    response = service.call("DELETE", MEMORY + "/episodes/t2")
    assert response.status == 202, response.body
    job_id = response.body["jobs"][0]["job_id"]
    assert sorted(r["text"] for r in records(service)) == ["Alice likes tea.", "Alice lives in Paris."]
    s3 = boto3.client("s3")
    payloads = [
        json.loads(s3.get_object(Bucket=aws.bucket_name, Key=obj["Key"])["Body"].read())
        for obj in s3.list_objects_v2(Bucket=aws.bucket_name, Prefix="raw/").get("Contents", [])
    ]
    assert all("Berlin" not in json.dumps(payload) for payload in payloads) and len(payloads) == 1
    assert service.receive() == []  # rebuilt in the same write: nothing queued, no LLM call
    memory = service.call("GET", MEMORY).body
    assert "Berlin" not in memory["memory"] and "Paris" in memory["memory"]
    job = service.call("GET", f"/v1/tenants/{T}/jobs/{job_id}").body
    assert job["status"] == "completed" and job["memory_version"] == memory["version"]
    export = json.dumps(service.call("GET", MEMORY + "/export").body)
    assert "Berlin" not in export
    # Recall reads the episodes again (their count went down with the forget): the turn is gone there too.
    found = service.call("POST", MEMORY + "/query", {"query": "moved to Berlin", "types": ["episode"]}).body
    assert [result["id"] for result in found["results"]] == ["t1"]


def test_forgetting_the_user_erases_its_records(service: Any) -> None:
    move_to_berlin(service)
    assert service.call("DELETE", MEMORY).status == 204
    assert records(service, include_invalidated="true") == []
