"""The API's bodies as the client reads and sends them: generated from docs/openapi.json.

Do not edit: client/scripts/generate_models.py writes this file (client/README.md, "Models"),
and tests/client/test_client_models.py fails while it differs from what the document gives.
Timestamps stay ISO 8601 strings, as sent.
"""

from typing import Any, Literal

from pydantic import Field

from .model_base import FINAL_STATUSES, ApiModel, SettlesWhenFinal

__all__ = [
    "FINAL_STATUSES",
    "AgentMemory",
    "Context",
    "ContextSource",
    "DeletionReceipt",
    "DynamoDbErased",
    "Episode",
    "ErasedCounts",
    "Export",
    "Fact",
    "Item",
    "Job",
    "JobError",
    "Memory",
    "MemoryRecord",
    "MemoryRecordCategory",
    "MemoryScopes",
    "MemoryVersion",
    "Pair",
    "QueryAnswer",
    "QueryResult",
    "QueryResultCategory",
    "QueueErased",
    "Retrieval",
    "S3Erased",
    "TenantUsage",
    "VectorsErased",
]


class Fact(ApiModel):
    """One fact of a user's memory. Always in the answer: `id`, `text`, `updated_at`."""

    id: str
    text: str
    updated_at: str | None = None
    additional_metadata: dict[str, Any] = Field(default_factory=dict)
    is_markdown: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    title: str | None = None


class Memory(ApiModel):
    """`GET …/memory`: the summary (`memory`, None before a first version) and the facts. Always in the
    answer: `tenant_id`, `user_id`, `memory`, `version`, `word_count`, `updated_at`, `facts`."""

    tenant_id: str
    user_id: str
    memory: str | None = None
    version: int = 0
    word_count: int = 0
    updated_at: str | None = None
    facts: list[Fact] = Field(default_factory=list)
    agent_id: str | None = None
    # The ETag header of the answer (HTTP only): `If-Match` for `put`.
    etag: str | None = None


class MemoryScopes(ApiModel):
    """The two scopes an agent reads of a user's memory: `shared`, the user's own (what every agent and the
    user's routes see), and `agent`, the agent's private one (with its `agent_id`). Always in the answer:
    `shared`, `agent`."""

    shared: Memory
    agent: Memory


class AgentMemory(ApiModel):
    """`GET …/agents/{agent_id}/memory`: an agent's view of a user's memory, both scopes (docs/api.md "Agent
    scopes"). Always in the answer: `tenant_id`, `user_id`, `agent_id`, `scopes`."""

    tenant_id: str
    user_id: str
    agent_id: str
    scopes: MemoryScopes
    # The ETag header of the answer (HTTP only), which covers both scopes.
    etag: str | None = None


class JobError(ApiModel):
    """Why a job failed. Always in the answer: `code`, `message`."""

    code: str
    message: str | None = None


class Job(SettlesWhenFinal, ApiModel):
    """One ingested item on its way to the memory (docs/api.md "Jobs"); `final` once it is done. Always in the
    answer: `job_id`, `tenant_id`, `user_id`, `status`, `created_at`, `updated_at`, `occurred_at`."""

    job_id: str
    tenant_id: str | None = None
    user_id: str | None = None
    status: Literal["queued", "processing", "deferred", "completed", "failed", "skipped"]
    created_at: str | None = None
    updated_at: str | None = None
    occurred_at: str | None = None
    agent_id: str | None = None
    error: JobError | None = None
    item_id: str | None = None
    memory_version: int | None = None


class MemoryVersion(ApiModel):
    """One entry of `GET …/memory/history`. Always in the answer: `version`, `memory`, `updated_at`,
    `job_ids`."""

    version: int
    memory: str | None = None
    updated_at: str | None = None
    job_ids: list[str] = Field(default_factory=list)
    occurred_at: str | None = None


class Episode(ApiModel):
    """One condensed turn (docs/api.md "Episodes"). Always in the answer: `id`, `job_id`, `text`,
    `created_at`, `occurred_at`."""

    id: str
    job_id: str | None = None
    text: str
    created_at: str | None = None
    occurred_at: str | None = None
    additional_metadata: dict[str, Any] = Field(default_factory=dict)
    is_markdown: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    title: str | None = None


MemoryRecordCategory = Literal[
    "identity", "location", "work", "relationship", "preference", "possession", "plan", "event", "other"
]


class MemoryRecord(ApiModel):
    """One dated statement about the user (docs/api.md "Records"); `valid_to`, `invalidated_at` and
    `superseded_by` are set once a newer statement replaced it. Always in the answer: `id`, `text`,
    `category`, `valid_from`, `recorded_at`."""

    id: str
    text: str
    category: MemoryRecordCategory | None = None
    valid_from: str | None = None
    recorded_at: str | None = None
    agent_id: str | None = None
    episode_ids: list[str] = Field(default_factory=list)
    invalidated_at: str | None = None
    job_id: str | None = None
    superseded_by: str | None = None
    valid_to: str | None = None


QueryResultCategory = Literal[
    "identity", "location", "work", "relationship", "preference", "possession", "plan", "event", "other"
]


class QueryResult(ApiModel):
    """One ranked fact, record or episode. Always in the answer: `type`, `id`, `text`, `score`, `metadata`,
    `additional_metadata`, `created_at`, `updated_at`."""

    type: Literal["fact", "episode", "record"]
    id: str
    text: str
    score: float = 0.0
    metadata: dict[str, Any] = Field(default_factory=dict)
    additional_metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str | None = None
    updated_at: str | None = None
    category: QueryResultCategory | None = None
    occurred_at: str | None = None
    scope: Literal["shared", "agent"] | None = None
    title: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None


