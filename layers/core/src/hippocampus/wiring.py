"""The composition root: settings, adapters and services, each built once per process and lazily.

Lambda keeps a process warm between invocations, so everything here is created on first use and
reused. The three `*_handler()` functions are what `functions/*/handler.py` export. Tests build
handlers from the same `api` factories with fakes instead (tests/support/fakes.py), or call
`reset()` to rebuild from another environment.
"""

import os
from collections.abc import Callable
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, TypeVar, get_args

from hippocampus.adapters import aws_clients
from hippocampus.adapters.dynamodb_memory_items import read_stored_memory
from hippocampus.adapters.dynamodb_table import Table
from hippocampus.adapters.tracing import make_tracing
from hippocampus.api.memory_lane import MemoryLane, memory_lane_function
from hippocampus.api.observed import LambdaHandler
from hippocampus.contracts.errors import ConfigurationError
from hippocampus.contracts.names import RECALL_EMBEDDING_TIMEOUT_S, TracingMode

# Imported where they are built: get_memory's cold start loads only what its fast lane needs
# (docs/architecture.md "The memory read's fast lane").
if TYPE_CHECKING:
    from hippocampus.adapters.dynamodb_agents import DynamoDbAgentRegistry
    from hippocampus.adapters.dynamodb_budgets import DynamoDeferralStore, DynamoUsageStore
    from hippocampus.adapters.dynamodb_episodes import DynamoEpisodeStore
    from hippocampus.adapters.dynamodb_jobs import DynamoJobStore
    from hippocampus.adapters.dynamodb_memory import DynamoMemoryStore
    from hippocampus.adapters.dynamodb_recall import DynamoRecallStore
    from hippocampus.adapters.dynamodb_receipts import DynamoReceiptStore
    from hippocampus.adapters.dynamodb_records import DynamoRecordStore
    from hippocampus.adapters.eventbridge import EventBridgePublisher
    from hippocampus.adapters.s3 import S3Archive
    from hippocampus.api.idempotency import IdempotentIngest
    from hippocampus.api.queue_batch import CondenserHandler
    from hippocampus.api.stream_batch import StreamHandler
    from hippocampus.contracts.ports import Embedder, JobQueue, JobStore, LanguageModel, Tracing
    from hippocampus.domain.condense.budget_gate import BudgetGate
    from hippocampus.domain.condense.consolidation import ConsolidationService
    from hippocampus.domain.condense.dead_letters import DeadLetterReconciler
    from hippocampus.domain.condense.redrive import DeadLetterRedrive
    from hippocampus.domain.condense.release import DeferredRelease
    from hippocampus.domain.ingest.service import IngestService
    from hippocampus.domain.privacy.masking import Masker
    from hippocampus.domain.reads.edits import EditService
    from hippocampus.domain.reads.export import ExportService
    from hippocampus.domain.reads.forget_episode import EpisodeForgetter
    from hippocampus.domain.reads.lists import ListService
    from hippocampus.domain.reads.receipts import ReceiptService
    from hippocampus.domain.reads.records import RecordService
    from hippocampus.domain.reads.service import ReadService
    from hippocampus.domain.reads.usage import UsageService
    from hippocampus.domain.recall.indexing import Indexer
    from hippocampus.domain.recall.service import RecallService
    from hippocampus.settings import Settings

Built = TypeVar("Built")
# What this process has built: `reset()` forgets all of it at once.
_BUILT: list[Any] = []


def get_settings() -> "Settings":
    """The process-wide settings (hippocampus.settings), imported on first need."""
    from hippocampus.settings import get_settings as parsed

    return parsed()


def once(factory: "Callable[[], Built]") -> "Callable[[], Built]":
    """`factory`, run on first use and its result kept for the process."""
    cached = lru_cache(maxsize=1)(factory)
    _BUILT.append(cached)
    return cached


@once
def _tracing() -> "Tracing":
    """The write side's tracer, one per process (the read path builds its own, without the X-Ray SDK)."""
    return make_tracing(get_settings().tracing_mode)


@once
def _table() -> Table:
    return Table(_table_name(), lambda: aws_clients.client("dynamodb"))


