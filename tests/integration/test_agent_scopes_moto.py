"""Agent scopes on DynamoDB, S3 and SQS (moto), through the deployed functions' handlers: an agent's
private memory is condensed apart and merged on its reads; forgetting the user leaves nothing of any
agent's scope; the tenant's users list never shows an agent; and the change stream names the agent
(docs/api.md "Agent scopes", docs/architecture.md "Agent scopes")."""

from typing import Any

import boto3

from hippocampus.adapters import aws_clients
from hippocampus.adapters.dynamodb_agents import DynamoDbAgentRegistry
from hippocampus.adapters.dynamodb_stream import stored_change
from hippocampus.adapters.dynamodb_table import Table
from hippocampus.domain.events.changes import event_of

TENANT = "/v1/tenants/acme"
SHARED = f"{TENANT}/users/alice/memory"
RESEARCH = f"{TENANT}/users/alice/agents/research/memory"
WRITER = f"{TENANT}/users/alice/agents/writer/memory"


def ok(result: Any) -> Any:
    assert result.status < 300, (result.status, result.body)
    return result.body if result.body is not None else result.headers


def agents_items(aws) -> list[dict[str, Any]]:
    """Every item of an agent's scope of alice, or of the list of alice's agents."""
    items = boto3.client("dynamodb").scan(TableName=aws.table_name)["Items"]
    return [
        item for item in items if item["pk"]["S"].startswith(("T#acme#U#alice#A#", "T#acme#U#alice#AGENTS"))
    ]


def agents_objects(aws) -> list[str]:
    objects = boto3.client("s3").list_objects_v2(Bucket=aws.bucket_name).get("Contents", [])
    return [obj["Key"] for obj in objects if "/alice#A#" in obj["Key"]]


def test_an_agents_private_turns_are_condensed_apart_and_read_with_the_shared_memory(service):
    ok(service.call("POST", SHARED, {"items": [{"id": "s1", "text": "I live in Leeds and keep bees."}]}))
    ok(service.call("POST", RESEARCH, {"items": [{"id": "r1", "text": "I am researching coral reefs."}]}))
    ok(service.call("POST", WRITER, {"items": [{"id": "w1", "text": "I write poems about the sea."}]}))
    service.drain()

    research = ok(service.call("GET", RESEARCH))
    assert "reef" in research["scopes"]["agent"]["memory"].lower()
    assert "Leeds" in research["scopes"]["shared"]["memory"]
    assert "poem" not in str(research).lower()
    assert "reef" not in ok(service.call("GET", SHARED))["memory"].lower()
    found = ok(service.call("POST", RESEARCH + "/query", {"query": "coral reefs and bees"}))
    assert {result["scope"] for result in found["results"]} == {"shared", "agent"}
    assert all("poem" not in result["text"].lower() for result in found["results"])
    # The users list shows the user, never an agent's scope.
    assert ok(service.call("GET", f"{TENANT}/users"))["items"] == [{"user_id": "alice"}]


def test_forgetting_the_user_leaves_nothing_of_any_agents_scope(service, aws):
    ok(service.call("POST", RESEARCH, {"items": [{"id": "r1", "text": "I am researching coral reefs."}]}))
    ok(service.call("POST", RESEARCH, {"items": [{"id": "f1", "text": "Uses Zotero.", "infer": False}]}))
    ok(service.call("POST", WRITER, {"items": [{"id": "w1", "text": "Write warmly."}]}))
    service.drain()
    ok(service.call("POST", WRITER, {"items": [{"id": "w2", "text": "Keep it short."}]}))  # still queued
    assert agents_objects(aws) and len(agents_items(aws)) > 4

    receipt_id = ok(service.call("DELETE", SHARED))["deletion-receipt"]
    service.drain()

    # What stays of a scope is its tombstone: the generation, no content (as for a user).
    left = agents_items(aws)
    assert {item["sk"]["S"] for item in left} == {"MEMORY"}
    assert all(set(item) <= {"pk", "sk", "generation", "version", "word_count"} for item in left), left
    assert agents_objects(aws) == []
    receipt = ok(service.call("GET", f"{SHARED}/deletions/{receipt_id}"))
    assert receipt["erased"]["dynamodb"]["agent_scopes"] == 2
    assert receipt["erased"]["dynamodb"]["facts"] == 1
    assert receipt["erased"]["queue"]["messages_skipped"] == 1
    read = ok(service.call("GET", RESEARCH))
    assert read["scopes"]["agent"]["memory"] is None and read["scopes"]["agent"]["facts"] == []


def test_forgetting_one_agent_keeps_the_others_and_the_shared_memory(service, aws):
    ok(service.call("POST", SHARED, {"items": [{"id": "s1", "text": "Lives in Leeds.", "infer": False}]}))
    ok(service.call("POST", RESEARCH, {"items": [{"id": "r1", "text": "Studies reefs.", "infer": False}]}))
    ok(service.call("POST", WRITER, {"items": [{"id": "w1", "text": "Likes haiku.", "infer": False}]}))

    receipt_id = ok(service.call("DELETE", RESEARCH))["deletion-receipt"]

    receipt = ok(service.call("GET", f"{RESEARCH}/deletions/{receipt_id}"))
    assert (receipt["scope"], receipt["agent_id"], receipt["erased"]["dynamodb"]["facts"]) == (
        "agent",
        "research",
        1,
    )
    assert [fact["id"] for fact in ok(service.call("GET", SHARED))["facts"]] == ["s1"]
    assert [fact["id"] for fact in ok(service.call("GET", WRITER))["scopes"]["agent"]["facts"]] == ["w1"]
    listed = boto3.client("dynamodb").query(
        TableName=aws.table_name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "T#acme#U#alice#AGENTS"}},
    )["Items"]
    assert [item["agent_id"]["S"] for item in listed] == ["writer"]


def test_the_change_stream_names_the_agent_of_a_private_change(service, aws):
    ok(service.call("POST", RESEARCH, {"items": [{"id": "r1", "text": "I am researching coral reefs."}]}))
    service.drain()
    item = boto3.client("dynamodb").get_item(
        TableName=aws.table_name, Key={"pk": {"S": "T#acme#U#alice#A#research"}, "sk": {"S": "MEMORY"}}
    )["Item"]
    record = {"eventID": "e-1", "dynamodb": {"Keys": {"pk": item["pk"], "sk": item["sk"]}, "NewImage": item}}
    change = stored_change(record)
    assert change is not None
    event = event_of(change)
    assert event is not None
    detail = event.detail.model_dump(mode="json")
    assert (detail["user_id"], detail["agent_id"], detail["version"]) == ("alice", "research", 1)


def test_a_delete_unlists_an_agent_only_as_it_read_the_listing(aws):
    registry = DynamoDbAgentRegistry(Table(aws.table_name, lambda: aws_clients.client("dynamodb")))
    registry.register("acme", "alice", "research")
    registry.register("acme", "alice", "writer")
    read = registry.listed("acme", "alice")
    registry.register("acme", "alice", "writer")  # a write listed it again after the delete read
    registry.unregister("acme", "alice", read)
    assert set(registry.listed("acme", "alice")) == {"writer"}
    registry.unregister("acme", "alice", registry.listed("acme", "alice"))
    assert registry.listed("acme", "alice") == {}
