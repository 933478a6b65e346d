"""Change events on EventBridge (docs/architecture.md "Events", docs/api.md "Events").

Every committed change of a user's summary, records, jobs or existence is published once or more
to the bus `hippocampus-<stage>`, source `hippocampus`, as one of four detail types. A detail holds
ids, versions, counts and times, never memory text or user content (unless
MEMORY_EVENTS_INCLUDE_CONTENT=true), and an `event_id` that is the same every time the same change
is published, for deduplication.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, Protocol

from pydantic import Field

from hippocampus.contracts.models import Scoped
from hippocampus.contracts.receipts import ErasedCounts

EVENT_SOURCE: Final = "hippocampus"
MEMORY_UPDATED: Final = "Memory Updated"
RECORDS_CHANGED: Final = "Records Changed"
JOB_FINISHED: Final = "Job Finished"
USER_FORGOTTEN: Final = "User Forgotten"
DetailType = Literal["Memory Updated", "Records Changed", "Job Finished", "User Forgotten"]

# What a stored change is about, as the table's layout tells it.
ChangeKind = Literal["memory", "record", "job", "receipt"]


@dataclass(frozen=True)
class StoredChange:
    """One committed change of an item, as the table's change stream gives it."""

    event_id: str  # the stream record's id: the same on every delivery of this change
    kind: ChangeKind
    tenant_id: str
    user_id: str
    old: Mapping[str, Any] | None  # the item before (None: it was created)
    new: Mapping[str, Any] | None  # the item after (None: it was deleted)


class EventDetail(Scoped):
    event_id: str = Field(description="The same on every delivery of the same change: deduplicate on it.")
    tenant_id: str
    user_id: str


class MemoryUpdatedDetail(EventDetail):
    """A new version of the user's summary was written (condensed, or replaced by PUT)."""

    version: int
    previous_version: int
    generation: int
    word_count: int
    job_ids: list[str] = Field(description="The jobs this version applied (empty for a PUT).")
    updated_at: datetime
    memory: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="The summary; only with MEMORY_EVENTS_INCLUDE_CONTENT=true.",
    )


class RecordsChangedDetail(EventDetail):
    """One record was added, invalidated (superseded, or no longer true) or deleted."""

    record_id: str
    change: Literal["added", "invalidated", "deleted"]
    category: str | None
    valid_from: datetime | None
    valid_to: datetime | None
    superseded_by: str | None
    job_id: str | None
    generation: int
    text: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="The record's text; only with MEMORY_EVENTS_INCLUDE_CONTENT=true.",
    )


class JobFinishedDetail(EventDetail):
    """A job reached `completed`, `failed` or `skipped` (a failed job redriven later finishes again)."""

    job_id: str
    item_id: str | None
    status: Literal["completed", "failed", "skipped"]
    memory_version: int | None
    error_code: str | None


class UserForgottenDetail(EventDetail):
    """The user was forgotten: its deletion receipt (docs/api.md "Deletion receipts")."""

    receipt_id: str
    generation: int
    requested_at: datetime
    completed_at: datetime
    erased: ErasedCounts


DETAIL_MODELS: Final[Mapping[str, type[EventDetail]]] = {
    MEMORY_UPDATED: MemoryUpdatedDetail,
    RECORDS_CHANGED: RecordsChangedDetail,
    JOB_FINISHED: JobFinishedDetail,
    USER_FORGOTTEN: UserForgottenDetail,
}


@dataclass(frozen=True)
class ChangeEvent:
    detail_type: DetailType
    detail: EventDetail


class EventPublisher(Protocol):
    def publish(self, event: ChangeEvent) -> None:
        """Put the event on the bus; raises when it was not accepted (the change is then retried)."""
        ...
