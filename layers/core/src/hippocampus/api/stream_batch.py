"""The events function's entry point: a batch of the table's change stream in, `batchItemFailures`
out (docs/architecture.md "Events").

Powertools' batch processor for DynamoDB streams calls `relay` per record and reports the records
that failed: Lambda delivers the batch again from the first of them, so a change is published at
least once, and one whose publishing failed is never skipped. A record that is no event is done.
"""

from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from hippocampus.contracts.events import EventPublisher, StoredChange
from hippocampus.domain.events.changes import event_of
from hippocampus.observability import MetricName, logger, metrics, record_metric

# A stream record, as Lambda hands it, read as the change it describes (None: no event's item).
ChangeReader = Callable[[Mapping[str, Any]], StoredChange | None]
StreamHandler = Callable[[Any, LambdaContext], PartialItemFailureResponse]


def events_function(
    read_change: ChangeReader, publisher: Callable[[], EventPublisher], include_content: bool
) -> StreamHandler:
    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)

    def relay(record: DynamoDBRecord) -> None:
        change = read_change(record.raw_event)
        event = event_of(change, include_content) if change is not None else None
        if event is None:
            return
        publisher().publish(event)
        record_metric(MetricName.EVENTS_PUBLISHED)
        logger.info(
            "event published",
            extra={"detail_type": event.detail_type, "event_id": event.detail.event_id},
        )

    @logger.inject_lambda_context
    @metrics.log_metrics
    def lambda_handler(event: Any, context: LambdaContext) -> PartialItemFailureResponse:
        return process_partial_response(
            event=event, record_handler=relay, processor=processor, context=context
        )

    return lambda_handler
