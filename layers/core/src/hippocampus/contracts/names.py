"""Names and settings that the deployed resources, the local stack and the adapters must agree on.

One place for the storage layout, the queue settings, the resource names and the defaults
written in more than one layer, so the CDK app and the local stack can never drift apart
(docs/architecture.md "Storage layout", docs/configuration.md).
"""

from typing import Final, Literal

SERVICE_NAME: Final = "hippocampus"
METRICS_NAMESPACE: Final = "Hippocampus"
# The per-tenant metrics the condenser emits (hippocampus.observability) and the stack's dashboard
# and alarms read (infra/monitoring.py): dimensions service and tenant.
TENANT_DIMENSION: Final = "tenant"
TENANT_LLM_CALLS: Final = "TenantLlmCalls"
TENANT_PROMPT_TOKENS: Final = "TenantPromptTokens"
TENANT_COMPLETION_TOKENS: Final = "TenantCompletionTokens"
TENANT_JOBS_DEFERRED: Final = "TenantJobsDeferred"  # turns parked by the tenant's token budget

# DynamoDB main table: single-table design.
TABLE_PARTITION_KEY: Final = "pk"
TABLE_SORT_KEY: Final = "sk"
TABLE_TTL_ATTRIBUTE: Final = "expires_at"
# The tenant's users (GET /v1/tenants/{tenant_id}/users): a sparse, keys-only global secondary index.
# Only a user's memory item holds its two keys, from the first write of a summary or a fact until
# the user is forgotten; they never change in between, so the index is written once per user's life.
USERS_INDEX_NAME: Final = "users-by-tenant"
USERS_INDEX_PARTITION_KEY: Final = "tenant_users"
USERS_INDEX_SORT_KEY: Final = "listed_user"

# Idempotency-Key records (Powertools) live in the memory table, sort key `<prefix>#<hash>`.
IDEMPOTENCY_KEY_PREFIX: Final = "ingest"

# The response header of `DELETE …/memory` naming its deletion receipt (a direct invocation answers
# `{"receipt_id": …}` instead: it has no headers).
DELETION_RECEIPT_HEADER: Final = "Deletion-Receipt"

# S3 archive bucket prefixes, each with its own lifecycle expiration.
RAW_PREFIX: Final = "raw/"
HISTORY_PREFIX: Final = "history/"
# The stored copy of each user's episodes that a recall function's first query starts from. Each
# copy is tagged with the days it may live (its first episode's expiry, rounded down to one of
# `recall_expiry_days`), and one lifecycle rule per value expires it then.
RECALL_PREFIX: Final = "recall/"
RECALL_EXPIRY_TAG: Final = "hippocampus-expiry-days"


def recall_expiry_days(longest_days: int) -> list[int]:
    """The values of RECALL_EXPIRY_TAG: 1, 2, 4, ... up to `longest_days` (an episode's life)."""
    days = [1]
    while days[-1] * 2 <= longest_days:
        days.append(days[-1] * 2)
    return days


# SQS FIFO: the condenser's event source and its dead-letter queue.
DLQ_MAX_RECEIVE_COUNT: Final = 5
CONDENSER_BATCH_SIZE: Final = 10
# Visibility timeout must cover six condenser timeouts (AWS guidance for SQS triggers).
VISIBILITY_TO_TIMEOUT_RATIO: Final = 6
# Room for the worst case of one user's condensation at the default LLM timeout (see
# `condensation_budget_s`), plus the reads and the conditional write.
CONDENSER_TIMEOUT_S: Final = 120
INGEST_TIMEOUT_S: Final = 15
# The recall function embeds the query once, each attempt within RECALL_EMBEDDING_TIMEOUT_S, and
# retried once: both attempts and the partition's read fit its timeout.
RECALL_TIMEOUT_S: Final = 10
# The events function: one PutEvents per change of a stream batch of at most 100 records.
EVENTS_TIMEOUT_S: Final = 30
# Its stream trigger, deployed (infra/functions.py) and played by the local stack
# (local_stack/stream_source.py): batches of up to 100 records; a failing batch is split and retried
# a bounded number of times, then its place in the stream goes to the events DLQ.
EVENTS_BATCH_SIZE: Final = 100
EVENTS_RETRY_ATTEMPTS: Final = 10
EVENTS_DLQ_NAME: Final = "events-dlq"
# The sort keys of the items whose changes are events (adapters/dynamodb_table.py, dynamodb_receipts.py):
# a user's memory, a job, a deletion receipt, and (by prefix) a record. The trigger drops every other
# record of the stream (facts, episodes, indexes, usage, ...) before the function is invoked.
EVENT_SORT_KEYS: Final = ("MEMORY", "JOB", "RECEIPT")
EVENT_SORT_KEY_PREFIXES: Final = ("RECORD#",)
RECALL_EMBEDDING_TIMEOUT_S: Final = 3.0
# A request writing facts tries again for this long at most when concurrent writers changed the
# user's facts under it, so an ingest answers well within the client's 10 s write timeout
# (docs/architecture.md "Fact limits").
FACT_WRITE_RETRY_S: Final = 3.0
# A request written in several commits (over 33 facts) ends within this (the ingest function's
# timeout, and a margin): until then the user's fact counts are not rebased.
FACT_SETTLE_S: Final = INGEST_TIMEOUT_S + 5
QUEUE_VISIBILITY_TIMEOUT_S: Final = CONDENSER_TIMEOUT_S * VISIBILITY_TO_TIMEOUT_RATIO
QUEUE_RETENTION_DAYS: Final = 4
# How often the condenser's scheduled pass closes the jobs of dead-lettered messages.
DEAD_LETTER_PASS_MINUTES: Final = 5
DLQ_RETENTION_DAYS: Final = 14

