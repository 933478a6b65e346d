"""The local stack's moto keeps DynamoDB's promises under concurrent requests, as AWS does."""

import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

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
