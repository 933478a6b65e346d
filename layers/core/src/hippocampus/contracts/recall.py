"""Models of recall (docs/api.md "Recall"): episodes, the query and context routes, the lists.

Query and context rank a user's facts, episodes and current records together (docs/api.md "Query")."""

from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, Field, StringConstraints, field_validator, model_validator

from hippocampus.contracts.models import EPISODE_MAX_CHARS, Episode, Fact, Model, Record, rfc_3339
from hippocampus.contracts.records import RecordCategory

__all__ = ["EPISODE_MAX_CHARS", "Episode"]

DocumentType = Literal["fact", "episode", "record"]
# Which memory a result of an agent's search comes from (docs/api.md "Agent scopes").
ScopeName = Literal["shared", "agent"]
DOCUMENT_TYPES: Final[tuple[DocumentType, ...]] = ("fact", "episode", "record")

MAX_QUERY_CHARS = 2_000
MAX_TOP_K = 50
DEFAULT_TOP_K = 10
MAX_METADATA_FILTERS = 8
MAX_FILTER_VALUES = 50
MAX_CONTEXT_WORDS = 2_000
DEFAULT_CONTEXT_WORDS = 300
MAX_LIST_LIMIT = 100
DEFAULT_LIST_LIMIT = 20

_SCALARS = (str, int, float, bool)


def _filter_value(value: Any) -> Any:
    """One JSON scalar (exact match) or a non-empty list of them (any of them matches)."""
    if isinstance(value, list):
        if not 1 <= len(value) <= MAX_FILTER_VALUES or not all(isinstance(v, _SCALARS) for v in value):
            raise ValueError(f"a list of 1 to {MAX_FILTER_VALUES} strings, numbers or booleans is expected")
    elif not isinstance(value, _SCALARS):
        raise ValueError("a string, number, boolean, or a list of them is expected")
    return value


# Checked by hand so an error names the key, not each member of a union of types.
FilterValue = Annotated[Any, AfterValidator(_filter_value)]


class TimeRange(Model):
    """When the documents looked for happened (docs/api.md "Query"): `from` and `to`, RFC 3339 with
    an offset, either open; an episode by its `occurred_at`, a record by its validity."""

    start: datetime | None = Field(default=None, alias="from")
    end: datetime | None = Field(default=None, alias="to")

    @field_validator("start", "end", mode="before")
    @classmethod
    def _instant(cls, value: object) -> datetime | None:
        return None if value is None else rfc_3339(value)

    @model_validator(mode="after")
    def _ordered(self) -> "TimeRange":
        if self.start is None and self.end is None:
            raise ValueError("give 'from', 'to' or both")
        if self.start is not None and self.end is not None and self.start > self.end:
            raise ValueError("'from' must not be after 'to'")
        return self

    def holds(self, moment: datetime) -> bool:
        return (self.start is None or self.start <= moment) and (self.end is None or moment <= self.end)

    def overlaps(self, begin: datetime, finish: datetime | None) -> bool:
        """Whether [begin, finish) (finish None: still true) meets the range."""
        return (self.end is None or begin <= self.end) and (
            finish is None or self.start is None or finish > self.start
        )


def _every_type() -> list[DocumentType]:
    return list(DOCUMENT_TYPES)


class QueryRequest(Model):
    query: Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUERY_CHARS)]
    top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K)] = DEFAULT_TOP_K
    types: Annotated[list[DocumentType], Field(min_length=1, max_length=len(DOCUMENT_TYPES))] = Field(
        default_factory=_every_type
    )
    alpha: Annotated[float, Field(ge=0, le=1)] | None = None  # None: the documented default
    recency_bias: Annotated[float, Field(ge=0, le=1)] = 0.0
    metadata_filters: Annotated[dict[str, FilterValue], Field(max_length=MAX_METADATA_FILTERS)] = Field(
        default_factory=dict
    )
    include_memory: bool = True
    time_range: TimeRange | None = None
    # Results scored below it are left out (0: every result, however weakly it matches).
    min_score: Annotated[float, Field(ge=0, le=1)] = 0.0

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class QueryResult(Record):
    """One ranked fact, episode or record. A record has no title nor metadata (`{}`); its
    `created_at` and `updated_at` are its `recorded_at`, its `occurred_at` its `valid_from`."""

    type: DocumentType
    id: str
    text: str
    title: str | None = None
    score: float
    metadata: dict[str, Any]
    additional_metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    occurred_at: datetime | None = None  # an episode's: when its turn happened; a record's valid_from
    # A record's (None for a fact or an episode): docs/api.md "Records".
    category: RecordCategory | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    # On an agent's route: whether it is the user's shared memory or the agent's own.
    scope: ScopeName | None = Field(default=None, exclude_if=lambda value: value is None)


class Retrieval(Record):
    embedding_provider: str
    model: str | None
    lexical_only: bool


class QueryResponse(Record):
    memory: str | None  # on an agent's route: the shared summary, then the agent's
    version: int  # on an agent's route: the agent's version
    results: list[QueryResult]
    retrieval: Retrieval
    shared_version: int | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="On an agent's route: the version of the user's shared memory.",
    )


class ContextRequest(Model):
    query: Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUERY_CHARS)] | None = None
    max_words: Annotated[int, Field(ge=1, le=MAX_CONTEXT_WORDS)] = DEFAULT_CONTEXT_WORDS
    time_range: TimeRange | None = None

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be blank")
        return value


class ContextSource(Record):
    type: Literal["memory", "fact", "episode", "record"]
    id: str | None = None
    scope: ScopeName | None = Field(default=None, exclude_if=lambda value: value is None)


class ContextResponse(Record):
    context: str
    word_count: int
    memory_version: int  # on an agent's route: the agent's version
    sources: list[ContextSource]
    shared_memory_version: int | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="On an agent's route: the version of the user's shared memory.",
    )


class EpisodeList(Record):
    episodes: list[Episode]
    next_cursor: str | None


class FactList(Record):
    facts: list[Fact]
    next_cursor: str | None


class IndexMessage(Record):
    """A queue message asking the condenser for the vectors of a user's new facts."""

    kind: Literal["index"] = "index"
    tenant_id: str
    user_id: str
    requested_at: datetime
    # Every episode, not only the newest (a re-index after a model change: tools/reindex.py).
    everything: bool = False
