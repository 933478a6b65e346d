"""Pydantic models of the API contract (docs/api.md), the queue message and the direct-invoke payload."""

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Final, Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from hippocampus.contracts.json_values import max_json_bytes
from hippocampus.contracts.limits import (
    IDENTIFIER_PATTERN,
    MAX_ADDITIONAL_METADATA_BYTES,
    MAX_CUSTOM_INSTRUCTIONS_CHARS,
    MAX_ITEMS,
    MAX_METADATA_BYTES,
    MAX_OCCURRED_AT_AHEAD_S,
    MAX_PAIRS,
    MAX_TEXT_CHARS,
    MAX_TITLE_CHARS,
    MAX_USER_NAME_CHARS,
)
from hippocampus.contracts.scopes import agent_scope, split_scope

Identifier = Annotated[str, StringConstraints(pattern=IDENTIFIER_PATTERN)]

JobStatus = Literal["queued", "processing", "deferred", "completed", "failed", "skipped"]
# A job whose item may still be condensed, and that a delete of its user redacts as `skipped`.
IN_FLIGHT: Final = frozenset({"queued", "processing", "deferred"})

# RFC 3339: a date, a time and a `Z` or numeric offset (docs/api.md "Ingest", `occurred_at`).
_RFC_3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})")


def rfc_3339(value: object) -> datetime:
    """An RFC 3339 timestamp as an aware datetime; ValueError for anything else (a bare date, a
    time without its offset, a number)."""
    if not isinstance(value, str) or not _RFC_3339.fullmatch(value):
        raise ValueError("must be an RFC 3339 timestamp with a Z or an offset, e.g. 2023-05-08T13:56:00Z")
    return datetime.fromisoformat(value.upper().replace(" ", "T"))


def accepted_when_unsaid(data: Any) -> Any:
    """A job's or an episode's `occurred_at` when none is given (one stored before items had
    dates): when it was accepted, `created_at`."""
    if isinstance(data, dict) and data.get("occurred_at") is None:
        return {**data, "occurred_at": data.get("created_at")}
    return data


class Record(BaseModel):
    """A model of an answer, a record or a message. Its validator is built on first use
    (`defer_build`), so each function builds only the models it uses: the read path's cold start
    does not pay for the write path's models, and the reverse."""

    model_config = ConfigDict(defer_build=True)


def _scope_key_split(data: Any) -> Any:
    """A scope key given as `user_id` (`alice#A#research`, contracts/scopes.py) is shown as the
    user's id and the agent's."""
    if isinstance(data, dict) and isinstance(data.get("user_id"), str):
        user_id, agent_id = split_scope(data["user_id"])
        if agent_id is not None:
            return {**data, "user_id": user_id, "agent_id": agent_id}
    return data


class Scoped(Record):
    """What belongs to a user's memory or to an agent's private scope of it: built from a scope key,
    it shows `user_id` and `agent_id` (absent for the shared scope); `scope_key` gives the key back."""

    agent_id: str | None = Field(default=None, exclude_if=lambda value: value is None)

    _split = model_validator(mode="before")(_scope_key_split)

    @property
    def scope_key(self) -> str:
        user_id: str = getattr(self, "user_id")  # noqa: B009 - every scoped model has one
        return agent_scope(user_id, self.agent_id)


