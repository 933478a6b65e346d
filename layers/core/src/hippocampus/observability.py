"""Logs and metrics: the Powertools Logger and Metrics of the service, and its metric names.

Handlers decorate with `@logger.inject_lambda_context` and `@metrics.log_metrics`; every layer
logs through `logger` (ids and counts only: user content and memory text never go into a log
line unless `MEMORY_LOG_CONTENT=true`, docs/configuration.md) and counts with
`record_metric(MetricName.X)`. Tracing is an adapter (`hippocampus.adapters.tracing`).
"""

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from hippocampus.contracts.names import METRICS_NAMESPACE, SERVICE_NAME

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
    ITEMS_TAKEN_AHEAD = "ItemsTakenAhead"
    ITEMS_CUT_TO_PROMPT_BUDGET = "ItemsCutToPromptBudget"


_METRIC_UNITS: Final[Mapping[MetricName, MetricUnit]] = {
    MetricName.LLM_LATENCY_MS: MetricUnit.Milliseconds,
}


def metric_unit(name: MetricName) -> MetricUnit:
    """The CloudWatch unit of a metric (Count unless stated otherwise)."""
    return _METRIC_UNITS.get(name, MetricUnit.Count)


def record_metric(name: MetricName, value: float = 1, *, sink: Metrics | None = None) -> None:
    """Add one data point with the metric's unit; flushed by `@metrics.log_metrics` in the handler."""
    (sink or metrics).add_metric(name=name.value, unit=metric_unit(name), value=value)
