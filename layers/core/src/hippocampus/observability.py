"""Logs and metrics: the Powertools Logger and Metrics of the service, and its metric names.

Handlers decorate with `@logger.inject_lambda_context` and `@metrics.log_metrics`; every layer
logs through `logger` (ids and counts only: user content and memory text never go into a log
line unless `MEMORY_LOG_CONTENT=true`, docs/configuration.md) and counts with
`record_metric(MetricName.X)`. Tracing is an adapter (`hippocampus.adapters.tracing`).
"""

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Final

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from hippocampus.contracts.names import (
    METRICS_NAMESPACE,
    SERVICE_NAME,
    TENANT_COMPLETION_TOKENS,
    TENANT_DIMENSION,
    TENANT_JOBS_DEFERRED,
    TENANT_LLM_CALLS,
    TENANT_PROMPT_TOKENS,
)

logger: Final = Logger(service=SERVICE_NAME)
metrics: Final = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE_NAME)


class MetricName(StrEnum):
    """Every custom metric of the service, in one place (namespace `Hippocampus`)."""

    MEMORY_READS = "MemoryReads"
    MEMORY_MISSES = "MemoryMisses"
    ITEMS_INGESTED = "ItemsIngested"
    FACTS_WRITTEN = "FactsWritten"
    DUPLICATES_SKIPPED = "DuplicatesSkipped"
    CONDENSATIONS_OK = "CondensationsOk"
    CONDENSATIONS_FAILED = "CondensationsFailed"
    LLM_LATENCY_MS = "LlmLatencyMs"
    PROMPT_TOKENS = "PromptTokens"
    COMPLETION_TOKENS = "CompletionTokens"
    SUMMARY_WORDS = "SummaryWords"
    BUDGET_CUTS = "BudgetCuts"
    DELETES = "Deletes"
    JOBS_SKIPPED = "JobsSkipped"
    VERSION_CONFLICTS = "VersionConflicts"
    FACT_WRITE_CONFLICTS = "FactWriteConflicts"
    EXPORTS = "Exports"
    DEAD_LETTERED_JOBS_CLOSED = "DeadLetteredJobsClosed"
    DEAD_LETTERS_REDRIVEN = "DeadLettersRedriven"
    REDRIVEN_JOBS_REQUEUED = "RedrivenJobsRequeued"
    ITEMS_TAKEN_AHEAD = "ItemsTakenAhead"
    ITEMS_CUT_TO_PROMPT_BUDGET = "ItemsCutToPromptBudget"
    DOCUMENTS_INDEXED = "DocumentsIndexed"
    INDEXING_FAILED = "IndexingFailed"
    EPISODE_COPY_FAILED = "EpisodeCopyFailed"
    QUERIES = "Queries"
    QUERY_EMBEDDING_FAILED = "QueryEmbeddingFailed"
    RECORD_OPERATIONS_APPLIED = "RecordOperationsApplied"
    RECORD_OPERATIONS_DROPPED = "RecordOperationsDropped"
    ANSWER_SCHEMA_RETRIES = "AnswerSchemaRetries"
    RECORDS_TRIMMED = "RecordsTrimmed"
    PII_VALUES_MASKED = "PiiValuesMasked"
    JOBS_DEFERRED = "JobsDeferred"
    DEFERRED_JOBS_RELEASED = "DeferredJobsReleased"
    EVENTS_PUBLISHED = "EventsPublished"


_METRIC_UNITS: Final[Mapping[MetricName, MetricUnit]] = {
    MetricName.LLM_LATENCY_MS: MetricUnit.Milliseconds,
}


def metric_unit(name: MetricName) -> MetricUnit:
    """The CloudWatch unit of a metric (Count unless stated otherwise)."""
    return _METRIC_UNITS.get(name, MetricUnit.Count)


# Per-tenant LLM usage, with a `tenant` dimension (one CloudWatch metric per tenant and name).
TENANT_USAGE: Final = (TENANT_LLM_CALLS, TENANT_PROMPT_TOKENS, TENANT_COMPLETION_TOKENS)


def record_tenant_usage(tenant_id: str, llm_calls: int, prompt_tokens: int, completion_tokens: int) -> None:
    """The LLM calls and tokens of one condensation, by tenant."""
    _record_for_tenant(
        tenant_id, zip(TENANT_USAGE, (llm_calls, prompt_tokens, completion_tokens), strict=True)
    )


def record_tenant_deferred(tenant_id: str, jobs: int) -> None:
    """Turns of the tenant parked by its token budget."""
    _record_for_tenant(tenant_id, [(TENANT_JOBS_DEFERRED, jobs)])


def _record_for_tenant(tenant_id: str, values: Iterable[tuple[str, float]]) -> None:
    """Flushed at once, in a blob of their own, so the tenant dimension never lands on the
    service's other metrics."""
    blob = EphemeralMetrics(namespace=METRICS_NAMESPACE)
    blob.add_dimension(name="service", value=SERVICE_NAME)
    blob.add_dimension(name=TENANT_DIMENSION, value=tenant_id)
    for name, value in values:
        blob.add_metric(name=name, unit=MetricUnit.Count, value=value)
    blob.flush_metrics()


def record_metric(name: MetricName, value: float = 1, *, sink: Metrics | None = None) -> None:
    """Add one data point with the metric's unit; flushed by `@metrics.log_metrics` in the handler."""
    (sink or metrics).add_metric(name=name.value, unit=metric_unit(name), value=value)
