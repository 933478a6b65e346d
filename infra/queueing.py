"""Queueing: the FIFO ingest queue (high-throughput mode) and its FIFO dead-letter queue."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hippocampus.contracts import names as schema
from infra.config import DeploymentConfig


class Queueing(Construct):
    """One message per accepted item, grouped by tenant+user so each user is condensed in order.

    - High-throughput FIFO: deduplication scoped to the message group, throughput limit per group.
    - Deduplication ids are explicit (set by ingest), so content-based deduplication is off.
    - Visibility timeout = `schema.QUEUE_VISIBILITY_TIMEOUT_S` (6 x the condenser timeout).
    - After `schema.DLQ_MAX_RECEIVE_COUNT` receives a message moves to the FIFO DLQ.
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig) -> None:
        super().__init__(scope, construct_id)
        self.dlq = sqs.Queue(
            self,
            "DeadLetterQueue",
            queue_name=schema.resource_name(config.stage, schema.DLQ_NAME),
            fifo=True,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=cdk.Duration.days(schema.DLQ_RETENTION_DAYS),
        )
        self.queue = sqs.Queue(
            self,
            "IngestQueue",
            queue_name=schema.resource_name(config.stage, schema.QUEUE_NAME),
            fifo=True,
            content_based_deduplication=False,
            deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP,
            fifo_throughput_limit=sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=cdk.Duration.seconds(schema.QUEUE_VISIBILITY_TIMEOUT_S),
            retention_period=cdk.Duration.days(schema.QUEUE_RETENTION_DAYS),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dlq, max_receive_count=schema.DLQ_MAX_RECEIVE_COUNT
            ),
        )
