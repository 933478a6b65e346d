"""Records: dated statements about a user, between the summary and the episodes (docs/api.md "Records").

The condenser's one LLM call per burst answers the new summary and operations on the user's
records in one structured answer (`ANSWER_SCHEMA`). A record is never overwritten: an invalidated
one keeps its text and gets `valid_to`, `invalidated_at` and, when a newer statement replaced it,
`superseded_by`. `valid_*` is when it was true in the world; `recorded_at` / `invalidated_at` when
the service learned and unlearned it.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hippocampus.contracts.models import Episode, Job, MemoryRecord, Record, RecordCategory

# In the order a summary rebuilt from records takes them: who someone is before what they did.
RECORD_CATEGORIES: Final[tuple[str, ...]] = (
    "identity",
    "location",
    "work",
    "relationship",
    "preference",
    "possession",
    "plan",
    "event",
    "other",
)
__all__ = ["MemoryRecord", "RecordCategory"]  # API models, defined beside the others (contracts/models.py)

RECORD_ID_PREFIX: Final = "rec_"
# How an operation names a record its own answer adds: `new:2`, the record of its 2nd operation.
NEW_RECORD_REFERENCE: Final = "new:"
MAX_RECORD_CHARS: Final = 500
# Operations one answer may carry; more are dropped (and counted), never applied half. A backfill's
# burst holds a dozen turns or more, each teaching a few records; the transaction bounds it too.
MAX_RECORD_OPERATIONS: Final = 40
# Current and invalidated records kept per user (MEMORY_MAX_RECORDS): past it, the oldest
# invalidated ones go first, then the oldest current ones.
DEFAULT_MAX_RECORDS: Final = 1_000
DEFAULT_RECORD_LIST_LIMIT: Final = 20
MAX_RECORD_LIST_LIMIT: Final = 100


@dataclass(frozen=True)
class RecordWrite:
    """A record to put in the memory's transaction: a new one, or a current one being invalidated."""

    record: MemoryRecord
    is_new: bool


@dataclass(frozen=True)
class RecordRewrite:
    """A record changed by forgetting an episode, written only if it is still as `before`."""

    before: MemoryRecord
    after: MemoryRecord


@dataclass(frozen=True)
class EpisodeForget:
    """Forgetting one episode (docs/api.md "Forget one episode"), in one transaction while the memory
    is at `expected_version` and `generation`: its episode items gone, the records it alone taught
    deleted, the others rewritten (its id dropped; an ending only it had caused undone), the summary
    rebuilt from the records left (`memory`, None: no summary) as the next version, and `job`, the
    forget's job, stored `completed` at that version."""

    tenant_id: str
    user_id: str
    generation: int
    expected_version: int
    episodes: Sequence[Episode]
    deleted_records: Sequence[MemoryRecord]
    rewritten_records: Sequence[RecordRewrite]
    memory: str | None
    word_count: int
    updated_at: datetime
    job: Job


class RecordStore(Protocol):
    """A user's records, in the user's partition (adapters/dynamodb_records.py). They are written
    with the memory version that learned them (`MemoryWrite.records`)."""

    def records(self, tenant_id: str, user_id: str, generation: int) -> list[MemoryRecord]:
        """Every record of the user's `generation`, current and invalidated, in id order (the order
        they were recorded in)."""
        ...

    def delete_record(self, tenant_id: str, user_id: str, generation: int, record_id: str) -> int | None:
        """Delete it while the user is at `generation`: the number of vectors erased with it (0 or
        1); None when there is no such record."""
        ...

    def trim_records(self, tenant_id: str, user_id: str, generation: int, keep: int) -> int:
        """Keep at most `keep` records: the oldest invalidated go first, then the oldest current;
        return how many were removed."""
        ...


class RecordList(Record):
    items: list[MemoryRecord]
    next_cursor: str | None


class RecordOperation(BaseModel):
    """One operation of an answer, as the model wrote it (checked by domain/condense/record_ops.py).

    `add`: a new record (`text`, `category`, `valid_from`). `invalidate`: the record `record_id` is
    no longer true (`new:N`: the one this answer's N-th operation adds); with `text`, the statement
    that replaces it. `source_items`: the ids of the
    items it was learned from (the `Item id:` lines of the prompt)."""

    model_config = ConfigDict(extra="ignore")

    op: Literal["add", "invalidate"]
    record_id: str | None = None
    text: str | None = None
    category: str | None = None
    valid_from: str | None = None
    source_items: list[str] = Field(default_factory=list)


class CondensationAnswer(BaseModel):
    """The structured answer of one condensation call."""

    model_config = ConfigDict(extra="ignore")

    summary: Annotated[str, Field(max_length=100_000)]
    operations: list[RecordOperation] = Field(default_factory=list)


def _nullable(kind: str, **extra: Any) -> dict[str, Any]:
    return {"type": [kind, "null"], **extra}


# The JSON schema of the answer, in the subset OpenAI's strict structured outputs accept (every
# property required, nullable by type, no additional properties); Bedrock takes it as a tool's input.
ANSWER_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["summary", "operations"],
    "properties": {
        "summary": {"type": "string", "description": "The new summary of the user, within the word budget."},
        "operations": {
            "type": "array",
            "description": "Changes to the user's records, in order.",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["op", "record_id", "text", "category", "valid_from", "source_items"],
                "properties": {
                    "op": {"type": "string", "enum": ["add", "invalidate"]},
                    "record_id": _nullable(
                        "string",
                        description="invalidate: the id of a current record, or new:N for the record "
                        "the N-th operation of this answer adds",
                    ),
                    "text": _nullable(
                        "string",
                        description="add: the statement; invalidate: the statement replacing it, or null",
                    ),
                    "category": _nullable("string", enum=[*RECORD_CATEGORIES, None]),
                    "valid_from": _nullable(
                        "string",
                        description="When it became true: YYYY-MM-DD or RFC 3339; null: the item's date",
                    ),
                    "source_items": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "The ids of the items it was learned from",
                    },
                },
            },
        },
    },
}
ANSWER_SCHEMA_NAME: Final = "memory_update"
