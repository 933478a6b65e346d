"""Deletion receipts (docs/api.md "Deletion receipts"): what a delete erased (a user, a fact, a
record, an episode), per store, in counts, with the generation and the times, and nothing of the
content. A receipt is kept apart from the user's data, so it outlives the user, and expires after
DELETION_RECEIPT_RETENTION_DAYS.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, Protocol

from pydantic import ConfigDict, Field

from hippocampus.contracts.models import Record, Scoped

DELETION_RECEIPT_RETENTION_DAYS: Final = 400  # over a year: an audit finds last year's deletions
RECEIPT_ID_PREFIX: Final = "del_"


class Counts(Record):
    # Every count is in every receipt (0 when nothing of the kind went): required in the schema too.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)


class DynamoDbErased(Counts):
    """Items of the memory table, by kind."""

    memory: int = 0  # the summary (1 when there was one; the user's version counter stays, without it)
    facts: int = 0
    episodes: int = 0
    records: int = 0
    jobs: int = 0  # job records deleted
    job_references: int = 0  # the user's index of its jobs
    idempotency_records: int = 0  # Idempotency-Key records
    # With PII masking: the user's digest key and the numbers of its values (never the values).
    pii_placeholders: int = 0
    # A user's delete: the agents' private scopes it forgot with the user (their items are counted
    # above with the user's).
    agent_scopes: int = 0


class S3Erased(Counts):
    raw_objects: int = 0  # accepted payloads (raw/)
    # A forgotten turn blanked in a payload that holds other turns too (the payload stays for them;
    # a payload that held only it is deleted, and counted in raw_objects).
    raw_items_blanked: int = 0
    history_objects: int = 0  # past versions of the summary (history/)
    episode_copies: int = 0  # the stored copy of the episodes recall starts from (recall/)
    object_versions: int = 0  # the bucket is unversioned: a deleted object leaves no version behind


class QueueErased(Counts):
    # Items accepted before the delete and still queued or being condensed: their jobs end
    # `skipped` (redacted), and their messages change nothing when they arrive.
    messages_skipped: int = 0
    # Turns parked by the tenant's token budget (contracts/budgets.py): their ledger entries.
    deferred_turns: int = 0


class VectorsErased(Counts):
    """Embeddings, stored on the items they embed (erased with them)."""

    facts: int = 0
    episodes: int = 0
    records: int = 0


class ErasedCounts(Counts):
    # Factories, not instances: a model is built on first use, never at import (models.Record).
    dynamodb: DynamoDbErased = Field(default_factory=DynamoDbErased)
    s3: S3Erased = Field(default_factory=S3Erased)
    queue: QueueErased = Field(default_factory=QueueErased)
    vectors: VectorsErased = Field(default_factory=VectorsErased)

    def plus(self, other: "ErasedCounts") -> "ErasedCounts":
        """Both counts added, store by store and kind by kind (a user's and its agents' scopes)."""
        return ErasedCounts.model_validate(_added(self.model_dump(), other.model_dump()))


def _added(one: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    return {
        name: _added(value, other[name]) if isinstance(value, dict) else value + other[name]
        for name, value in one.items()
    }


DeletionScope = Literal["user", "agent", "fact", "record", "episode"]


class DeletionReceipt(Scoped):
    receipt_id: str
    tenant_id: str
    user_id: str
    # What was deleted: the user (every agent's scope with it), one agent's scope, or one fact, record
    # or episode of the user's (or, with `agent_id`, of the agent's) memory.
    scope: DeletionScope
    target_id: str | None  # the fact's, record's or episode's id (None for the user)
    # For the user: its life that begins after the delete (what was erased is older); else the
    # user's life the deleted item belonged to.
    generation: int
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
    placeholders: int = 0  # the PII placeholders' items: the user's digest key and its numbered values


@dataclass(frozen=True)
class JobErasure:
    jobs: int
    job_references: int
    idempotency_records: int
    skipped: int  # jobs in flight, kept redacted as `skipped`


@dataclass(frozen=True)
class EpisodeErasure:
    """What forgetting one episode removed of the memory partition, as found just before."""

    records: int  # the records it alone taught that were still there to delete
    vectors: VectorsErased


@dataclass(frozen=True)
class ArchiveErasure:
    raw_objects: int
    history_objects: int
    episode_copies: int


class ReceiptStore(Protocol):
    def put_receipt(self, receipt: DeletionReceipt) -> None: ...

    def get_receipt(self, tenant_id: str, receipt_id: str) -> DeletionReceipt | None:
        """The tenant's receipt by id (None: unknown, expired, or another tenant's)."""
        ...
