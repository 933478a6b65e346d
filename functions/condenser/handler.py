"""condenser: SQS FIFO trigger; folds each user's queued items into that user's memory.

The whole batch is condensed first (one LLM call per user), then the Powertools FIFO processor
reports each record: a failed user's records go back to SQS, later records of that user are
skipped in order, and the other users' records succeed.
"""

from typing import Any

from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from hippocampus import runtime
from hippocampus.consolidation import parse_records
from hippocampus.observability import logger, metrics

service = runtime.consolidation_service()  # validates settings and the prompt template at cold start
processor = SqsFifoPartialProcessor(skip_group_on_error=True)
# Report every failure per record, an all-failed batch included (the FIFO processor takes no such
# argument): the event source then retries exactly those records, and the invocation is no error.
processor.raise_on_entire_batch_failure = False


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    items, failures = parse_records(SQSRecord(record) for record in event["Records"])
    failures |= service.process_batch(items, context.get_remaining_time_in_millis)

    def report(record: SQSRecord) -> None:
        if record.message_id in failures:
            raise failures[record.message_id]

    return process_partial_response(event=event, record_handler=report, processor=processor, context=context)
