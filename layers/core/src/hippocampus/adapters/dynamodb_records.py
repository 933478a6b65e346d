"""RecordStore on the DynamoDB table: one item per record, `RECORD#<id>` in the user's partition.

Record ids begin with the time they were recorded (domain/condense/record_ops.py), so the items sort
in the order the service learned them. They sort after `MEMORY`, so a memory read (`FACT#` up to
`MEMORY`) never reads them. Each carries the user's generation (a delete's sweep removes the older
ones, and reads never show them) and the memory's TTL when one is configured (docs/architecture.md
"Storage layout"). A current record may also hold `vector` and `vector_model`, given by recall's
indexer (adapters/dynamodb_recall.py): a `Put` rewrites the item whole, so an invalidated record has
none (it is not ranked), and a record rewritten current gets one at the indexer's next pass.
"""

from itertools import batched
from typing import Any, Final

from hippocampus.adapters.dynamodb_episodes import episode_sk
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
from hippocampus.adapters.vector_codec import VECTOR_ATTRIBUTE, VECTOR_MODEL_ATTRIBUTE
from hippocampus.contracts.errors import ConditionFailed
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.records import EpisodeForget, MemoryRecord, RecordWrite

_TIMES = ("valid_from", "valid_to", "recorded_at", "invalidated_at")
# Attributes of the item that are not the record's: its key, and the vector recall gave it.
_NOT_FIELDS = frozenset({PK, SK, VECTOR_ATTRIBUTE, VECTOR_MODEL_ATTRIBUTE})
TRANSACTION_MAX_ITEMS: Final = 100


def record_sk(record_id: str) -> str:
    return RECORD_PREFIX + record_id


def record_put(
    table: Table, tenant_id: str, user_id: str, generation: int, write: RecordWrite, ttl_s: int | None
) -> dict[str, Any]:
    """The `Put` of one record in the memory's transaction: a new one must not exist yet, and one
    being invalidated must still exist and be current (a concurrent delete or invalidation wins:
    the transaction fails, and the condensation reads again)."""
    record = write.record
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
    condition = (
        "attribute_not_exists(pk)"
        if write.is_new
        else "attribute_exists(pk) AND attribute_not_exists(invalidated_at) AND #g = :gen"
    )
    put: dict[str, Any] = {"TableName": table.name, "Item": values(item), "ConditionExpression": condition}
    if not write.is_new:
        put["ExpressionAttributeNames"] = {"#g": "generation"}
        put["ExpressionAttributeValues"] = values({":gen": generation})
    return {"Put": put}


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

    def delete_record(self, tenant_id: str, user_id: str, generation: int, record_id: str) -> bool:
        pk = user_pk(tenant_id, user_id)
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
            return False  # no such record, or the user was forgotten since (then it is gone too)
        return True

    def forget_episode(self, forget: EpisodeForget) -> None:
        """One transaction (several past 100 writes, each checking the generation; the episode goes
        in the first, so a retry after a partial failure finds it gone and what is left still
        applies). A rewritten record must still be as read."""
        pk = user_pk(forget.tenant_id, forget.user_id)
        deletes = [key(pk, episode_sk(episode.place)) for episode in forget.episodes]
        deletes += [key(pk, record_sk(record.id)) for record in forget.deleted_records]
        writes: list[dict[str, Any]] = [
            {"Delete": {"TableName": self._table.name, "Key": k}} for k in deletes
        ]
        place = (self._table, forget.tenant_id, forget.user_id, forget.generation)
        for rewrite in forget.rewritten_records:
            put = record_put(*place, RecordWrite(rewrite.after, is_new=False), None)["Put"]
            invalidated = rewrite.before.invalidated_at
            if invalidated is None:
                put["ConditionExpression"] = "attribute_exists(pk) AND attribute_not_exists(invalidated_at)"
                del put["ExpressionAttributeNames"], put["ExpressionAttributeValues"]
            else:
                put["ConditionExpression"] = "attribute_exists(pk) AND invalidated_at = :invalidated"
                del put["ExpressionAttributeNames"]
                put["ExpressionAttributeValues"] = values({":invalidated": iso(invalidated)})
            writes.append({"Put": put})
        check = generation_check(self._table.name, forget.tenant_id, forget.user_id, forget.generation)
        for chunk in batched(writes, TRANSACTION_MAX_ITEMS - 1):
            self._table.transact([check, *chunk])

    def trim_records(self, tenant_id: str, user_id: str, generation: int, keep: int) -> int:
        records = self.records(tenant_id, user_id, generation)
        excess = trim_order(records)[: max(0, len(records) - keep)]
        pk = user_pk(tenant_id, user_id)
        self._table.batch_delete([key(pk, record_sk(record.id)) for record in excess])
        return len(excess)


def trim_order(records: list[MemoryRecord]) -> list[MemoryRecord]:
    """Which go first past the cap: the oldest invalidated, then the oldest current."""
    return sorted(records, key=lambda record: (record.is_current, record.recorded_at, record.id))
