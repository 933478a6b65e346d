"""Typed results: pydantic models of the bodies docs/api.md documents.

Every model keeps unknown fields (`extra="allow"`) and gives optional fields defaults, so an
answer of a newer server that adds fields still parses. Timestamps stay ISO 8601 strings, as sent.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# Job statuses after which nothing changes any more (docs/api.md "Jobs").
FINAL_STATUSES = frozenset({"completed", "failed", "skipped"})


class ApiModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Fact(ApiModel):
    id: str
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    additional_metadata: dict[str, Any] = Field(default_factory=dict)
    title: str | None = None
    is_markdown: bool = False
    updated_at: str | None = None


class Memory(ApiModel):
    """`GET …/memory`: the summary (`memory`, None before a first version) and the facts."""

    tenant_id: str
    user_id: str
    memory: str | None = None
    version: int = 0
    word_count: int = 0
    updated_at: str | None = None
    facts: list[Fact] = Field(default_factory=list)
    # The ETag header of the answer (HTTP only): `If-Match` material for `put`.
    etag: str | None = None


class JobError(ApiModel):
    code: str
    message: str = ""


class Job(ApiModel):
    job_id: str
    tenant_id: str | None = None
    user_id: str | None = None
    item_id: str | None = None
    status: str
    error: JobError | None = None
    memory_version: int | None = None
    created_at: str | None = None
    updated_at: str | None = None

    @property
    def final(self) -> bool:
        """True once the job can no longer change: completed, failed or skipped."""
        return self.status in FINAL_STATUSES


class MemoryVersion(ApiModel):
    """One entry of `GET …/memory/history`."""

    version: int
    memory: str | None = None
    updated_at: str | None = None
    job_ids: list[str] = Field(default_factory=list)


class Episode(ApiModel):
    id: str
    job_id: str | None = None
    text: str
    title: str | None = None
    is_markdown: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    additional_metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str | None = None


class QueryResult(ApiModel):
    type: str
    id: str
    text: str
    title: str | None = None
    score: float = 0.0
    metadata: dict[str, Any] = Field(default_factory=dict)
    additional_metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str | None = None
    updated_at: str | None = None


class Retrieval(ApiModel):
    embedding_provider: str | None = None
    model: str | None = None
    lexical_only: bool | None = None


class QueryAnswer(ApiModel):
    """`POST …/memory/query`: ranked facts and episodes, and the summary unless excluded."""

    memory: str | None = None
    version: int | None = None
    results: list[QueryResult] = Field(default_factory=list)
    retrieval: Retrieval | None = None


class ContextSource(ApiModel):
    type: str
    id: str | None = None


class Context(ApiModel):
    """`POST …/memory/context`: the block to prepend to a prompt, at most `max_words` words."""

    context: str
    word_count: int = 0
    memory_version: int | None = None
    sources: list[ContextSource] = Field(default_factory=list)


class Export(ApiModel):
    """`GET …/memory/export`, every page merged into one document (`next_cursor` is then None)."""

    tenant_id: str
    user_id: str
    exported_at: str | None = None
    memory: Memory | None = None
    items: list[dict[str, Any]] = Field(default_factory=list)
    history: list[MemoryVersion] = Field(default_factory=list)
    jobs: list[Job] = Field(default_factory=list)
    episodes: list[Episode] = Field(default_factory=list)
    next_cursor: str | None = None


class Pair(ApiModel):
    user: str = ""
    assistant: str = ""


class Item(ApiModel):
    """One item to ingest (docs/api.md "Ingest"); exactly one of `text` and `user_assistant_pairs`.

    Unknown fields are sent as given (the server refuses what it does not know, so a field a
    newer server accepts can be used before this model names it)."""

    id: str | None = None
    text: str | None = None
    user_assistant_pairs: list[Pair] | None = None
    infer: bool | None = None
    user_name: str | None = None
    custom_instructions: str | None = None
    metadata: dict[str, Any] | None = None
    additional_metadata: dict[str, Any] | None = None
    title: str | None = None
    is_markdown: bool | None = None
