"""A user's records: the list with `as_of` / `known_at` / `include_invalidated`, and deleting one
(docs/api.md "Records").

Newest first by when they became true (`valid_from`), then by when they were recorded; a cursor is
the position of the last record given, so records written between pages never repeat one given.
"""

from dataclasses import dataclass
from datetime import datetime

from hippocampus.contracts.errors import NotFound
from hippocampus.contracts.ports import MemoryStore, Tracing
from hippocampus.contracts.receipts import (
    DeletionReceipt,
    DynamoDbErased,
    ErasedCounts,
    ReceiptStore,
    VectorsErased,
)
from hippocampus.contracts.records import MemoryRecord, RecordList, RecordStore
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.reads.cursors import decode_position, encode_position, invalid_cursor
from hippocampus.domain.reads.receipts import Deletion, issue_receipt


@dataclass(frozen=True)
class RecordQuery:
    """What a list asks for: `as_of` (true then) and `known_at` (held by the service then) look at
    every record; without them, current records only unless `include_invalidated`."""

    limit: int
    cursor: str | None = None
    as_of: datetime | None = None
    known_at: datetime | None = None
    include_invalidated: bool = False

    def wants(self, record: MemoryRecord) -> bool:
        if self.as_of is not None and not record.true_at(self.as_of):
            return False
        if self.known_at is not None and not record.believed_at(self.known_at):
            return False
        timeless = self.as_of is None and self.known_at is None
        return record.is_current or self.include_invalidated or not timeless


def _order(record: MemoryRecord) -> tuple[float, str]:
    """A record's place among the user's, sorted descending: newest first (ids sort by when recorded)."""
    return (record.valid_from.timestamp(), record.id)


class RecordService:
    def __init__(
        self,
        store: MemoryStore,
        records: RecordStore,
        tracing: Tracing,
        receipts: ReceiptStore,
        clock: Clock = utc_now,
    ) -> None:
        self._store = store
        self._records = records
        self._tracing = tracing
        self._receipts = receipts
        self._clock = clock

    def all_records(self, tenant_id: str, user_id: str) -> list[MemoryRecord]:
        """Every record of the user's current life, current and invalidated, newest first."""
        with self._tracing.span("dynamodb.read_records", tenant_id=tenant_id):
            generation = self._store.read_generation(tenant_id, user_id)
            records = self._records.records(tenant_id, user_id, generation)
        return sorted(records, key=_order, reverse=True)

    def list_records(self, tenant_id: str, user_id: str, query: RecordQuery) -> RecordList:
        after = _position(query.cursor) if query.cursor is not None else None
        wanted = [record for record in self.all_records(tenant_id, user_id) if query.wants(record)]
        if after is not None:
            wanted = [record for record in wanted if _order(record) < after]
        page = wanted[: query.limit]
        more = len(wanted) > query.limit
        next_cursor = encode_position([page[-1].valid_from.isoformat(), page[-1].id]) if more else None
        return RecordList(items=page, next_cursor=next_cursor)

    def delete_record(self, tenant_id: str, user_id: str, record_id: str) -> DeletionReceipt:
        """Delete the record; then its receipt (docs/api.md "Deletion receipts")."""
        requested_at = self._clock()
        with self._tracing.span("dynamodb.delete_record", tenant_id=tenant_id):
            generation = self._store.read_generation(tenant_id, user_id)
            vectors = self._records.delete_record(tenant_id, user_id, generation, record_id)
        if vectors is None:
            raise NotFound(f"record '{record_id}' was not found")
        deletion = Deletion(tenant_id, user_id, "record", record_id, generation, requested_at)
        erased = ErasedCounts(dynamodb=DynamoDbErased(records=1), vectors=VectorsErased(records=vectors))
        with self._tracing.span("dynamodb.put_receipt", tenant_id=tenant_id):
            return issue_receipt(self._receipts, deletion, erased, self._clock())


def _position(cursor: str) -> tuple[float, str]:
    valid_from, record_id = decode_position(cursor, (str, str))
    try:
        instant = datetime.fromisoformat(valid_from)
    except ValueError:
        raise invalid_cursor() from None
    if instant.tzinfo is None:
        raise invalid_cursor()
    return (instant.timestamp(), record_id)