class Model(Record):
    """A request model: unknown fields are refused, and no value is coerced (`true` is not 1, `"3"` is
    not 3, `"false"` is not a boolean: docs/api.md "Limits"). Request fields are plain JSON types, so
    strict validation of the parsed JSON is exact."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ConversationPair(Model):
    user: Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)] | None = None
    assistant: Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)] | None = None

    @model_validator(mode="after")
    def _one_side_present(self) -> "ConversationPair":
        if not (self.user or "").strip() and not (self.assistant or "").strip():
            raise ValueError("a pair needs a non-empty 'user' and/or 'assistant'")
        return self


class IngestItem(Model):
    id: Identifier | None = None
    text: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_CHARS)] | None = None
    user_assistant_pairs: (
        Annotated[list[ConversationPair], Field(min_length=1, max_length=MAX_PAIRS)] | None
    ) = None
    infer: bool = True
    user_name: Annotated[str, StringConstraints(max_length=MAX_USER_NAME_CHARS)] | None = None
    custom_instructions: (
        Annotated[str, StringConstraints(max_length=MAX_CUSTOM_INSTRUCTIONS_CHARS)] | None
    ) = None
    metadata: Annotated[dict[str, Any], max_json_bytes(MAX_METADATA_BYTES)] = Field(default_factory=dict)
    additional_metadata: Annotated[dict[str, Any], max_json_bytes(MAX_ADDITIONAL_METADATA_BYTES)] = Field(
        default_factory=dict
    )
    # Left out of a dump while unset: an item without them hashes (its job id, an Idempotency-Key's
    # body) and is archived exactly as before these fields existed.
    title: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TITLE_CHARS)] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )
    is_markdown: bool = Field(default=False, exclude_if=lambda value: value is False)
    # When it happened; unset: when the API accepted it. Left out of a dump while unset, so an item
    # without it hashes (its job id) the same whenever it is sent again.
    occurred_at: datetime | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="When it happened: RFC 3339 with Z or an offset, at most 5 minutes ahead; "
        "default: when the API accepted it.",
    )
    # On an agent's route: true sends the item to the user's shared memory
    # (docs/api.md "Agent scopes"). Left out of a dump while false: other items hash as before.
    share: bool = Field(
        default=False,
        exclude_if=lambda value: value is False,
        description="On an agent's route: teach the user's shared memory, not the agent's private one.",
    )

    @field_validator("occurred_at", mode="before")
    @classmethod
    def _occurred_at(cls, value: object) -> datetime | None:
        if value is None:
            return None
        moment = rfc_3339(value)
        if moment > datetime.now(UTC) + timedelta(seconds=MAX_OCCURRED_AT_AHEAD_S):
            raise ValueError(f"must not be more than {MAX_OCCURRED_AT_AHEAD_S // 60} minutes in the future")
        return moment

    @field_validator("text", "title")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be blank")
        return value

    @model_validator(mode="after")
    def _exactly_one_content(self) -> "IngestItem":
        if (self.text is None) == (self.user_assistant_pairs is None):
            raise ValueError("an item needs exactly one of 'text' or 'user_assistant_pairs'")
        if not self.infer and self.text is None:
            raise ValueError("a fact (infer: false) is stored verbatim and needs 'text'")
        return self


class IngestRequest(Model):
    items: Annotated[list[IngestItem], Field(min_length=1, max_length=MAX_ITEMS)]
    # False: a fact whose id exists is left as it is (docs/api.md "Ingest"). Left out of a dump when
    # true, so an Idempotency-Key's body hashes as before the flag existed.
    upsert: bool = Field(default=True, exclude_if=lambda value: value is True)


class PutMemoryRequest(Model):
    memory: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_CHARS)]
    expected_version: Annotated[int, Field(ge=0)] | None = None

    @field_validator("memory")
    @classmethod
    def _memory_not_blank(cls, value: str) -> str:
        # Stored stripped, a blank summary would erase the memory (docs/api.md "Replace the summary").
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class Fact(Record):
    id: str
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    additional_metadata: dict[str, Any] = Field(default_factory=dict)
    title: str | None = None
    is_markdown: bool = False  # the text is markdown, kept as written
    updated_at: datetime


class MemoryBody(Scoped):
    tenant_id: str
    user_id: str
    memory: str | None
    version: int
    word_count: int
    updated_at: datetime | None
    facts: list[Fact]


class JobError(Record):
    code: str
    message: str


# The error of a job that a delete caught in flight (docs/api.md "Forgetting a user").
# Constructed, not validated: its literal fields need no check, and validating them would build
# JobError's validator in every cold start, the read path's included, which never uses it.
USER_DELETED = JobError.model_construct(
    code="user_deleted", message="the user was deleted before this item was condensed"
)


class Job(Scoped):
    job_id: str
    tenant_id: str
    user_id: str
    item_id: str | None = None  # None once a delete redacted the job
    status: JobStatus
    error: JobError | None = None
    memory_version: int | None = None
    created_at: datetime
    updated_at: datetime
    occurred_at: datetime  # the item's `occurred_at`, or when it was accepted

    _accepted_when_unsaid = model_validator(mode="before")(accepted_when_unsaid)


class MemoryScopes(Record):
    shared: MemoryBody
    agent: MemoryBody


class AgentMemoryBody(Record):
    """An agent's memory read (GET …/agents/{agent_id}/memory): the user's shared memory and the
    agent's private one."""

    tenant_id: str
    user_id: str
    agent_id: str
    scopes: MemoryScopes


class JobList(Record):
    """A page of the user's jobs, newest first (GET …/memory/jobs)."""

    items: list[Job]
    next_cursor: str | None


class ListedUser(Record):
    user_id: str


class UserList(Record):
    """A page of the tenant's users, by user id (GET /v1/tenants/{tenant_id}/users)."""

    items: list[ListedUser]
    next_cursor: str | None


class JobsResponse(Record):
    jobs: list[Job]


class ForgetResponse(JobsResponse):
    """`DELETE …/memory/episodes/{episode_id}`: its job, and the deletion receipt of what went."""

    receipt_id: str