class Retrieval(ApiModel):
    """How the results were found: the embeddings, or words only. Always in the answer: `embedding_provider`,
    `model`, `lexical_only`."""

    embedding_provider: str | None = None
    model: str | None = None
    lexical_only: bool = False


class QueryAnswer(ApiModel):
    """`POST …/memory/query`: ranked facts and episodes, and the summary unless excluded. Always in the
    answer: `memory`, `version`, `results`, `retrieval`."""

    memory: str | None = None
    version: int = 0
    results: list[QueryResult] = Field(default_factory=list)
    retrieval: Retrieval | None = None
    shared_version: int | None = None


class ContextSource(ApiModel):
    """What a context block was built from. Always in the answer: `type`."""

    type: Literal["memory", "fact", "episode", "record"]
    id: str | None = None
    scope: Literal["shared", "agent"] | None = None


class Context(ApiModel):
    """`POST …/memory/context`: the block to prepend to a prompt, at most `max_words` words. Always in the
    answer: `context`, `word_count`, `memory_version`, `sources`."""

    context: str
    word_count: int = 0
    memory_version: int = 0
    sources: list[ContextSource] = Field(default_factory=list)
    shared_memory_version: int | None = None


class Export(ApiModel):
    """`GET …/memory/export`, every page merged into one document (`next_cursor` is then None). Always in the
    answer: `tenant_id`, `user_id`, `exported_at`, `memory`, `items`, `history`, `jobs`, `episodes`,
    `next_cursor`."""

    tenant_id: str
    user_id: str
    exported_at: str | None = None
    memory: Memory | None = None
    items: list[dict[str, Any]] = Field(default_factory=list)
    history: list[MemoryVersion] = Field(default_factory=list)
    jobs: list[Job] = Field(default_factory=list)
    episodes: list[Episode] = Field(default_factory=list)
    next_cursor: str | None = None
    agent_id: str | None = None
    agents: list[str] = Field(default_factory=list)
    records: list[MemoryRecord] = Field(default_factory=list)


class DynamoDbErased(ApiModel):
    """Items of the memory table a delete erased, by kind. Always in the answer: `memory`, `facts`,
    `episodes`, `records`, `jobs`, `job_references`, `idempotency_records`, `pii_placeholders`,
    `agent_scopes`."""

    memory: int = 0
    facts: int = 0
    episodes: int = 0
    records: int = 0
    jobs: int = 0
    job_references: int = 0
    idempotency_records: int = 0
    pii_placeholders: int = 0
    agent_scopes: int = 0


class S3Erased(ApiModel):
    """Objects of the archive bucket a delete erased. Always in the answer: `raw_objects`,
    `raw_items_blanked`, `history_objects`, `episode_copies`, `object_versions`."""

    raw_objects: int = 0
    raw_items_blanked: int = 0
    history_objects: int = 0
    episode_copies: int = 0
    object_versions: int = 0


class QueueErased(ApiModel):
    """Queued items a delete caught: their messages change nothing. Always in the answer: `messages_skipped`,
    `deferred_turns`."""

    messages_skipped: int = 0
    deferred_turns: int = 0


class VectorsErased(ApiModel):
    """Embeddings erased with the items they were stored on. Always in the answer: `facts`, `episodes`,
    `records`."""

    facts: int = 0
    episodes: int = 0
    records: int = 0


class ErasedCounts(ApiModel):
    """What a delete erased, per store, in counts. Always in the answer: `dynamodb`, `s3`, `queue`, `vectors`."""

    dynamodb: DynamoDbErased
    s3: S3Erased
    queue: QueueErased
    vectors: VectorsErased


class DeletionReceipt(ApiModel):
    """What a delete erased (the user, a fact, a record or an episode), in counts, with no content
    (docs/api.md "Deletion receipts"). Always in the answer: `receipt_id`, `tenant_id`, `user_id`, `scope`,
    `target_id`, `generation`, `requested_at`, `completed_at`, `expires_at`, `erased`."""

    receipt_id: str
    tenant_id: str | None = None
    user_id: str | None = None
    scope: Literal["user", "agent", "fact", "record", "episode"]
    target_id: str | None = None
    generation: int = 0
    requested_at: str | None = None
    completed_at: str | None = None
    expires_at: str | None = None
    erased: ErasedCounts
    agent_id: str | None = None


class TenantUsage(ApiModel):
    """`GET /v1/tenants/{tenant_id}/usage`: the tenant's LLM calls and tokens of the UTC day against its daily
    token budget (docs/api.md "Usage"); `budget` and `remaining` are None without a budget. Always in the
    answer: `tenant_id`, `day`, `calls`, `prompt_tokens`, `completion_tokens`, `tokens`, `budget`,
    `remaining`, `deferred_jobs`, `resets_at`."""

    tenant_id: str
    day: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int
    budget: int | None
    remaining: int | None
    deferred_jobs: int = 0
    resets_at: str | None = None


class Pair(ApiModel):
    """One user turn and the assistant's answer."""

    assistant: str | None = None
    user: str | None = None


class Item(ApiModel):
    """One item to ingest (docs/api.md "Ingest"); exactly one of `text` and `user_assistant_pairs`. A field
    left None is not sent (the service's default applies); an unknown field is sent as given, and the
    service refuses what it does not know."""

    additional_metadata: dict[str, Any] | None = None
    custom_instructions: str | None = None
    id: str | None = None
    infer: bool | None = None
    is_markdown: bool | None = None
    metadata: dict[str, Any] | None = None
    occurred_at: str | None = None
    share: bool | None = None
    text: str | None = None
    title: str | None = None
    user_assistant_pairs: list[Pair] | None = None
    user_name: str | None = None
