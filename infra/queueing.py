"""Queueing: the FIFO ingest queue (high-throughput mode) and its FIFO dead-letter queue.

What each queue is comes from `infra.resources`, which the local stack provisions from too;
this module maps those specs onto CDK constructs.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import resources
from infra.config import DeploymentConfig
from infra.resources import QueueSpec


class Queueing(Construct):
    """The ingest queue and its DLQ (`resources.INGEST_QUEUE`, `resources.DEAD_LETTER_QUEUE`)."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig) -> None:
        super().__init__(scope, construct_id)
        built: dict[QueueSpec, sqs.Queue] = {}
        self.dlq = _queue(self, "DeadLetterQueue", resources.DEAD_LETTER_QUEUE, config.stage, built)
        self.queue = _queue(self, "IngestQueue", resources.INGEST_QUEUE, config.stage, built)


def _queue(
    scope: Construct, construct_id: str, spec: QueueSpec, stage: str, built: dict[QueueSpec, sqs.Queue]
) -> sqs.Queue:
    """A TLS-only FIFO queue; its dead-letter queue must be in `built` already."""
    dead_letter = None
    if spec.dead_letter is not None:
        dead_letter = sqs.DeadLetterQueue(
            queue=built[spec.dead_letter.queue], max_receive_count=spec.dead_letter.max_receive_count
        )
    queue = sqs.Queue(
        scope,
        construct_id,
        queue_name=spec.name(stage),
        fifo=True,
        content_based_deduplication=spec.content_based_deduplication,
        deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP if spec.high_throughput else None,
        fifo_throughput_limit=sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID if spec.high_throughput else None,
        encryption=sqs.QueueEncryption.SQS_MANAGED
        if spec.sqs_managed_sse
        else sqs.QueueEncryption.UNENCRYPTED,
        enforce_ssl=True,
        visibility_timeout=(
            cdk.Duration.seconds(spec.visibility_timeout_s) if spec.visibility_timeout_s is not None else None
        ),
        retention_period=cdk.Duration.days(spec.retention_days),
        dead_letter_queue=dead_letter,
    )
    built[spec] = queue
    return queue
