"""On DynamoDB (its change stream), EventBridge and SQS (moto): what the service does reaches the
bus as the four detail types, each change at least once under a stable event_id, none for a write
that did not commit, and no content (docs/architecture.md "Events")."""

import base64
import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.config import Config

from hippocampus import wiring
from hippocampus.adapters import aws_clients
from hippocampus.adapters.dynamodb_memory import DynamoMemoryStore
from hippocampus.adapters.dynamodb_table import Table
from hippocampus.contracts.errors import ConditionFailed
from hippocampus.contracts.ports import MemoryWrite
from tests.support.lambda_harness import Context, Service

TENANT = "/v1/tenants/acme"
USER = f"{TENANT}/users/alice/memory"
BUS = "hippocampus-test"


class Stream:
    """The table's change stream, read from where the last read ended, as Lambda would hand it."""

    def __init__(self, table_name: str, start: str = "LATEST") -> None:
        dynamodb = boto3.client("dynamodb")
        description = dynamodb.describe_table(TableName=table_name)["Table"]
        if not description.get("StreamSpecification", {}).get("StreamEnabled"):
            description = dynamodb.update_table(
                TableName=table_name,
                StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
            )["TableDescription"]
        self._arn = description["LatestStreamArn"]
        # moto knows the regional endpoint, not the account-based one botocore picks for a stream ARN.
        self._streams = boto3.client("dynamodbstreams", config=Config(account_id_endpoint_mode="disabled"))
        shard = self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"]["Shards"][0]
        self._iterator = self._streams.get_shard_iterator(
            StreamArn=self._arn, ShardId=shard["ShardId"], ShardIteratorType=start
        )["ShardIterator"]

    def batch(self) -> dict[str, Any]:
        """The next records, in the JSON Lambda hands a function: binaries in base64, times in epoch seconds."""
        page = self._streams.get_records(ShardIterator=self._iterator)
        self._iterator = page["NextShardIterator"]
        records = [{**record, "eventSourceARN": self._arn} for record in page["Records"]]
        return {"Records": json.loads(json.dumps(records, default=_as_lambda_sends))}


def _as_lambda_sends(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime):
        return value.timestamp()
    raise TypeError(type(value))


@pytest.fixture
def bus(aws, monkeypatch) -> str:
    """A bus whose every `hippocampus` event lands on a queue; the queue's URL."""
    events, sqs = boto3.client("events"), boto3.client("sqs")
    events.create_event_bus(Name=BUS)
    queue_url = sqs.create_queue(QueueName="events-test")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events.put_rule(Name="all", EventBusName=BUS, EventPattern=json.dumps({"source": ["hippocampus"]}))
    events.put_targets(Rule="all", EventBusName=BUS, Targets=[{"Id": "queue", "Arn": queue_arn}])
    monkeypatch.setenv("MEMORY_EVENT_BUS_NAME", BUS)
    wiring.reset()
    return queue_url


def published(queue_url: str) -> list[dict[str, Any]]:
    sqs = boto3.client("sqs")
    found: list[dict[str, Any]] = []
    while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            found.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return found


def relay(stream: Stream) -> dict[str, Any]:
    """One batch of the stream through the events function; its batch failures."""
    return wiring.events_handler()(stream.batch(), Context())


def test_what_the_service_does_is_published_once_per_change_with_ids_and_counts_only(aws, bus):
    stream = Stream(aws.table_name)
    service = Service(aws.queue_url, boto3.client("sqs"))
    turn = service.call("POST", USER, {"items": [{"id": "t1", "text": "I live in Paris and sell candles."}]})
    service.drain()
    assert relay(stream) == {"batchItemFailures": []}
    events = published(bus)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        assert event["source"] == "hippocampus"
        by_type.setdefault(event["detail-type"], []).append(event["detail"])
    [memory] = by_type["Memory Updated"]
    assert (memory["version"], memory["previous_version"], memory["user_id"]) == (1, 0, "alice")
    [job] = by_type["Job Finished"]
    assert (job["job_id"], job["status"], job["memory_version"]) == (
        turn.body["jobs"][0]["job_id"],
        "completed",
        1,
    )
    assert {record["change"] for record in by_type["Records Changed"]} == {"added"}
    assert not any(word in json.dumps(events) for word in ("Paris", "candles"))

    answer = service.call("DELETE", USER)
    relay(stream)
    forgotten = [e["detail"] for e in published(bus) if e["detail-type"] == "User Forgotten"]
    assert [detail["receipt_id"] for detail in forgotten] == [answer.headers["deletion-receipt"]]
    assert forgotten[0]["erased"]["dynamodb"]["memory"] == 1


def test_a_batch_delivered_again_publishes_the_same_event_ids(aws, bus):
    stream = Stream(aws.table_name)
    service = Service(aws.queue_url, boto3.client("sqs"))
    service.call("PUT", USER, {"memory": "Alice.", "expected_version": 0})
    batch = stream.batch()
    handler = wiring.events_handler()
    handler(batch, Context())
    handler(batch, Context())  # Lambda's retry of the same records
    ids = [
        event["detail"]["event_id"] for event in published(bus) if event["detail-type"] == "Memory Updated"
    ]
    assert len(ids) == 2 and ids[0] == ids[1]


def test_a_write_that_did_not_commit_is_no_event(aws, bus):
    Stream(aws.table_name)  # the stream on
    store = DynamoMemoryStore(Table(aws.table_name, lambda: aws_clients.client("dynamodb")))
    lost = MemoryWrite("acme", "alice", 5, 0, "Alice sells candles.", 3, datetime.now(UTC))
    with pytest.raises(ConditionFailed):
        store.write_memory(lost)  # at version 0, not 5
    # Everything the stream holds, from its start (moto's rollback replaces the table, and with it
    # the shard an earlier reader would follow).
    stream = Stream(aws.table_name, start="TRIM_HORIZON")
    Service(aws.queue_url, boto3.client("sqs")).call("PUT", USER, {"memory": "Alice.", "expected_version": 0})
    relay(stream)
    updates = [event["detail"] for event in published(bus) if event["detail-type"] == "Memory Updated"]
    assert [(detail["version"], detail["word_count"]) for detail in updates] == [(1, 1)]


def test_an_event_the_bus_refuses_fails_its_record_for_a_retry(aws, bus, monkeypatch):
    stream = Stream(aws.table_name)
    Service(aws.queue_url, boto3.client("sqs")).call("PUT", USER, {"memory": "Alice.", "expected_version": 0})
    monkeypatch.setenv("MEMORY_EVENT_BUS_NAME", "no-such-bus")
    wiring.reset()
    answer = relay(stream)
    assert len(answer["batchItemFailures"]) == 1
