"""The condenser's entry point: an SQS FIFO batch in, `batchItemFailures` out; its scheduled
pass over the dead-letter queue (an EventBridge "Scheduled Event", see domain/condense/dead_letters.py),
which also sends back the turns parked by token budgets (domain/condense/release.py);
and its direct action, the redrive of that queue (api/redrive_action.py).

The whole batch is handed to the consolidation service at once, so one user's records are
condensed with one LLM call (coalescing). Powertools' `SqsFifoPartialProcessor` calls a handler
per record, which cannot coalesce; so the failures are reported here with its rule
(`skip_group_on_error`): once a record of a message group fails, every later record of that
group fails too, and SQS delivers them again in order.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any

from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from hippocampus.api.envelope import JSON
from hippocampus.api.redrive_action import RedriveProvider, invoke_redrive
from hippocampus.contracts.models import CondenseMessage
from hippocampus.contracts.recall import IndexMessage
from hippocampus.domain.condense.consolidation import ConsolidationService
from hippocampus.domain.condense.dead_letters import DeadLetterReconciler
from hippocampus.domain.condense.queued import QueuedItem
from hippocampus.domain.condense.release import DeferredRelease
from hippocampus.domain.recall.indexing import Indexer, index_users
from hippocampus.observability import logger, metrics

CondenserHandler = Callable[[Any, LambdaContext], PartialItemFailureResponse | JSON]
SCHEDULED_EVENT = "Scheduled Event"  # EventBridge's detail-type of a schedule

# A body is read once, as the first kind it fits: a condensation (which has no `kind` field: the
# messages already queued must still be read), else an index request.
QueueMessage = Annotated[CondenseMessage | IndexMessage, Field(union_mode="left_to_right")]
_queue_message: TypeAdapter[CondenseMessage | IndexMessage] = TypeAdapter(
    QueueMessage, config=ConfigDict(defer_build=True)
)


def condenser_function(
    service: Callable[[], ConsolidationService],
    reconciler: Callable[[], DeadLetterReconciler],
    indexer: Callable[[], Indexer],
    redrive: RedriveProvider | None = None,
    release: Callable[[], DeferredRelease] | None = None,
) -> CondenserHandler:
    """`redrive` serves the direct action; without it, a direct invocation is refused (422).
    `release`: the scheduled pass also sends back the turns parked by token budgets."""

    @logger.inject_lambda_context
    @metrics.log_metrics
    def lambda_handler(event: Any, context: LambdaContext) -> PartialItemFailureResponse | JSON:
        if isinstance(event, Mapping) and event.get("detail-type") == SCHEDULED_EVENT:
            scheduled_pass(reconciler, release)
            return {"batchItemFailures": []}
        if not isinstance(event, Mapping) or "Records" not in event:
            # Neither the schedule nor a batch: a direct invocation, whatever its JSON type.
            return invoke_redrive(event, context, redrive)
        records = [SQSRecord(record) for record in event["Records"]]
        items, index_requests, unreadable = parse_records(records)
        remaining_ms = context.get_remaining_time_in_millis
        outcome = service().process_batch(items, remaining_ms)
        failed = unreadable | set(outcome.failures)
        failed |= index_users(indexer(), outcome.condensed, index_requests, remaining_ms)
        return batch_failures(records, failed)

    return lambda_handler


def scheduled_pass(
    reconciler: Callable[[], DeadLetterReconciler], release: Callable[[], DeferredRelease] | None
) -> None:
    """The DLQ pass and the release of parked turns, each whatever the other does; the first
    failure is raised after both ran, so EventBridge retries the invocation."""
    failures: list[Exception] = []
    for step in (lambda: reconciler().reconcile(), lambda: release().release() if release else 0):
        try:
            step()
        except Exception as error:
            logger.exception("a step of the scheduled pass failed")
            failures.append(error)
    if failures:
        raise failures[0]


def parse_records(
    records: Iterable[SQSRecord],
) -> tuple[list[QueuedItem], dict[str, IndexMessage], set[str]]:
    """Queue records → items to condense, index requests (by message id), and the records whose
    body cannot be parsed (they fail, and end in the DLQ)."""
    items: list[QueuedItem] = []
    index_requests: dict[str, IndexMessage] = {}
    unreadable: set[str] = set()
    for record in records:
        try:
            message = _queue_message.validate_json(record.body)
        except ValidationError:
            logger.error("unreadable queue message", extra={"message_id": record.message_id})
            unreadable.add(record.message_id)
            continue
        if isinstance(message, IndexMessage):
            index_requests[record.message_id] = message
            continue
        receive_count = int(record.attributes.approximate_receive_count or 1)
        items.append(
            QueuedItem(record.message_id, message, receive_count, record.attributes.aws_trace_header)
        )
    return items, index_requests, unreadable


def batch_failures(records: Sequence[SQSRecord], failed: set[str]) -> PartialItemFailureResponse:
    """The records SQS must deliver again: the failed ones and every later record of their groups."""
    failed_groups: set[str] = set()
    retry: list[str] = []
    for record in records:
        group = record.attributes.message_group_id
        if record.message_id in failed or (group is not None and group in failed_groups):
            if group is not None:
                failed_groups.add(group)
            retry.append(record.message_id)
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in retry]}
