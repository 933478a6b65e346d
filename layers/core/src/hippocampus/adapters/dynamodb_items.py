"""Items as the DynamoDB adapters work with them: decoded once, where they are read, from the
typed attribute values of the wire (`{"N": "3"}`) into Python values (`3`)."""

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary

from hippocampus.adapters.dynamodb_table import MEMORY_SK, Table, key, plain_item, user_pk
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL

Item = dict[str, Any]


def decoded(raw: dict[str, Any]) -> Item:
    """Its attributes as Python values; a whole number as an int (the table stores no other at the
    top level: counts, versions, generations, epochs), binary as bytes."""
    return {name: _plain(value) for name, value in plain_item(raw).items()}


def decoded_all(raws: Iterable[dict[str, Any]]) -> list[Item]:
    return [decoded(raw) for raw in raws]


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else value
    if isinstance(value, Binary):
        return value.value
    return value


def generation_of(item: Item) -> int:
    """The user's life the item belongs to (an item written before deletes existed has none: 0)."""
    generation: int = item.get("generation", 0)
    return generation


def read_generation(table: Table, tenant_id: str, user_id: str) -> int:
    """The user's generation on its memory item (0 before its first delete); one consistent read."""
    raw = (
        table.client()
        .get_item(
            TableName=table.name,
            Key=key(user_pk(tenant_id, user_id), MEMORY_SK),
            ConsistentRead=True,
            ProjectionExpression="#g",
            ExpressionAttributeNames={"#g": "generation"},
        )
        .get("Item")
    )
    return generation_of(decoded(raw)) if raw else 0


def is_expired(item: Item, epoch: int) -> bool:
    """Past its TTL: DynamoDB deletes such items lazily (and moto never), so reads skip them."""
    expires = item.get(TTL)
    return expires is not None and expires <= epoch


def current(items: Iterable[Item], generation: int, epoch: int) -> list[Item]:
    """Those of the user's life `generation` and not expired at `epoch`: what reads show (an item
    of an earlier generation is one a delete has not finished erasing)."""
    return [item for item in items if generation_of(item) == generation and not is_expired(item, epoch)]


def with_prefix(items: Sequence[Item], prefix: str) -> list[Item]:
    return [item for item in items if item[SK].startswith(prefix)]
