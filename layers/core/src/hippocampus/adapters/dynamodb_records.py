"""RecordStore on the DynamoDB table: one item per record, `RECORD#<id>` in the user's partition.

Record ids begin with the time they were recorded (domain/condense/record_ops.py), so the items sort
in the order the service learned them. They sort after `MEMORY`, so a memory read (`FACT#` up to
`MEMORY`) never reads them. Each carries the user's generation (a delete's sweep removes the older
ones, and reads never show them) and the memory's TTL when one is configured (docs/architecture.md
"Storage layout"). A current record may also hold `vector_codes` (or, written before, `vector`)
and `vector_model`, given by recall's indexer (adapters/dynamodb_recall.py): a `Put` rewrites the
item whole, so an invalidated record has none (it is not ranked), and a record rewritten current
gets one at the indexer's next pass.
"""

from datetime import datetime
from typing import Any

from hippocampus.adapters.dynamodb_items import Item, current, decoded_all
from hippocampus.adapters.dynamodb_table import (
    RECORD_PREFIX,
    Table,
    generation_check,
    iso,
    key,
    user_pk,
    values,
)
from hippocampus.adapters.vector_codec import VECTOR_ATTRIBUTES, VECTOR_MODEL_ATTRIBUTE
from hippocampus.contracts.errors import ConditionFailed
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.records import MemoryRecord, RecordRewrite, RecordWrite

_TIMES = ("valid_from", "valid_to", "recorded_at", "invalidated_at")
# Attributes of the item that are not the record's: its key, and the vector recall gave it.
_NOT_FIELDS = frozenset({PK, SK, *VECTOR_ATTRIBUTES})


def record_sk(record_id: str) -> str:
    return RECORD_PREFIX + record_id