@once
def memory_store() -> "DynamoMemoryStore":
    from hippocampus.adapters.dynamodb_memory import DynamoMemoryStore

    settings = get_settings()
    return DynamoMemoryStore(_table(), settings.ttl_days, settings.job_retention_days)


@once
def job_store() -> "DynamoJobStore":
    from hippocampus.adapters.dynamodb_jobs import DynamoJobStore

    return DynamoJobStore(_table(), get_settings().job_retention_days)


@once
def episode_store() -> "DynamoEpisodeStore":
    from hippocampus.adapters.dynamodb_episodes import DynamoEpisodeStore

    return DynamoEpisodeStore(_table(), get_settings().job_retention_days)


@once
def record_store() -> "DynamoRecordStore":
    from hippocampus.adapters.dynamodb_records import DynamoRecordStore

    return DynamoRecordStore(_table())


@once
def receipt_store() -> "DynamoReceiptStore":
    from hippocampus.adapters.dynamodb_receipts import DynamoReceiptStore

    return DynamoReceiptStore(_table())


@once
def receipt_service() -> "ReceiptService":
    from hippocampus.domain.reads.receipts import ReceiptService

    return ReceiptService(receipt_store(), _read_tracing())


@once
def archive() -> "S3Archive":
    from hippocampus.adapters.s3 import S3Archive

    return S3Archive(get_settings().require("bucket_name"), lambda: aws_clients.client("s3"))


@once
def _read_tracing() -> "Tracing":
    # The read path never loads the X-Ray SDK: Lambda active tracing records the invocation.
    return make_tracing(_read_tracing_mode(), allow_xray_sdk=False)


@once
def read_service() -> "ReadService":
    from hippocampus.domain.reads.service import ReadService

    return ReadService(memory_store(), job_store(), archive(), _read_tracing())


@once
def export_service() -> "ExportService":
    from hippocampus.domain.reads.export import ExportService

    return ExportService(
        memory_store(),
        job_store(),
        archive(),
        _read_tracing(),
        episode_store(),
        record_store(),
        agents=agent_registry(),
    )


@once
def record_service() -> "RecordService":
    from hippocampus.domain.reads.records import RecordService

    return RecordService(memory_store(), record_store(), _read_tracing(), receipt_store())


@once
def list_service() -> "ListService":
    from hippocampus.domain.reads.lists import ListService

    return ListService(memory_store(), episode_store(), job_store(), _read_tracing())


@once
def recall_store() -> "DynamoRecallStore":
    """The recall function's: its copies of users' episodes (20,000 episodes at most, ~90 MB of its
    1,024 for short ones), and the stored copy read with short timeouts (a first query falls back
    to a whole read)."""
    from hippocampus.adapters.episode_cache import MAX_EPISODES

    return _recall_store(MAX_EPISODES, optional_reads=True)


@once
def indexing_store() -> "DynamoRecallStore":
    """The condenser's, which keeps the stored copies: a few users' episodes in its 512 MB."""
    from hippocampus.adapters.episode_cache import KEEPER_EPISODES

    return _recall_store(KEEPER_EPISODES, optional_reads=False)


def _recall_store(max_episodes: int, optional_reads: bool) -> "DynamoRecallStore":
    from hippocampus.adapters.dynamodb_recall import DynamoRecallStore
    from hippocampus.adapters.episode_cache import EpisodeCache
    from hippocampus.adapters.episode_snapshots import CopyRules, EpisodeSnapshots
    from hippocampus.domain.recall.ranking import stored_contexts

    settings = get_settings()
    table = _table()
    # The stored copies of users' episodes live as long as an episode at most (its item's TTL).
    rules = CopyRules(settings.job_retention_days, table.epoch, stored_contexts)
    snapshots = EpisodeSnapshots(
        settings.require("bucket_name"),
        lambda: aws_clients.client("s3", optional_reads),
        rules,
        lambda: aws_clients.made("s3", optional_reads),
    )
    cache = EpisodeCache(settings.max_episodes, max_episodes)
    return DynamoRecallStore(table, memory_store(), cache, snapshots)


