"""A boto3 client stand-in that answers some operations itself: failures and races, injected."""

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any


class ClientProxy:
    """Forwards every call to `client`, except the operations given to `intercept`."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._overrides: dict[str, Callable[..., Any]] = {}

    def intercept(self, operation: str, answer: Callable[..., Any]) -> None:
        self._overrides[operation] = answer

    @property
    def target(self) -> Any:
        """The client behind the proxy (an interception that lets the call through uses it)."""
        return self._client

    def restore(self, operation: str) -> None:
        """Forward `operation` to the client again."""
        self._overrides.pop(operation, None)

    def __getattr__(self, name: str) -> Any:
        return self._overrides.get(name) or getattr(self._client, name)


def aws_error(code: str, operation: str, **response: Any) -> Exception:
    """The `ClientError` botocore raises for an AWS error `code` (`response`: more fields, e.g. CancellationReasons)."""
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": f"injected {code}"}, **response}, operation)


def fail(
    proxy: "ClientProxy",
    operation: str,
    error: Exception,
    times: int | None = None,
    when: Callable[..., bool] | None = None,
) -> list[dict[str, Any]]:
    """Make `operation` raise `error` (its first `times` calls, else every call; only the requests
    `when(**request)` accepts, if given); returns the requests refused."""
    refused: list[dict[str, Any]] = []
    real = getattr(proxy._client, operation)

    def answer(**request: Any) -> Any:
        if (times is None or len(refused) < times) and (when is None or when(**request)):
            refused.append(request)
            raise error
        return real(**request)

    proxy.intercept(operation, answer)
    return refused


def proxied_service(
    aws: Any, dynamodb: "ClientProxy", s3: "ClientProxy", sqs: "ClientProxy", model: Any
) -> Any:
    """The three functions composed as `hippocampus.wiring` does, but on the given (proxied) clients.

    Returns a `tests.support.lambda_harness.Service` whose handlers use these adapters: a test makes
    a dependency fail by intercepting an operation on a proxy, without patching any module.
    """
    import boto3

    from hippocampus.adapters.dynamodb_episodes import DynamoEpisodeStore
    from hippocampus.adapters.dynamodb_idempotency import user_records
    from hippocampus.adapters.dynamodb_jobs import DynamoJobStore
    from hippocampus.adapters.dynamodb_memory import DynamoMemoryStore
    from hippocampus.adapters.dynamodb_recall import DynamoRecallStore
    from hippocampus.adapters.dynamodb_receipts import DynamoReceiptStore
    from hippocampus.adapters.dynamodb_records import DynamoRecordStore
    from hippocampus.adapters.dynamodb_table import Table
    from hippocampus.adapters.embeddings.offline import OfflineEmbedder
    from hippocampus.adapters.episode_cache import EpisodeCache
    from hippocampus.adapters.episode_snapshots import CopyRules, EpisodeSnapshots
    from hippocampus.adapters.s3 import S3Archive
    from hippocampus.adapters.sqs import SqsDeadLetters, SqsJobQueue
    from hippocampus.adapters.tracing import NoTracing
    from hippocampus.api import read_routes, recall_routes, write_routes
    from hippocampus.api.entry import api_function
    from hippocampus.api.idempotency import IdempotentIngest
    from hippocampus.api.queue_batch import condenser_function
    from hippocampus.domain.condense.condenser import Condenser
    from hippocampus.domain.condense.consolidation import ConsolidationService
    from hippocampus.domain.condense.dead_letters import DeadLetterReconciler
    from hippocampus.domain.condense.prompt import PromptTemplate
    from hippocampus.domain.ingest.service import IngestService
    from hippocampus.domain.reads.edits import EditService
    from hippocampus.domain.reads.export import ExportService
    from hippocampus.domain.reads.forget_episode import EpisodeForgetter
    from hippocampus.domain.reads.lists import ListService
    from hippocampus.domain.reads.receipts import ReceiptService
    from hippocampus.domain.reads.records import RecordService
    from hippocampus.domain.reads.service import ReadService
    from hippocampus.domain.recall.indexing import Indexer
    from hippocampus.domain.recall.ranking import stored_contexts
    from hippocampus.domain.recall.service import RecallService
    from hippocampus.settings import get_settings
    from tests.support.lambda_harness import Service

    settings = get_settings()
    table = Table(aws.table_name, lambda: dynamodb)
    memory = DynamoMemoryStore(table, settings.ttl_days, settings.job_retention_days)
    jobs = DynamoJobStore(table, settings.job_retention_days)
    archive = S3Archive(aws.bucket_name, lambda: s3)
    queue = SqsJobQueue(aws.queue_url, lambda: sqs)
    tracing = NoTracing()
    reads = ReadService(memory, jobs, archive, tracing)
    exports = ExportService(
        memory,
        jobs,
        archive,
        tracing,
        DynamoEpisodeStore(table, settings.job_retention_days),
        DynamoRecordStore(table),
    )
    lists = ListService(memory, DynamoEpisodeStore(table, settings.job_retention_days), jobs, tracing)
    records_client = boto3.client("dynamodb")  # Powertools takes a plain client, not a proxy
    records = user_records(aws.table_name, lambda: records_client)
    ingest = IdempotentIngest(IngestService(memory, jobs, archive, lambda: queue, tracing), records, 3600)
    edits = EditService(
        memory, jobs, archive, tracing, settings.max_words, receipts=DynamoReceiptStore(table)
    )
    condenser = Condenser(
        model, settings.max_words, PromptTemplate.from_text(settings.condense_prompt), tracing=tracing
    )
    episodes = DynamoEpisodeStore(table, settings.job_retention_days)
    consolidation = ConsolidationService(
        memory,
        jobs,
        archive,
        lambda: condenser,
        tracing,
        episodes=episodes,
        records=DynamoRecordStore(table),
        llm_timeout_s=settings.llm_timeout_s,
    )

    record_store = DynamoRecordStore(table)
    receipts = DynamoReceiptStore(table)
    record_reads = RecordService(memory, record_store, tracing, receipts)
    forgetter = EpisodeForgetter(
        memory, episodes, record_store, jobs, archive, tracing, settings.max_words, receipts=receipts
    )
    service = Service(aws.queue_url, boto3.client("sqs"))
    service.get_memory = SimpleNamespace(
        lambda_handler=api_function(
            [read_routes.router],
            {
                read_routes.read_service: lambda: reads,
                read_routes.export_service: lambda: exports,
                read_routes.list_service: lambda: lists,
                read_routes.record_service: lambda: record_reads,
                read_routes.receipt_service: lambda: ReceiptService(receipts, tracing),
            },
        )
    )
    service.ingest = SimpleNamespace(
        lambda_handler=api_function(
            [write_routes.router],
            {
                write_routes.idempotent_ingest: lambda: ingest,
                write_routes.edit_service: lambda: edits,
                write_routes.record_service: lambda: record_reads,
                write_routes.episode_forgetter: lambda: forgetter,
            },
        )
    )
    reconciler = DeadLetterReconciler(jobs, SqsDeadLetters(aws.dlq_url, lambda: sqs))
    rules = CopyRules(longest_days=30, epoch=table.epoch, contexts=stored_contexts)
    copies = EpisodeSnapshots(aws.bucket_name, lambda: s3, rules, client_made=lambda: True)
    recall_store = DynamoRecallStore(table, memory, EpisodeCache(max_kept=2000), copies)
    embedder = OfflineEmbedder()
    indexer = Indexer(recall_store, lambda: embedder)
    recall = RecallService(recall_store, lambda: embedder, tracing)
    service.recall = SimpleNamespace(
        lambda_handler=api_function(
            [recall_routes.router],
            {recall_routes.recall_service: lambda: recall},
        )
    )
    service.condenser = SimpleNamespace(
        lambda_handler=condenser_function(lambda: consolidation, lambda: reconciler, lambda: indexer)
    )
    return service