def record_put(
    table: Table, tenant_id: str, user_id: str, generation: int, write: RecordWrite, ttl_s: int | None
) -> dict[str, Any]:
    """A record's write in the memory's transaction. A new one is a `Put` where none exists yet; an
    invalidation an `Update` of its ending alone (the rest of the record, as a forget may have left
    it, is kept), only while it exists, is current and of the user's generation: a concurrent delete
    or invalidation makes the transaction lose, and the condensation reads again."""
    record = write.record
    if not write.is_new:
        return _update(
            table,
            user_pk(tenant_id, user_id),
            record,
            "attribute_exists(pk) AND attribute_not_exists(invalidated_at) AND #g = :gen",
            {":gen": generation},
            ("valid_to", "invalidated_at", "superseded_by"),
            # An invalidated record is never ranked: its vector goes (the indexer gives none to it).
            dropped=VECTOR_ATTRIBUTES,
        )
    item: dict[str, Any] = {
        PK: user_pk(tenant_id, user_id),
        SK: record_sk(record.id),
        "generation": generation,
        **{
            name: value for name, value in record.model_dump(exclude=set(_TIMES)).items() if value is not None
        },
        **{name: iso(moment) for name in _TIMES if (moment := getattr(record, name)) is not None},
    }
    if ttl_s:
        item[TTL] = table.epoch() + ttl_s
    return {
        "Put": {
            "TableName": table.name,
            "Item": values(item),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


def record_rewrite(table: Table, tenant_id: str, user_id: str, rewrite: RecordRewrite) -> dict[str, Any]:
    """A record changed by forgetting an episode: its sources and ending as `after`, only while its
    sources and ending are still as read (a condensation or another forget meanwhile makes it lose)."""
    before = rewrite.before
    plain: dict[str, Any] = {":read_ids": before.episode_ids}
    condition = "attribute_exists(pk) AND episode_ids = :read_ids AND "
    if before.invalidated_at is None:
        condition += "attribute_not_exists(invalidated_at)"
    else:
        condition += "invalidated_at = :read_invalidated"
        plain[":read_invalidated"] = iso(before.invalidated_at)
    fields = ("episode_ids", "valid_to", "invalidated_at", "superseded_by")
    return _update(table, user_pk(tenant_id, user_id), rewrite.after, condition, plain, fields)


def _update(
    table: Table,
    pk: str,
    record: MemoryRecord,
    condition: str,
    plain: dict[str, Any],
    fields: tuple[str, ...],
    dropped: tuple[str, ...] = (),
) -> dict[str, Any]:
    """An `Update` setting `fields` of `record` as they are in it (a None removes the attribute), and
    removing the attributes `dropped`."""
    names = {f"#{index}": field for index, field in enumerate(fields)}
    sets: list[str] = []
    removes = [f"#d{index}" for index in range(len(dropped))]
    for alias, field in list(names.items())[: len(fields)]:
        value = getattr(record, field)
        if value is None:
            removes.append(alias)
        else:
            sets.append(f"{alias} = :{field}")
            plain[f":{field}"] = iso(value) if isinstance(value, datetime) else value
    expression = ("SET " + ", ".join(sets) if sets else "") + (
        " REMOVE " + ", ".join(removes) if removes else ""
    )
    names |= {f"#d{index}": attribute for index, attribute in enumerate(dropped)}
    if "#g" in condition:
        names["#g"] = "generation"
    return {
        "Update": {
            "TableName": table.name,
            "Key": key(pk, record_sk(record.id)),
            "UpdateExpression": expression.strip(),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values(plain),
        }
    }


def record_of(item: Item) -> MemoryRecord:
    return MemoryRecord.model_validate(
        {name: value for name, value in item.items() if name not in _NOT_FIELDS}
    )


class DynamoRecordStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def record_items(self, tenant_id: str, user_id: str) -> list[Item]:
        """Every record item of the user, whatever its generation (what a delete sweeps)."""
        return decoded_all(self._table.query_partition(user_pk(tenant_id, user_id), sk_prefix=RECORD_PREFIX))

    def records(self, tenant_id: str, user_id: str, generation: int) -> list[MemoryRecord]:
        items = current(self.record_items(tenant_id, user_id), generation, self._table.epoch())
        return [record_of(item) for item in items]

    def delete_record(self, tenant_id: str, user_id: str, generation: int, record_id: str) -> int | None:
        pk = user_pk(tenant_id, user_id)
        # Whether it holds a vector, for the receipt: a transaction's Delete returns nothing. The
        # indexer never gives an invalidated record a vector, nor a vector a second time.
        held = (
            self._table.client()
            .get_item(
                TableName=self._table.name,
                Key=key(pk, record_sk(record_id)),
                ProjectionExpression=VECTOR_MODEL_ATTRIBUTE,
                ConsistentRead=True,
            )
            .get("Item")
            or {}
        )
        try:
            self._table.transact(
                [
                    generation_check(self._table.name, tenant_id, user_id, generation),
                    {
                        "Delete": {
                            "TableName": self._table.name,
                            "Key": key(pk, record_sk(record_id)),
                            "ConditionExpression": "attribute_exists(pk) AND #g = :gen",
                            "ExpressionAttributeNames": {"#g": "generation"},
                            "ExpressionAttributeValues": values({":gen": generation}),
                        }
                    },
                ]
            )
        except ConditionFailed:
            return None  # no such record, or the user was forgotten since (then it is gone too)
        return int(VECTOR_MODEL_ATTRIBUTE in held)

    def trim_records(self, tenant_id: str, user_id: str, generation: int, keep: int) -> int:
        records = self.records(tenant_id, user_id, generation)
        excess = trim_order(records)[: max(0, len(records) - keep)]
        pk = user_pk(tenant_id, user_id)
        self._table.batch_delete([key(pk, record_sk(record.id)) for record in excess])
        return len(excess)


def trim_order(records: list[MemoryRecord]) -> list[MemoryRecord]:
    """Which go first past the cap: the oldest invalidated, then the oldest current."""
    return sorted(records, key=lambda record: (record.is_current, record.recorded_at, record.id))
