"""A transaction that lost only to a concurrent one is sent again (docs/architecture.md "Fact limits")."""

from typing import Any

import pytest
from botocore.exceptions import ClientError

from hippocampus.adapters.dynamodb_table import CONFLICT_RETRIES, Table
from hippocampus.contracts.errors import ConditionFailed


def cancelled(*codes: str) -> ClientError:
    response: Any = {
        "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
        "CancellationReasons": [{"Code": code} for code in codes],
    }
    return ClientError(response, "TransactWriteItems")


class Client:
    def __init__(self, *failures: ClientError) -> None:
        self.failures = list(failures)
        self.sent: list[list[dict[str, Any]]] = []

    def transact_write_items(self, TransactItems: list[dict[str, Any]]) -> None:
        self.sent.append(TransactItems)
        if self.failures:
            raise self.failures.pop(0)


def table(client: Client, pauses: list[float]) -> Table:
    return Table("memory", lambda: client, pause=pauses.append)


def test_a_transaction_lost_to_concurrent_ones_is_sent_again_until_it_commits() -> None:
    client, pauses = (
        Client(cancelled("TransactionConflict", "None"), cancelled("None", "TransactionConflict")),
        [],
    )
    table(client, pauses).transact([{"Put": {}}, {"Put": {}}])
    assert len(client.sent) == 3 and len(pauses) == 2 and all(0 < pause < 1 for pause in pauses)


def test_conflicts_past_the_retries_reach_the_caller_unchanged() -> None:
    client, pauses = Client(*[cancelled("TransactionConflict")] * (CONFLICT_RETRIES + 1)), []
    with pytest.raises(ClientError) as raised:
        table(client, pauses).transact([{"Put": {}}])
    assert raised.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert len(client.sent) == CONFLICT_RETRIES + 1 and len(pauses) == CONFLICT_RETRIES


def test_a_failed_condition_is_never_sent_again() -> None:
    client, pauses = Client(cancelled("None", "ConditionalCheckFailed", "TransactionConflict")), []
    with pytest.raises(ConditionFailed) as raised:
        table(client, pauses).transact([{"Put": {}}, {"Put": {}}, {"Put": {}}])
    assert raised.value.failed == frozenset({1}) and len(client.sent) == 1 and pauses == []