@once
def embedder() -> "Embedder | None":
    """The configured embedding model of the condenser (documents): built at cold start (a missing
    key or a size the provider does not offer fails it); no provider SDK is imported until the
    first call."""
    from hippocampus.adapters.embeddings.factory import make_embedder

    return make_embedder(get_settings())


@once
def query_embedder() -> "Embedder | None":
    """The same model for the recall function, with short attempts: both, and the read, fit its timeout."""
    from hippocampus.adapters.embeddings.factory import make_embedder

    return make_embedder(get_settings(), timeout_s=RECALL_EMBEDDING_TIMEOUT_S)


@once
def masker() -> "Masker | None":
    """PII masking (MEMORY_PII=mask) with the configured detector; None when it is off."""
    settings = get_settings()
    if settings.pii == "off":
        return None
    from hippocampus.adapters.dynamodb_placeholders import DynamoPlaceholderStore
    from hippocampus.adapters.pii.factory import make_pii_detector
    from hippocampus.domain.privacy.masking import Masker

    return Masker(make_pii_detector(settings.pii_detector), DynamoPlaceholderStore(_table()))


@once
def recall_service() -> "RecallService":
    from hippocampus.domain.recall.service import RecallService

    return RecallService(recall_store(), query_embedder, _read_tracing(), masker=masker())


@once
def indexer() -> "Indexer":
    from hippocampus.domain.recall.indexing import Indexer

    return Indexer(indexing_store(), embedder)


@once
def job_queue() -> "JobQueue":
    from hippocampus.adapters.sqs import SqsJobQueue

    return SqsJobQueue(get_settings().require("queue_url"), lambda: aws_clients.client("sqs"))


@once
def ingest_service() -> "IngestService":
    from hippocampus.domain.ingest.service import IngestService

    tracing = _tracing()
    return IngestService(
        memory_store(), job_store(), archive(), job_queue, tracing, masker=masker(), agents=agent_registry()
    )


@once
def agent_registry() -> "DynamoDbAgentRegistry":
    from hippocampus.adapters.dynamodb_agents import DynamoDbAgentRegistry

    return DynamoDbAgentRegistry(_table())


@once
def idempotent_ingest() -> "IdempotentIngest":
    from hippocampus.adapters.dynamodb_idempotency import user_records
    from hippocampus.api.idempotency import IdempotentIngest

    settings = get_settings()
    records = user_records(settings.require("table_name"), lambda: aws_clients.client("dynamodb"))
    return IdempotentIngest(ingest_service(), records, settings.idempotency_ttl_s)


@once
def edit_service() -> "EditService":
    from hippocampus.domain.reads.edits import EditService

    settings = get_settings()
    return EditService(
        memory_store(),
        job_store(),
        archive(),
        _tracing(),
        settings.max_words,
        receipts=receipt_store(),
        masker=masker(),
        deferrals=deferral_store(),
        agents=agent_registry(),
    )


@once
def episode_forgetter() -> "EpisodeForgetter":
    from hippocampus.domain.reads.forget_episode import EpisodeForgetter

    return EpisodeForgetter(
        memory_store(),
        episode_store(),
        record_store(),
        job_store(),
        archive(),
        _tracing(),
        get_settings().max_words,
        receipts=receipt_store(),
    )


@once
def usage_store() -> "DynamoUsageStore":
    from hippocampus.adapters.dynamodb_budgets import DynamoUsageStore

    return DynamoUsageStore(_table())


@once
def deferral_store() -> "DynamoDeferralStore":
    from hippocampus.adapters.dynamodb_budgets import DynamoDeferralStore

    return DynamoDeferralStore(_table(), episode_store())


@once
def usage_service() -> "UsageService":
    from hippocampus.domain.reads.usage import UsageService

    return UsageService(get_settings().token_budgets, usage_store(), deferral_store())


@once
def budget_gate() -> "BudgetGate":
    """Per-tenant token budgets (MEMORY_TENANT_DAILY_TOKENS): always on, so a user's parked turns
    keep their order even after the budgets are changed, and every tenant's usage is counted."""
    from hippocampus.domain.condense.budget_gate import BudgetGate

    return BudgetGate(get_settings().token_budgets, usage_store(), deferral_store())


