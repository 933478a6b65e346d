"""The local stack's moto keeps DynamoDB's promises under concurrent requests, as AWS does."""

import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.table import Table

from local_stack.moto_endpoint import MotoEndpoint

TABLE = "race"
ROUNDS, WRITERS = 10, 8


@pytest.fixture(scope="module")
def dynamodb() -> Iterator[Any]:
    endpoint = MotoEndpoint()
    url = endpoint.start()
    client = boto3.client(
        "dynamodb",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(max_pool_connections=WRITERS + 2, retries={"mode": "standard", "max_attempts": 1}),
    )
    client.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    # Enough items that moto's copy of the table for a transaction takes a while.
    for start in range(0, 2000, 25):
        items = [
            {"PutRequest": {"Item": {"pk": {"S": f"f{n}"}, "text": {"S": "x" * 200}}}}
            for n in range(start, start + 25)
        ]
        client.batch_write_item(RequestItems={TABLE: items})
    yield client
    endpoint.stop()


def race(dynamodb: Any, expected: int) -> list[int]:
    """WRITERS concurrent conditional updates expecting `expected`; the writers that succeeded."""
    winners: list[int] = []
    start = threading.Barrier(WRITERS)

    def write(writer: int) -> None:
        start.wait()
        try:
            dynamodb.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": TABLE,
                            "Key": {"pk": {"S": "memory"}},
                            "UpdateExpression": "SET version = :next, writer = :writer",
                            "ConditionExpression": "version = :expected",
                            "ExpressionAttributeValues": {
                                ":expected": {"N": str(expected)},
                                ":next": {"N": str(expected + 1)},
                                ":writer": {"N": str(writer)},
                            },
                        }
                    }
                ]
            )
            winners.append(writer)
        except ClientError as error:
            assert error.response["Error"]["Code"] == "TransactionCanceledException"

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return winners


def test_two_conditional_writers_never_both_win(dynamodb):
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "memory"}, "version": {"N": "0"}})
    for version in range(ROUNDS):
        winners = race(dynamodb, version)
        assert len(winners) == 1
        item = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": "memory"}})["Item"]
        assert item["version"]["N"] == str(version + 1) and item["writer"]["N"] == str(winners[0])


def test_a_failed_transaction_never_undoes_nor_breaks_another_request(dynamodb):
    stop = threading.Event()
    failures: list[str] = []

    def failing_transactions() -> None:
        check = {
            "TableName": TABLE,
            "Key": {"pk": {"S": "absent"}},
            "ConditionExpression": "attribute_exists(pk)",
        }
        while not stop.is_set():
            try:
                dynamodb.transact_write_items(TransactItems=[{"ConditionCheck": check}])
            except ClientError as error:
                if error.response["Error"]["Code"] != "TransactionCanceledException":
                    failures.append(error.response["Error"]["Code"])

    loser = threading.Thread(target=failing_transactions)
    loser.start()
    acknowledged = []
    try:
        for n in range(150):
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"acked-{n}"}})
            acknowledged.append(f"acked-{n}")
    finally:
        stop.set()
        loser.join()
    lost = [k for k in acknowledged if "Item" not in dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": k}})]
    assert (lost, failures) == ([], [])


# --- a transaction's rollback and a query touch only their items (local_stack/moto_dynamodb.py) ------


def _text(dynamodb: Any, table: str, key: dict[str, Any]) -> str | None:
    item = dynamodb.get_item(TableName=table, Key=key).get("Item")
    return None if item is None else str(item["text"]["S"])


@pytest.fixture(scope="module")
def ranged(dynamodb: Any) -> str:
    """A table with a sort key, as the memory table has."""
    dynamodb.create_table(
        TableName="ranged",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    )
    for n in range(3):
        dynamodb.put_item(
            TableName="ranged", Item={"pk": {"S": "u"}, "sk": {"S": f"v{n}"}, "text": {"S": f"old {n}"}}
        )
    return "ranged"


def _writes(ranged: str, fail: bool) -> list[dict[str, Any]]:
    return [
        {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "created"}, "text": {"S": "new"}}}},
        {"Put": {"TableName": ranged, "Item": {"pk": {"S": "u"}, "sk": {"S": "v9"}, "text": {"S": "new"}}}},
        {"Put": {"TableName": ranged, "Item": {"pk": {"S": "u"}, "sk": {"S": "v0"}, "text": {"S": "new"}}}},
        {
            "Update": {
                "TableName": ranged,
                "Key": {"pk": {"S": "u"}, "sk": {"S": "v1"}},
                "UpdateExpression": "SET #t = :t",
                "ExpressionAttributeNames": {"#t": "text"},
                "ExpressionAttributeValues": {":t": {"S": "new"}},
            }
        },
        {"Delete": {"TableName": ranged, "Key": {"pk": {"S": "u"}, "sk": {"S": "v2"}}}},
        {
            "ConditionCheck": {
                "TableName": TABLE,
                "Key": {"pk": {"S": "f0"}},
                "ConditionExpression": "attribute_not_exists(pk)" if fail else "attribute_exists(pk)",
            }
        },
    ]