# The worst case of one user's condensation, in LLM timeouts (two calls — the budget retry —
# each retried once by the adapter), and the margin for its storage I/O and the pauses before the
# retries. The condenser also keeps the margin free after its last LLM call, for the conditional
# write and the job updates (docs/architecture.md "The condenser").
LLM_TIMEOUTS_PER_CONDENSATION: Final = 4
CONDENSATION_IO_MARGIN_S: Final = 5
# The LLM adapters' pause before their one retry of a call (it counts against the call's time).
LLM_RETRY_PAUSE_S: Final = 0.5

# Values of MEMORY_LLM_PROVIDER / cdk.json `llm_provider`, and of MEMORY_TRACING.
LlmProviderName = Literal["openai", "bedrock", "offline"]
TracingMode = Literal["xray", "otel", "off"]

# Default model of each LLM provider (MEMORY_LLM_MODEL, cdk.json `llm_model`).
DEFAULT_OPENAI_MODEL: Final = "gpt-4o-mini"
DEFAULT_BEDROCK_MODEL: Final = "amazon.nova-lite-v1:0"

# Values of MEMORY_EMBEDDING_PROVIDER, and the default model and size of the vectors of each
# (docs/configuration.md). `offline`: a static model shipped in a PyPI wheel; `hashed`: feature
# hashing, no model; `none`: lexical ranking only.
EmbeddingProviderName = Literal["openai", "bedrock", "offline", "hashed", "none"]
DEFAULT_OPENAI_EMBEDDING_MODEL: Final = "text-embedding-3-small"
DEFAULT_BEDROCK_EMBEDDING_MODEL: Final = "amazon.titan-embed-text-v2:0"
OFFLINE_EMBEDDING_MODEL: Final = "wordllama-l2-supercat"
# The sizes of the offline model: its 256 dimensions, or their first 64 or 128 (trained as Matryoshka).
OFFLINE_EMBEDDING_DIMENSIONS: Final = (64, 128, 256)
# Still the id the feature-hashing vectors are stored under (it was the offline provider's model), so
# vectors written before `hashed` had its own name stay valid under it.
HASHED_EMBEDDING_MODEL: Final = "offline-hashed-v1"
DEFAULT_EMBEDDING_DIMENSIONS: Final = 256
# The sizes Amazon Titan Text Embeddings V2 makes.
TITAN_V2_DIMENSIONS: Final = (256, 512, 1024)

# Resource base names: `resource_name(stage, base)` gives `hippocampus-<stage>-<base>`.
TABLE_NAME: Final = "memory"
BUCKET_NAME: Final = "archive"
QUEUE_NAME: Final = "ingest.fifo"
DLQ_NAME: Final = "ingest-dlq.fifo"


def resource_name(stage: str, base: str) -> str:
    """`hippocampus-dev-ingest.fifo`: every named resource of a stage shares one prefix."""
    return f"{SERVICE_NAME}-{stage}-{base}"


def condensation_budget_s(llm_timeout_s: float) -> float:
    """The longest one user's condensation can take: the time the condenser keeps free before starting a user."""
    return LLM_TIMEOUTS_PER_CONDENSATION * llm_timeout_s + CONDENSATION_IO_MARGIN_S


def max_llm_timeout_s(condenser_timeout_s: float = CONDENSER_TIMEOUT_S) -> float:
    """The longest LLM timeout whose `condensation_budget_s` still fits the condenser's timeout."""
    return (condenser_timeout_s - CONDENSATION_IO_MARGIN_S) / LLM_TIMEOUTS_PER_CONDENSATION


def default_embedding_model(provider: str) -> str | None:
    """The embedding model a provider uses when none is configured (None: `none`, no vectors)."""
    return {
        "openai": DEFAULT_OPENAI_EMBEDDING_MODEL,
        "bedrock": DEFAULT_BEDROCK_EMBEDDING_MODEL,
        "offline": OFFLINE_EMBEDDING_MODEL,
        "hashed": HASHED_EMBEDDING_MODEL,
    }.get(provider)


def default_model(provider: str) -> str | None:
    """The model a provider uses when none is configured (None: the provider needs no model)."""
    return {"openai": DEFAULT_OPENAI_MODEL, "bedrock": DEFAULT_BEDROCK_MODEL}.get(provider)