@once
def deferred_release() -> "DeferredRelease":
    from hippocampus.domain.condense.release import DeferredRelease

    return DeferredRelease(budget_gate(), deferral_store(), job_store(), job_queue)


def build_consolidation_service(model: "Callable[[], LanguageModel]") -> "ConsolidationService":
    """The condenser's service, condensing with the model `model` gives (built on first use)."""
    from hippocampus.domain.condense.condenser import Condenser
    from hippocampus.domain.condense.consolidation import ConsolidationService
    from hippocampus.domain.condense.prompt import PromptTemplate

    settings = get_settings()
    template = PromptTemplate.from_text(settings.condense_prompt)  # an unknown placeholder fails here
    tracing = _tracing()

    @lru_cache(maxsize=1)
    def condenser() -> Condenser:
        return Condenser(
            model(), settings.max_words, template, tracing=tracing, log_content=settings.log_content
        )

    return ConsolidationService(
        memory_store(),
        job_store(),
        archive(),
        condenser,
        tracing,
        episodes=episode_store(),
        records=record_store(),
        max_records=settings.max_records,
        max_episodes=settings.max_episodes,
        llm_timeout_s=settings.llm_timeout_s,  # the time budgets of users and LLM calls
        prompt_max_chars=settings.prompt_max_chars,
        burst_window_s=settings.burst_window_ms / 1000,
        masker=masker(),
        gate=budget_gate(),
    )


@once
def consolidation_service() -> "ConsolidationService":
    from hippocampus.adapters.llm import make_language_model

    # Built now, so a missing API key fails the cold start; no provider SDK is imported until the
    # first call.
    model = make_language_model(get_settings())
    return build_consolidation_service(lambda: model)


def get_memory_handler() -> LambdaHandler:
    """The read function: a user's memory by the fast lane (api/memory_lane.py); history, jobs,
    lists, exports, health and OpenAPI, over HTTP and directly, by `read_api`, built on first need."""
    return memory_lane_function(MemoryLane(partial(read_stored_memory, _table()), _read_tracing(), read_api))


@once
def read_api() -> LambdaHandler:
    """get_memory's routes through the resolver; a bad configuration fails here, naming the variable."""
    from hippocampus.api import read_routes
    from hippocampus.api.entry import api_serving
    from hippocampus.api.openapi import router as openapi_router

    get_settings()
    return api_serving(
        [read_routes.router, openapi_router],
        {
            read_routes.read_service: read_service,
            read_routes.export_service: export_service,
            read_routes.list_service: list_service,
            read_routes.record_service: record_service,
            read_routes.receipt_service: receipt_service,
            read_routes.usage_service: usage_service,
        },
    )


def _raw_setting(field: str) -> str | None:
    """A setting the memory read's fast lane needs (the table, the read path's tracer), read from
    the environment as hippocampus.settings reads it (MEMORY_<FIELD>, any case, the last spelling
    winning) but without its model: pydantic would cost the lane's cold start about 50 ms. Every
    function validates all its settings too (get_memory's when `read_api` is built)."""
    variable = f"MEMORY_{field.upper()}"
    return {name.upper(): value for name, value in os.environ.items()}.get(variable)  # noqa: TID251


def _table_name() -> str:
    name = _raw_setting("table_name")
    if not name:
        raise ConfigurationError("MEMORY_TABLE_NAME must be set for this function")
    return name


def _read_tracing_mode() -> TracingMode:
    """MEMORY_TRACING for the read path: "otel" gives its spans; "xray" (the default in Lambda) and
    "off" give none there (adapters/tracing.py); any other value fails as the settings do."""
    mode = _raw_setting("tracing")
    modes: tuple[TracingMode, ...] = get_args(TracingMode)
    if mode is None:
        return "off"
    for known in modes:
        if mode == known:
            return known
    raise ConfigurationError(f"invalid configuration: MEMORY_TRACING: must be one of {', '.join(modes)}")


