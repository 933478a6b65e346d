"""PII masking's placeholder numbers on DynamoDB (moto): one number per value and kind, never two
values on one number when two writers number at once, nothing of the value stored, and a user's
new life numbering afresh (adapters/dynamodb_placeholders.py)."""

from typing import Any

import boto3
import pytest

from hippocampus.adapters import aws_clients
from hippocampus.adapters.dynamodb_memory import DynamoMemoryStore
from hippocampus.adapters.dynamodb_placeholders import DynamoPlaceholderStore
from hippocampus.adapters.dynamodb_table import Table
from hippocampus.contracts.errors import ConditionFailed
from hippocampus.contracts.pii import PiiValue

T, U = "acme", "alice"
ALICE, BOB = PiiValue("EMAIL", "alice@example.com"), PiiValue("EMAIL", "bob@example.org")
PHONE = PiiValue("PHONE", "+14155550132")


@pytest.fixture
def table(aws) -> Table:
    return Table(aws.table_name, lambda: aws_clients.client("dynamodb"))


@pytest.fixture
def store(table) -> DynamoPlaceholderStore:
    return DynamoPlaceholderStore(table)


class RacingClient:
    """The DynamoDB client, with `before_transaction` run once, just before the first transaction."""

    def __init__(self, before_transaction: Any) -> None:
        self._client = aws_clients.client("dynamodb")
        self._before = before_transaction

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def transact_write_items(self, **request: Any) -> Any:
        before, self._before = self._before, None
        if before:
            before()
        return self._client.transact_write_items(**request)


def test_a_value_keeps_its_number_and_each_kind_counts_on_its_own(store):
    assert store.numbers(T, U, 0, [ALICE, PHONE, ALICE]) == {ALICE: 1, PHONE: 1}
    assert store.numbers(T, U, 0, [BOB, ALICE]) == {BOB: 2, ALICE: 1}
    assert store.known_numbers(T, U, [ALICE, BOB, PiiValue("EMAIL", "new@example.com")]) == {ALICE: 1, BOB: 2}


def test_more_values_than_one_transaction_holds_are_numbered_in_order(store):
    values = [PiiValue("IP", f"10.0.0.{n}") for n in range(1, 151)]
    assert store.numbers(T, U, 0, values) == {value: n for n, value in enumerate(values, start=1)}


def test_two_writers_never_share_a_number(aws, store):
    racing = DynamoPlaceholderStore(Table(aws.table_name, lambda: client))
    client = RacingClient(lambda: store.numbers(T, U, 0, [BOB]))
    assert racing.numbers(T, U, 0, [ALICE]) == {ALICE: 2}  # lost to BOB's numbering, then read again
    assert store.numbers(T, U, 0, [ALICE, BOB]) == {ALICE: 2, BOB: 1}


def test_two_writers_numbering_one_value_agree(aws, store):
    racing = DynamoPlaceholderStore(Table(aws.table_name, lambda: client))
    client = RacingClient(lambda: store.numbers(T, U, 0, [ALICE]))
    assert racing.numbers(T, U, 0, [ALICE]) == {ALICE: 1}


def test_the_table_holds_digests_not_values(aws, store):
    store.numbers(T, U, 0, [ALICE, PHONE])
    items = boto3.client("dynamodb").scan(TableName=aws.table_name)["Items"]
    assert len(items) == 3 and "alice@example.com" not in str(items) and "4155550132" not in str(items)


def test_a_forgotten_user_is_numbered_afresh_and_the_old_life_cannot_number(table, store):
    store.numbers(T, U, 0, [ALICE, BOB])
    erased = DynamoMemoryStore(table).erase_user(T, U)
    assert erased.placeholders == 3
    with pytest.raises(ConditionFailed):
        store.numbers(T, U, 0, [PHONE])
    assert store.known_numbers(T, U, [ALICE]) == {}
    assert store.numbers(T, U, erased.generation, [BOB]) == {BOB: 1}


def test_a_value_of_the_old_life_is_never_numbered_in_the_new_one(table, store):
    erased = DynamoMemoryStore(table).erase_user(T, U)
    store.numbers(T, U, erased.generation, [BOB])  # the new life has its key now
    with pytest.raises(ConditionFailed):
        store.numbers(T, U, 0, [ALICE])  # a condensation that read the old life
    assert store.known_numbers(T, U, [ALICE]) == {}
