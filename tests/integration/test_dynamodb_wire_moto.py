"""A Query's items, taken from the JSON as it came (adapters/dynamodb_wire.py), are the items
botocore would have parsed: every attribute type, nested binaries, pages and errors alike."""

from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from hippocampus.adapters import aws_clients
from hippocampus.adapters.dynamodb_items import decoded_all
from hippocampus.adapters.dynamodb_table import values

EVERY_TYPE = {
    "pk": "u#1",
    "sk": "FACT#a",
    "text": "Prefers SMS over email. \u00e9\u00e8 \U0001f600",
    "count": 3,
    "ratio": Decimal("0.25"),
    "vector": b"\x00\x3c\xff\xfe",
    "empty": b"",
    "flag": True,
    "nothing": None,
    "nested": {"deep": {"bytes": b"\x01\x02", "words": ["a", "b"]}, "n": 1},
    "listed": [b"\x03", "x", 2, {"k": b"\x04"}],
    "strings": {"s1", "s2"},
    "numbers": {1, 2},
    "binaries": {b"\x05", b"\x06"},
}


def query(client: Any, table: str, **extra: Any) -> dict[str, Any]:
    page: dict[str, Any] = client.query(
        TableName=table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "u#1"}},
        ConsistentRead=True,
        **extra,
    )
    page.pop("ResponseMetadata")
    return page


def test_every_attribute_type_and_every_page_is_what_botocore_parses(aws: Any) -> None:
    plain = boto3.client("dynamodb")  # botocore's own parsing
    wired = aws_clients.client("dynamodb")
    handed_over: list[int] = []  # a handler after ours sees the items it took from the JSON

    def spy(customized_response_dict: dict[str, Any], **_: Any) -> None:
        handed_over.append(len(customized_response_dict.get("Items", [])))

    wired.meta.events.register("before-parse.dynamodb.Query", spy)
    items = [EVERY_TYPE] + [
        {"pk": "u#1", "sk": f"EPISODE#{n:04d}", "text": f"turn {n}", "vector": bytes([n])} for n in range(30)
    ]
    for item in items:
        plain.put_item(TableName=aws.table_name, Item=values(item))
    assert query(wired, aws.table_name) == query(plain, aws.table_name)
    assert handed_over == [31]
    [fact] = [item for item in decoded_all(query(wired, aws.table_name)["Items"]) if item["sk"] == "FACT#a"]
    assert fact == EVERY_TYPE
    first, second = query(wired, aws.table_name, Limit=7), query(plain, aws.table_name, Limit=7)
    assert first == second and first["LastEvaluatedKey"]  # the page's key parsed as usual
    onward = {"ExclusiveStartKey": first["LastEvaluatedKey"], "Limit": 7}
    assert query(wired, aws.table_name, **onward) == query(plain, aws.table_name, **onward)


def test_an_error_answer_is_parsed_as_botocore_parses_it(aws: Any) -> None:
    errors = []
    for client in (boto3.client("dynamodb"), aws_clients.client("dynamodb")):
        with pytest.raises(ClientError) as raised:
            query(client, "no-such-table")
        errors.append(raised.value.response["Error"])
    assert errors[0] == errors[1] and errors[0]["Code"] == "ResourceNotFoundException"
