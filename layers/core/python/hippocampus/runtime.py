"""Process-wide wiring: settings, adapters and services, each built once and lazily.

Lambda keeps a process warm between invocations, so everything here is created on first use
and reused. Tests call `reset()` to rebuild with another environment.
"""

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from hippocampus import schema
from hippocampus.adapters import aws
from hippocampus.adapters.dynamodb import DynamoMemoryStore
from hippocampus.adapters.s3 import S3Archive
from hippocampus.observability import make_tracing
from hippocampus.service import ReadService, WriteService
from hippocampus.settings import Settings, get_settings

if TYPE_CHECKING:
    from hippocampus.condense import Condenser
    from hippocampus.consolidation import ConsolidationService
    from hippocampus.ports import JobQueue


def _store(settings: Settings) -> DynamoMemoryStore:
    return DynamoMemoryStore(
        settings.require("table_name"),
        lambda: aws.client("dynamodb"),
        memory_ttl_days=settings.memory_ttl_days,
        job_retention_days=settings.job_retention_days,
    )


def _archive(settings: Settings) -> S3Archive:
    return S3Archive(settings.require("bucket_name"), lambda: aws.client("s3"))


@lru_cache(maxsize=1)
def read_service() -> ReadService:
    settings = get_settings()
    # The read path never loads the X-Ray SDK: Lambda active tracing records the invocation.
    return ReadService(
        _store(settings), _archive(settings), make_tracing(settings.tracing_mode, allow_xray_sdk=False)
    )


@lru_cache(maxsize=1)
def job_queue() -> "JobQueue":
    from hippocampus.adapters.sqs import SqsJobQueue

    return SqsJobQueue(get_settings().require("queue_url"), lambda: aws.client("sqs"))


@lru_cache(maxsize=1)
def write_service() -> WriteService:
    settings = get_settings()
    settings.require("queue_url")
    return WriteService(
        _store(settings),
        _archive(settings),
        job_queue,
        make_tracing(settings.tracing_mode),
        settings.max_words,
    )


@lru_cache(maxsize=1)
def idempotency_store() -> Any:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    table = get_settings().require("idempotency_table_name")
    return DynamoDBPersistenceLayer(table_name=table, boto3_client=aws.client("dynamodb"))


@lru_cache(maxsize=1)
def condenser() -> "Condenser":
    from hippocampus.condense import Condenser, PromptTemplate
    from hippocampus.llm import make_provider

    settings = get_settings()
    return Condenser(
        make_provider(settings),
        settings.max_words,
        PromptTemplate.from_settings(settings),
        tracing=make_tracing(settings.tracing_mode),
        log_content=settings.log_content,
    )


@lru_cache(maxsize=1)
def consolidation_service() -> "ConsolidationService":
    from hippocampus.condense import PromptTemplate
    from hippocampus.consolidation import ConsolidationService

    settings = get_settings()
    PromptTemplate.from_settings(settings)  # an unknown placeholder fails the cold start, not a batch
    # Worst case for one user: two LLM calls (the budget retry), each with one SDK retry, plus its I/O.
    user_budget_s = (
        schema.LLM_TIMEOUTS_PER_CONDENSATION * settings.llm_timeout_s + schema.CONDENSATION_IO_MARGIN_S
    )
    user_budget_ms = int(user_budget_s * 1000)
    return ConsolidationService(
        _store(settings),
        _archive(settings),
        condenser,
        make_tracing(settings.tracing_mode),
        user_budget_ms=user_budget_ms,
    )


def reset() -> None:
    """Forget every cached object (tests switch environments and endpoints)."""
    for cached in (
        read_service,
        job_queue,
        write_service,
        idempotency_store,
        condenser,
        consolidation_service,
    ):
        cached.cache_clear()
    get_settings.cache_clear()
    aws.reset_clients()