def _state(dynamodb: Any, ranged: str) -> list[str | None]:
    keys = [{"pk": {"S": "u"}, "sk": {"S": sk}} for sk in ("v0", "v1", "v2", "v9")]
    return [_text(dynamodb, TABLE, {"pk": {"S": "created"}})] + [_text(dynamodb, ranged, k) for k in keys]


def test_a_failed_transaction_leaves_every_item_as_it_was(dynamodb, ranged, monkeypatch):
    copied: list[str] = []
    # moto used to deep-copy each table for the rollback: O(table size) per transaction.
    monkeypatch.setattr(Table, "__deepcopy__", lambda table, memo: copied.append(table.name), raising=False)
    with pytest.raises(ClientError) as failure:
        dynamodb.transact_write_items(TransactItems=_writes(ranged, fail=True))
    assert failure.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert _state(dynamodb, ranged) == [None, "old 0", "old 1", "old 2", None]
    page = dynamodb.query(
        TableName=ranged, KeyConditionExpression="pk = :u", ExpressionAttributeValues={":u": {"S": "u"}}
    )
    assert [item["sk"]["S"] for item in page["Items"]] == ["v0", "v1", "v2"]
    assert copied == []


def test_a_successful_transaction_applies_every_write_without_copying_a_table(dynamodb, ranged, monkeypatch):
    copied: list[str] = []
    monkeypatch.setattr(Table, "__deepcopy__", lambda table, memo: copied.append(table.name), raising=False)
    dynamodb.transact_write_items(TransactItems=_writes(ranged, fail=False))
    assert _state(dynamodb, ranged) == ["new", "new", "new", None, "new"]
    page = dynamodb.query(
        TableName=ranged,
        KeyConditionExpression="pk = :u AND sk > :v",
        ExpressionAttributeValues={":u": {"S": "u"}, ":v": {"S": "v0"}},
        ScanIndexForward=False,
    )
    assert [item["sk"]["S"] for item in page["Items"]] == ["v9", "v1"]
    assert copied == []


def test_moto_still_copies_every_table_a_transaction_touches(dynamodb, ranged, monkeypatch):
    """When this fails, moto's rollback no longer copies tables: drop `_item_rollback` (and the `copy`
    replacement) from local_stack/moto_dynamodb.py."""
    copied: list[str] = []
    monkeypatch.setattr(Table, "__deepcopy__", lambda table, memo: copied.append(table.name), raising=False)
    backend_class: Any = dynamodb_models.DynamoDBBackend
    monkeypatch.setattr(dynamodb_models, "copy", vars(dynamodb_models)["moto_copy"])
    monkeypatch.setattr(backend_class, "transact_write_items", backend_class.moto_transact_write_items)
    dynamodb.transact_write_items(TransactItems=_writes(ranged, fail=False))
    assert set(copied) == {TABLE, ranged}  # once for each of its writes


@pytest.fixture
def items_scanned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many items moto's `Table.all_items` handed out (every item of its table)."""
    scanned = [0]
    real = Table.all_items

    def all_items(table: Any) -> Any:
        for item in real(table):
            scanned[0] += 1
            yield item

    monkeypatch.setattr(Table, "all_items", all_items)
    return scanned


def _query_q(dynamodb: Any, ranged: str) -> list[str]:
    page = dynamodb.query(
        TableName=ranged, KeyConditionExpression="pk = :q", ExpressionAttributeValues={":q": {"S": "q"}}
    )
    return [item["sk"]["S"] for item in page["Items"]]


def _other_partition(dynamodb: Any, ranged: str) -> None:
    """Partition `q` (v0, v1, v9) among 20 items of another partition, whatever the other tests wrote."""
    for sk in ("v9", "v0", "v1"):
        dynamodb.put_item(TableName=ranged, Item={"pk": {"S": "q"}, "sk": {"S": sk}})
    for n in range(20):
        dynamodb.put_item(TableName=ranged, Item={"pk": {"S": "other"}, "sk": {"S": f"v{n}"}})


def test_a_query_reads_only_its_partition(dynamodb, ranged, items_scanned):
    _other_partition(dynamodb, ranged)
    assert _query_q(dynamodb, ranged) == ["v0", "v1", "v9"]
    assert items_scanned == [0]


def test_moto_still_reads_the_whole_table_for_a_query(dynamodb, ranged, items_scanned, monkeypatch):
    """When this fails, moto's query reads its partition only: drop `_partition_query` from
    local_stack/moto_dynamodb.py."""
    _other_partition(dynamodb, ranged)
    monkeypatch.setattr(Table, "query", Table.moto_query)  # type: ignore[attr-defined]
    assert _query_q(dynamodb, ranged) == ["v0", "v1", "v9"]
    assert items_scanned[0] >= 20 + 3


def test_a_query_of_an_index_finds_its_items(dynamodb):
    dynamodb.create_table(
        TableName="indexed",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "owner", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-owner",
                "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    for n in range(3):
        dynamodb.put_item(TableName="indexed", Item={"pk": {"S": f"p{n}"}, "owner": {"S": "alice"}})
    page = dynamodb.query(
        TableName="indexed",
        IndexName="by-owner",
        KeyConditionExpression="#o = :o",
        ExpressionAttributeNames={"#o": "owner"},
        ExpressionAttributeValues={":o": {"S": "alice"}},
    )
    assert sorted(item["pk"]["S"] for item in page["Items"]) == ["p0", "p1", "p2"]
