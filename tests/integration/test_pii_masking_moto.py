"""On DynamoDB, S3 and SQS (moto), with MEMORY_PII=mask and the pattern detector: nothing stored
from an item holds a value it carried, a query still finds it, and forgetting the user erases its
placeholders (docs/architecture.md "PII masking")."""

from types import SimpleNamespace

import boto3
import pytest

from hippocampus import wiring
from hippocampus.adapters import aws_clients
from hippocampus.adapters.s3 import S3Archive
from tests.support.lambda_harness import Service

USER = "/v1/tenants/acme/users/alice/memory"
EMAIL, PHONE, CARD, IBAN = (
    "alice.smith@example.com",
    "+44 20 7946 0958",
    "5555-5555-5555-4444",
    "GB82 WEST 1234 5698 7654 32",
)
# As written and as each value's canonical form (which a digest is made of, and nothing else holds):
# long enough that no id, digest or time stored beside them can hold one by chance.
ORIGINALS = (
    "alice.smith",
    "7946 0958",
    "442079460958",
    "5555-5555",
    "5555555555554444",
    "GB82 WEST",
    "GB82WEST",
)


@pytest.fixture
def service(aws, monkeypatch):
    monkeypatch.setenv("MEMORY_PII", "mask")
    wiring.reset()
    return Service(aws.queue_url, boto3.client("sqs"))


def everything_stored(aws) -> str:
    """Every item of the table and every object of the bucket, as text."""
    table = str(boto3.client("dynamodb").scan(TableName=aws.table_name)["Items"])
    s3 = boto3.client("s3")
    objects = s3.list_objects_v2(Bucket=aws.bucket_name).get("Contents", [])
    bodies = [
        s3.get_object(Bucket=aws.bucket_name, Key=obj["Key"])["Body"].read().decode() for obj in objects
    ]
    return table + "".join(bodies)


def placeholder_items(aws) -> int:
    items = boto3.client("dynamodb").scan(TableName=aws.table_name)["Items"]
    return sum(item["sk"]["S"].startswith("PII#") for item in items)


def test_nothing_stored_holds_a_value_and_a_query_still_finds_it(service, aws):
    turns = [
        {"id": "t1", "text": f"My email is {EMAIL}; write to {EMAIL}. My card is {CARD}."},
        {"id": "t2", "text": f"Call me on {PHONE}. Rent goes to {IBAN}."},
    ]
    assert service.call("POST", USER, {"items": turns}).status == 202
    fact = {"id": "f1", "text": f"Backup email {EMAIL}", "infer": False}
    assert service.call("POST", USER, {"items": [fact]}).status == 202
    service.drain()

    stored = everything_stored(aws)
    assert not any(original in stored for original in ORIGINALS)
    listed = service.call("GET", f"{USER}/episodes")
    assert listed.status == 200, listed.body
    episodes = listed.body["episodes"]
    texts = " ".join(episode["text"] for episode in episodes)
    assert (
        texts.count("[EMAIL_1]") == 2 and "[CARD_1]" in texts and "[PHONE_1]" in texts and "[IBAN_1]" in texts
    )
    assert service.call("GET", USER).body["facts"][0]["text"] == "Backup email [EMAIL_1]"
    # The raw payloads are gone once their jobs completed.
    assert not boto3.client("s3").list_objects_v2(Bucket=aws.bucket_name, Prefix="raw/").get("Contents")

    answer = service.call("POST", f"{USER}/query", {"query": f"Which card did {EMAIL} give?", "top_k": 3})
    assert answer.status == 200
    assert any("[EMAIL_1]" in result["text"] for result in answer.body["results"])


def test_forgetting_the_user_erases_its_placeholders_and_counts_them(service, aws):
    service.call("POST", USER, {"items": [{"id": "t1", "text": f"Mail {EMAIL} or call {PHONE}."}]})
    service.drain()
    numbered = placeholder_items(aws)
    assert numbered == 3  # the user's key and two values

    answer = service.call("DELETE", USER)
    receipt = service.call("GET", f"{USER}/deletions/{answer.headers['deletion-receipt']}").body
    assert receipt["erased"]["dynamodb"]["pii_placeholders"] == numbered
    assert placeholder_items(aws) == 0
    # A new life numbers afresh.
    service.call(
        "POST", USER, {"items": [{"id": "t2", "text": f"New phone {PHONE}, new mail bob@example.org."}]}
    )
    service.drain()
    texts = [episode["text"] for episode in service.call("GET", f"{USER}/episodes").body["episodes"]]
    assert texts == ["New phone [PHONE_1], new mail [EMAIL_1]."]


def test_a_payload_erased_by_a_delete_while_it_is_rewritten_stays_erased(aws):
    """The rewrite writes back only the object it read: a delete's sweep in between wins."""
    archive = S3Archive(aws.bucket_name, lambda: aws_clients.client("s3"))
    key = archive.put_raw("acme", "alice", 0, "r1", {"items": [{"text": "a"}, {"text": "b"}]})
    s3 = boto3.client("s3")
    real_get = s3.get_object

    def get_then_sweep(**request):
        answer = real_get(**request)
        s3.delete_object(Bucket=aws.bucket_name, Key=key)  # the user's delete, right after the read
        return answer

    client = SimpleNamespace(
        get_object=get_then_sweep, put_object=s3.put_object, delete_object=s3.delete_object
    )
    assert S3Archive(aws.bucket_name, lambda: client).forget_raw_item(key, 0) == "absent"
    assert "Contents" not in s3.list_objects_v2(Bucket=aws.bucket_name, Prefix="raw/")


def test_an_agents_scope_gives_a_value_the_users_placeholder(service, aws):
    agent = "/v1/tenants/acme/users/alice/agents/research/memory"
    service.call("POST", USER, {"items": [{"id": "t1", "text": f"My email is {EMAIL}."}]})
    service.drain()
    service.call(
        "POST", agent, {"items": [{"id": "r1", "text": f"Send the papers to {EMAIL} and bob@example.org."}]}
    )
    service.call("POST", agent, {"items": [{"id": "f1", "text": f"Reviewer: {EMAIL}", "infer": False}]})
    service.drain()

    assert not any(original in everything_stored(aws) for original in ORIGINALS)
    read = service.call("GET", agent).body
    assert read["scopes"]["agent"]["facts"][0]["text"] == "Reviewer: [EMAIL_1]"  # the user's number
    episodes = service.call("GET", f"{agent}/episodes").body["episodes"]
    assert "[EMAIL_1]" in episodes[0]["text"] and "[EMAIL_2]" in episodes[0]["text"]
    found = service.call("POST", f"{agent}/query", {"query": f"papers for {EMAIL}", "top_k": 5}).body
    assert {result["scope"] for result in found["results"] if "[EMAIL_1]" in result["text"]} == {
        "shared",
        "agent",
    }
    # Numbered once, in the user's partition: the user's key and two values.
    assert placeholder_items(aws) == 3