class HistoryVersion(Record):
    version: int
    memory: str | None
    updated_at: datetime
    job_ids: list[str]
    # The newest `occurred_at` of the items condensed into it; None: written by hand (PUT), or
    # archived before items had dates.
    occurred_at: datetime | None = None


class HistoryResponse(Record):
    versions: list[HistoryVersion]


# What an episode keeps of a turn's rendered text: 30 of them must fit one DynamoDB transaction
# (4 MB) with the memory version they belong to.
EPISODE_MAX_CHARS = 16_000


class EpisodePlace(NamedTuple):
    """The order of episodes: when it happened, then when accepted (a backfill sends in order), the
    place in its request, then its job."""

    occurred_at: datetime
    created_at: datetime
    position: int
    job_id: str


class Episode(Record):
    """One condensed turn, kept searchable until its payload's retention ends (docs/api.md "Episodes")."""

    id: str  # the item's id
    job_id: str
    text: str  # rendered: `User: …` / `Assistant: …` lines, markdown as written
    title: str | None = None
    is_markdown: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    additional_metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime  # when the turn was accepted
    occurred_at: datetime  # when it happened: the item's `occurred_at`, or when it was accepted
    # Its place in its request: turns accepted together are ordered by it (not part of the API).
    position: int = Field(0, exclude=True)

    _accepted_when_unsaid = model_validator(mode="before")(accepted_when_unsaid)

    @property
    def place(self) -> "EpisodePlace":
        """Where it stands among the user's episodes (what a list's cursor holds)."""
        return EpisodePlace(self.occurred_at, self.created_at, self.position, self.job_id)


RecordCategory = Literal[
    "identity", "location", "work", "relationship", "preference", "possession", "plan", "event", "other"
]


class MemoryRecord(Record):
    """One record as stored and as the API returns it (docs/api.md "Records"; contracts/records.py)."""

    id: str
    text: str
    category: RecordCategory
    valid_from: datetime
    valid_to: datetime | None = None
    recorded_at: datetime
    invalidated_at: datetime | None = None
    superseded_by: str | None = None
    episode_ids: list[str] = Field(default_factory=list)
    job_id: str | None = None
    agent_id: str | None = None

    @property
    def is_current(self) -> bool:
        return self.invalidated_at is None

    def true_at(self, moment: datetime) -> bool:
        """True in the world at `moment`, as the service knows it now."""
        return self.valid_from <= moment and (self.valid_to is None or moment < self.valid_to)

    def believed_at(self, moment: datetime) -> bool:
        """What the service held at `moment`: recorded by then and not yet invalidated."""
        return self.recorded_at <= moment and (self.invalidated_at is None or moment < self.invalidated_at)


class ExportDocument(Scoped):
    """Everything stored about one user, or in one agent's scope of it (docs/api.md "Export"); long
    exports come in pages."""

    tenant_id: str
    user_id: str
    exported_at: datetime
    memory: MemoryBody | None  # the memory and its facts, on the first page only
    items: list[dict[str, Any]]  # the turns accepted, as sent, while their payloads are kept
    history: list[HistoryVersion]  # past versions of the summary, newest first
    jobs: list[Job]  # every ingestion job kept, oldest first
    episodes: list[Episode]  # the condensed turns kept for recall, oldest first
    records: list[MemoryRecord] = Field(default_factory=list)  # current and invalidated, as recorded
    next_cursor: str | None  # the next page, or None: nothing more
    # A user's export, first page: the agents with a private scope of the user, each exported at
    # …/agents/{agent_id}/memory/export (docs/api.md "Agent scopes").
    agents: list[str] = Field(default_factory=list)


class HealthResponse(Record):
    status: Literal["ok"] = "ok"


class ErrorDetail(Record):
    field: str
    message: str
    type: str


class ErrorBody(Record):
    code: str
    message: str
    status: int
    details: list[ErrorDetail] = Field(default_factory=list)


class ErrorEnvelope(Record):
    error: ErrorBody


class CondenseMessage(Record):
    """Body of one SQS message: a pointer to one accepted item, never its content; or (`kind`
    `rebuild`) the rebuild of the summary from the records after an episode was forgotten, in the
    user's message group like the items (its `item_id` the episode's, no payload)."""

    # Left out of a dump while `condense`: the messages of the items read as they always were.
    kind: Literal["condense", "rebuild"] = Field(
        default="condense", exclude_if=lambda value: value == "condense"
    )
    job_id: str
    tenant_id: str
    user_id: str
    item_id: str
    generation: int
    raw_key: str
    raw_index: int
    queued_at: datetime
    # When a turn parked by its tenant's token budget was sent back to the queue (contracts/budgets.py);
    # left out of a dump while unset, so every other message reads as it always did.
    released_at: datetime | None = Field(default=None, exclude_if=lambda value: value is None)
