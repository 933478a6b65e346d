"""The local stack's moto parses each condition once and sizes each new item once
(local_stack/moto_conditions.py, local_stack/moto_item_size.py), and still answers as moto does."""

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.dynamodb import comparisons, responses
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models import dynamo_type
from moto.dynamodb.models import table as table_models

from local_stack.moto_endpoint import MotoEndpoint
from local_stack.moto_patching import original_name

TABLE = "conditions"
PUTS = 20


@pytest.fixture(scope="module")
def dynamodb() -> Iterator[Any]:
    started = MotoEndpoint()
    client = boto3.client(
        "dynamodb",
        endpoint_url=started.start(),
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    client.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    yield client
    started.stop()


def _put(key: str, generation: int) -> dict[str, Any]:
    return {
        "Put": {
            "TableName": TABLE,
            "Item": {"pk": {"S": key}, "#g": {"N": str(generation)}, "text": {"S": f"fact {key}"}},
            "ConditionExpression": "attribute_not_exists(pk) OR #gen < :g",
            "ExpressionAttributeNames": {"#gen": "#g"},
            "ExpressionAttributeValues": {":g": {"N": str(generation)}},
        }
    }


def _code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def test_one_condition_text_is_still_checked_on_each_item(dynamodb: Any) -> None:
    dynamodb.transact_write_items(TransactItems=[_put(f"k{n}", 1) for n in range(PUTS)])
    # The same text and values, now false for one item only: the whole transaction is refused.
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "k-new-0"}, "#g": {"N": "5"}})
    with pytest.raises(ClientError) as refused:
        dynamodb.transact_write_items(TransactItems=[_put(f"k-new-{n}", 2) for n in range(3)])
    assert _code(refused) == "TransactionCanceledException"
    reasons = [reason["Code"] for reason in refused.value.response["CancellationReasons"]]
    assert reasons == ["ConditionalCheckFailed", "None", "None"]
    # Newer generations pass on items that exist.
    dynamodb.transact_write_items(TransactItems=[_put(f"k{n}", 2) for n in range(PUTS)])
    item = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": "k3"}})["Item"]
    assert item["#g"] == {"N": "2"}


def test_an_expression_moto_refuses_is_refused_every_time(dynamodb: Any) -> None:
    for _ in range(2):  # the second time from the kept parse
        with pytest.raises(ClientError) as unused:
            dynamodb.put_item(
                TableName=TABLE,
                Item={"pk": {"S": "bad"}},
                ConditionExpression="attribute_not_exists(pk)",
                ExpressionAttributeNames={"#unused": "x"},
            )
        assert _code(unused) == "ValidationException"
        assert "unused" in unused.value.response["Error"]["Message"]


def test_an_update_in_a_transaction_checks_its_names_every_time(dynamodb: Any) -> None:
    update = {
        "Update": {
            "TableName": TABLE,
            "Key": {"pk": {"S": "counter"}},
            "UpdateExpression": "ADD #n :one",
            "ConditionExpression": "attribute_not_exists(#n) OR #n < :max",
            "ExpressionAttributeNames": {"#n": "count"},
            "ExpressionAttributeValues": {":one": {"N": "1"}, ":max": {"N": "100"}},
        }
    }
    for _ in range(3):  # moto adds the update's names to those the condition used: not to a shared list
        dynamodb.transact_write_items(TransactItems=[update])
    assert dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": "counter"}})["Item"]["count"] == {"N": "3"}


def _attributes(count: int, size: int) -> dict[str, Any]:
    return {f"a{n:03d}": {"S": "x" * size} for n in range(count)}


def test_an_item_over_400_kb_is_still_refused_and_one_under_it_is_stored(dynamodb: Any) -> None:
    with pytest.raises(ClientError) as refused:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "big"}, **_attributes(41, 10_000)})
    assert _code(refused) == "ValidationException"
    assert "maximum allowed size" in refused.value.response["Error"]["Message"]
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "big"}, **_attributes(39, 10_000)})
    assert len(dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": "big"}})["Item"]) == 40


def _calls(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, run: Callable[[], object]) -> int:
    """How many times `run` calls `owner.name`."""
    calls = 0
    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(owner, name, counted)
        run()
    return calls


def _parses(monkeypatch: pytest.MonkeyPatch, dynamodb: Any, key: str) -> int:
    puts = [_put(f"{key}{n}", 7) for n in range(PUTS)]
    run = lambda: dynamodb.transact_write_items(TransactItems=puts)  # noqa: E731
    return _calls(monkeypatch, comparisons.ConditionExpressionParser, "parse", run)


@pytest.fixture
def moto_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's own parsing for the length of a test."""
    monkeypatch.setattr(
        responses,
        "create_condition_expression_parser",
        getattr(responses, original_name("create_condition_expression_parser")),
    )
    for module in (dynamodb_models, table_models):
        monkeypatch.setattr(
            module, "get_filter_expression", getattr(module, original_name("get_filter_expression"))
        )


def test_a_transaction_parses_its_one_condition_text_at_most_once(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _parses(monkeypatch, dynamodb, "once") <= 1


def test_moto_still_parses_a_condition_for_every_item_twice(
    dynamodb: Any, monkeypatch: pytest.MonkeyPatch, moto_parsing: None
) -> None:
    """When this fails, moto keeps its parsed conditions itself: drop local_stack/moto_conditions.py."""
    assert _parses(monkeypatch, dynamodb, "moto") >= 2 * PUTS


def _sizings(monkeypatch: pytest.MonkeyPatch, attributes: int) -> int:
    run = lambda: dynamo_type.Item(dynamo_type.DynamoType({"S": "k"}), None, _attributes(attributes, 10))  # noqa: E731
    return _calls(monkeypatch, dynamo_type.DynamoType, "size", run)


def test_a_new_item_is_sized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _sizings(monkeypatch, 60) == 60


def test_moto_still_sizes_every_attribute_again_for_each_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """When this fails, moto sizes a new item once itself: drop local_stack/moto_item_size.py."""
    monkeypatch.setattr(dynamo_type.Item, "__init__", getattr(dynamo_type.Item, original_name("__init__")))
    assert _sizings(monkeypatch, 60) >= 60 * 59 / 2
