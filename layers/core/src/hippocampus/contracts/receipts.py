"""Deletion receipts (docs/api.md "Deletion receipts"): what forgetting a user erased, per store, in
counts, with the generation and the times, and nothing of the content. A receipt is kept apart
from the user's data, so it outlives the user, and expires after DELETION_RECEIPT_RETENTION_DAYS.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

from hippocampus.contracts.models import Record

DELETION_RECEIPT_RETENTION_DAYS: Final = 400  # over a year: an audit finds last year's deletions
RECEIPT_ID_PREFIX: Final = "del_"


class DynamoDbErased(Record):
    """Items of the memory table, by kind."""

    memory: int  # the summary (1 when there was one; the user's version counter stays, without it)
    facts: int
    episodes: int
    records: int
    jobs: int  # job records deleted
    job_references: int  # the user's index of its jobs
    idempotency_records: int  # Idempotency-Key records


class S3Erased(Record):
    raw_objects: int  # accepted payloads (raw/)
    history_objects: int  # past versions of the summary (history/)
    object_versions: int = 0  # the bucket is unversioned: a deleted object leaves no version behind


class QueueErased(Record):
    # Items accepted before the delete and still queued or being condensed: their jobs end
    # `skipped` (redacted), and their messages change nothing when they arrive.
    messages_skipped: int


class VectorsErased(Record):
    """Embeddings, stored on the items they embed (erased with them)."""

    facts: int
    episodes: int
    records: int


class ErasedCounts(Record):
    dynamodb: DynamoDbErased
    s3: S3Erased
    queue: QueueErased
    vectors: VectorsErased


class DeletionReceipt(Record):
    receipt_id: str
    tenant_id: str
    user_id: str
    generation: int  # the user's life that begins after the delete (what was erased is older)
    requested_at: datetime
    completed_at: datetime
    expires_at: datetime  # when the receipt itself is erased
    erased: ErasedCounts


@dataclass(frozen=True)
class MemoryErasure:
    """What erasing a user's memory partition removed."""

    generation: int  # the new one
    summary: int
    facts: int
    episodes: int
    records: int
    vectors: VectorsErased


@dataclass(frozen=True)
class JobErasure:
    jobs: int
    job_references: int
    idempotency_records: int
    skipped: int  # jobs in flight, kept redacted as `skipped`


@dataclass(frozen=True)
class ArchiveErasure:
    raw_objects: int
    history_objects: int


class ReceiptStore(Protocol):
    def put_receipt(self, receipt: DeletionReceipt) -> None: ...

    def get_receipt(self, tenant_id: str, receipt_id: str) -> DeletionReceipt | None:
        """The tenant's receipt by id (None: unknown, expired, or another tenant's)."""
        ...
