"""The local stack's moto keeps a table's stream as DynamoDB does, in bounded memory: a failed
transaction leaves no record in it (local_stack/moto_dynamodb.py), a shard keeps its newest records
and the backend its newest iterators (local_stack/moto_streams.py)."""

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.table import StreamShard
from moto.dynamodbstreams import models as streams_models

from local_stack import moto_streams
from local_stack.aws import aws_client
from local_stack.moto_endpoint import MotoEndpoint
from local_stack.paths import ACCOUNT_ID

REGION = "us-east-1"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    moto = MotoEndpoint()
    url = moto.start()
    yield url
    moto.stop()


@pytest.fixture
def table(endpoint: str) -> str:
    name = f"streamed-{uuid.uuid4().hex[:8]}"
    aws_client("dynamodb", endpoint, REGION).create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    return name


def put(endpoint: str, table: str, *keys: str) -> None:
    for key in keys:
        aws_client("dynamodb", endpoint, REGION).put_item(TableName=table, Item={"pk": {"S": key}})


def iterator(
    endpoint: str, table: str, kind: str = "TRIM_HORIZON", sequence_number: str | None = None
) -> str:
    arn = aws_client("dynamodb", endpoint, REGION).describe_table(TableName=table)["Table"]["LatestStreamArn"]
    streams = aws_client("dynamodbstreams", endpoint, REGION)
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    where = {"SequenceNumber": sequence_number} if sequence_number else {}
    answer = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType=kind, **where)
    return str(answer["ShardIterator"])


def records(endpoint: str, table: str, **where: Any) -> list[tuple[str, str]]:
    """(key, sequence number) of what the stream holds from `where` (its start by default)."""
    page = aws_client("dynamodbstreams", endpoint, REGION).get_records(
        ShardIterator=iterator(endpoint, table, **where)
    )
    return [(r["dynamodb"]["Keys"]["pk"]["S"], r["dynamodb"]["SequenceNumber"]) for r in page["Records"]]


def moto_table(table: str) -> Any:
    return dynamodb_models.dynamodb_backends[ACCOUNT_ID][REGION].tables[table]


def test_a_failed_transaction_leaves_no_stream_record_and_the_same_shard(endpoint: str, table: str) -> None:
    put(endpoint, table, "before")
    shard = moto_table(table).stream_shard
    writes = [
        {"Put": {"TableName": table, "Item": {"pk": {"S": "applied-then-rolled-back"}}}},
        {
            "Put": {
                "TableName": table,
                "Item": {"pk": {"S": "refused"}},
                "ConditionExpression": "attribute_exists(pk)",
            }
        },
    ]
    with pytest.raises(ClientError):
        aws_client("dynamodb", endpoint, REGION).transact_write_items(TransactItems=writes)
    put(endpoint, table, "after")
    assert [key for key, _ in records(endpoint, table)] == ["before", "after"]
    assert moto_table(table).stream_shard is shard  # a reader's iterator still follows the shard written to


def test_a_shard_keeps_its_newest_records_and_a_read_from_before_them_starts_at_the_oldest(
    endpoint: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(endpoint, table, "k0")
    [(_, first)] = records(endpoint, table)
    monkeypatch.setattr(moto_streams, "KEPT_RECORDS", 3)
    put(endpoint, table, "k1", "k2", "k3", "k4")
    kept = records(endpoint, table)
    assert [key for key, _ in kept] == ["k2", "k3", "k4"]
    assert [int(number) - int(first) for _, number in kept] == [2, 3, 4]  # numbers go on as before
    assert (
        records(endpoint, table, kind="AT_SEQUENCE_NUMBER", sequence_number=first) == kept
    )  # trimmed: no 500


def test_the_backend_keeps_its_newest_iterators(
    endpoint: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(moto_streams, "KEPT_ITERATORS", 3)
    put(endpoint, table, "k0")
    for _ in range(10):
        records(endpoint, table)
    assert len(streams_models.dynamodbstreams_backends[ACCOUNT_ID][REGION].shard_iterators) <= 3
    assert [key for key, _ in records(endpoint, table)] == ["k0"]


def test_moto_still_keeps_every_stream_record(
    endpoint: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When this fails, moto trims a stream itself: drop `_trimmed` and `_from_the_oldest_kept` from
    local_stack/moto_streams.py."""
    monkeypatch.setattr(moto_streams, "KEPT_RECORDS", 3)
    shard_class: Any = StreamShard
    monkeypatch.setattr(shard_class, "add", shard_class.moto_add)
    put(endpoint, table, "k0", "k1", "k2", "k3", "k4")
    assert len(moto_table(table).stream_shard.items) == 5


def test_moto_still_keeps_every_shard_iterator(
    endpoint: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When this fails, moto forgets old iterators itself: drop `_newest_iterators` from
    local_stack/moto_streams.py."""
    monkeypatch.setattr(moto_streams, "KEPT_ITERATORS", 3)
    backend_class: Any = streams_models.DynamoDBStreamsBackend
    monkeypatch.setattr(backend_class, "get_shard_iterator", backend_class.moto_get_shard_iterator)
    monkeypatch.setattr(backend_class, "get_records", backend_class.moto_get_records)
    iterators = streams_models.dynamodbstreams_backends[ACCOUNT_ID][REGION].shard_iterators
    iterators.clear()
    for _ in range(5):
        records(endpoint, table)
    assert len(iterators) == 10  # one handed out by each GetShardIterator and each GetRecords
