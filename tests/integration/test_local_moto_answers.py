"""The local stack's moto answers DynamoDB reads exactly as moto does, without walking the API model for
each attribute value (local_stack/moto_attribute_values.py, docs/architecture.md "Local stack")."""

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto.core import serialize

from local_stack.moto_endpoint import MotoEndpoint

TABLE = "answers"
# Every kind of attribute value, nested ones and binary ones (base64 on the wire) included.
ITEM: dict[str, Any] = {
    "pk": {"S": "u"},
    "sk": {"S": "FACT#1"},
    "text": {"S": "Alice prefers tea ☕"},
    "count": {"N": "42"},
    "ratio": {"N": "-0.125"},
    "vector": {"B": bytes(range(256))},
    "flags": {"BOOL": True},
    "nothing": {"NULL": True},
    "tags": {"SS": ["a", "b"]},
    "scores": {"NS": ["1", "2.5"]},
    "blobs": {"BS": [b"\x00\x01", b"\xff"]},
    "meta": {
        "M": {
            "nested": {"L": [{"S": "x"}, {"N": "1"}, {"M": {"deep": {"B": b"\x02"}}}, {"L": []}]},
            "empty": {"M": {}},
        }
    },
}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    started = MotoEndpoint()
    url = started.start()
    client = _client(url)
    client.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    )
    client.put_item(TableName=TABLE, Item=ITEM)
    client.put_item(TableName=TABLE, Item={**ITEM, "sk": {"S": "FACT#2"}})
    yield url
    started.stop()


def _client(url: str) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


READS = {
    "GetItem": {"TableName": TABLE, "Key": {"pk": {"S": "u"}, "sk": {"S": "FACT#1"}}},
    "Query": {
        "TableName": TABLE,
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": "u"}},
    },
    "BatchGetItem": {"RequestItems": {TABLE: {"Keys": [{"pk": {"S": "u"}, "sk": {"S": "FACT#2"}}]}}},
}


def _raw_answer(url: str, action: str) -> bytes:
    """The body moto answers to a read, as it goes over the wire."""
    request = urllib.request.Request(
        url,
        data=json.dumps(READS[action]).encode(),
        headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": f"DynamoDB_20120810.{action}",
            "Authorization": "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/dynamodb/aws4_request, "
            "SignedHeaders=host, Signature=0",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return bytes(response.read())


@pytest.fixture
def moto_serializer(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's own serializer for the length of a test."""
    serializer: Any = serialize.BaseJSONSerializer
    monkeypatch.setattr(serializer, "_serialize_type_structure", serializer.moto_serialize_type_structure)


def test_every_kind_of_attribute_value_reads_back_as_written(endpoint: str) -> None:
    client = _client(endpoint)
    key = {"pk": {"S": "u"}, "sk": {"S": "FACT#1"}}
    assert client.get_item(TableName=TABLE, Key=key)["Item"] == ITEM
    items = client.query(**READS["Query"])["Items"]
    assert items == [ITEM, {**ITEM, "sk": {"S": "FACT#2"}}]
    found = client.batch_get_item(**READS["BatchGetItem"])["Responses"][TABLE]
    assert found == [{**ITEM, "sk": {"S": "FACT#2"}}]


@pytest.mark.parametrize("action", sorted(READS))
def test_an_answer_is_byte_for_byte_what_moto_writes(endpoint: str, action: str, request: Any) -> None:
    ours = _raw_answer(endpoint, action)
    request.getfixturevalue("moto_serializer")
    assert _raw_answer(endpoint, action) == ours


def _picker_calls(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> int:
    calls = 0
    real = serialize.AttributePicker.__call__

    def counted(self: Any, context: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(self, context)

    with monkeypatch.context() as patch:
        patch.setattr(serialize.AttributePicker, "__call__", counted)
        _raw_answer(endpoint, "GetItem")
    return calls


def test_an_attribute_value_is_written_without_looking_up_its_members(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _picker_calls(endpoint, monkeypatch) < 10  # the answer's own members (Item, ConsumedCapacity)


def test_moto_still_looks_up_every_member_of_every_attribute_value(
    endpoint: str, monkeypatch: pytest.MonkeyPatch, moto_serializer: None
) -> None:
    """When this fails, moto writes attribute values cheaply itself: drop local_stack/moto_attribute_values.py."""
    values = 21  # in ITEM, nested ones included
    assert _picker_calls(endpoint, monkeypatch) >= 5 * values  # ten members each, the present one found first