def ingest_handler() -> LambdaHandler:
    """The write function: ingest, replace, forget, delete a fact (over HTTP and directly)."""
    from hippocampus.api import write_routes
    from hippocampus.api.entry import api_function

    get_settings().require("queue_url")
    masker()  # with MEMORY_PII=mask, a detector that cannot load fails the cold start
    return api_function(
        [write_routes.router],
        {
            write_routes.idempotent_ingest: idempotent_ingest,
            write_routes.edit_service: edit_service,
            write_routes.record_service: record_service,
            write_routes.episode_forgetter: episode_forgetter,
        },
    )


def recall_handler() -> LambdaHandler:
    """The recall function: query a user's memory, the context block (over HTTP and directly)."""
    from hippocampus.api import recall_routes
    from hippocampus.api.entry import api_function

    get_settings().require("table_name")
    query_embedder()  # a bad embedding configuration fails the cold start, naming the variable
    masker()
    return api_function(
        [recall_routes.router],
        {recall_routes.recall_service: recall_service},
    )


def dead_letter_services(
    jobs: "Callable[[], JobStore]",
) -> "tuple[Callable[[], DeadLetterReconciler], Callable[[], DeadLetterRedrive]]":
    """The condenser's scheduled pass over its DLQ and the DLQ's redrive (docs/operations.md "The
    dead-letter queue"), each built on first use; a missing MEMORY_DLQ_URL or MEMORY_QUEUE_URL fails now."""
    settings = get_settings()
    dlq_url, queue_url = settings.require("dlq_url"), settings.require("queue_url")

    def sqs() -> Any:
        return aws_clients.client("sqs")

    @lru_cache(maxsize=1)
    def reconciler() -> "DeadLetterReconciler":
        from hippocampus.adapters.sqs import SqsDeadLetters
        from hippocampus.domain.condense.dead_letters import DeadLetterReconciler

        return DeadLetterReconciler(jobs(), SqsDeadLetters(dlq_url, sqs))

    @lru_cache(maxsize=1)
    def redrive() -> "DeadLetterRedrive":
        from hippocampus.adapters.sqs import SqsRedrive
        from hippocampus.domain.condense.redrive import DeadLetterRedrive

        return DeadLetterRedrive(jobs(), SqsRedrive(dlq_url, queue_url, sqs))

    return reconciler, redrive


def condenser_handler(model: "LanguageModel | None" = None) -> "CondenserHandler":
    """The SQS-triggered condenser (with its scheduled pass over the DLQ, and the DLQ's redrive);
    settings and the prompt template are checked at cold start.

    `model` replaces the configured LLM provider (tests, benchmarks); the adapters stay the real ones.
    """
    from hippocampus.api.queue_batch import condenser_function

    reconciler, redrive = dead_letter_services(job_store)
    masker()
    if model is None:
        consolidation_service()
        embedder()  # a bad embedding configuration fails the cold start too
        return condenser_function(consolidation_service, reconciler, indexer, redrive, deferred_release)
    service = build_consolidation_service(lambda: model)
    return condenser_function(lambda: service, reconciler, indexer, redrive, deferred_release)


@once
def event_publisher() -> "EventBridgePublisher":
    from hippocampus.adapters.eventbridge import EventBridgePublisher

    return EventBridgePublisher(
        get_settings().require("event_bus_name"), lambda: aws_clients.client("events")
    )


def events_handler() -> "StreamHandler":
    """The events function: the table's change stream published on EventBridge (docs/architecture.md
    "Events"); a missing MEMORY_EVENT_BUS_NAME fails the cold start."""
    from hippocampus.adapters.dynamodb_stream import stored_change
    from hippocampus.api.stream_batch import events_function

    settings = get_settings()
    settings.require("event_bus_name")
    return events_function(stored_change, event_publisher, settings.events_include_content)


def reset() -> None:
    """Forget everything built (tests switch environments and endpoints)."""
    from hippocampus.settings import get_settings as parsed

    for cached in _BUILT:
        cached.cache_clear()
    parsed.cache_clear()
    aws_clients.reset_clients()
