"""moto's server as the AWS endpoint, provisioned like the CDK app provisions AWS.

Every name and setting comes from `hippocampus.schema` (shared with the CDK app and the
adapters) or from the deployment defaults of `infra.config`, so the local resources cannot
drift from the deployed ones. What moto cannot enforce (a TLS-only bucket policy over plain
HTTP, KMS) is left out and said so below.
"""

import json
import logging
import socket
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from moto.server import ThreadedMotoServer
from moto.sqs import models as sqs_models

from hippocampus.contracts import names as schema

DUMMY_ACCESS_KEY_ID = "local"
DUMMY_SECRET_ACCESS_KEY = "local"  # noqa: S105 - moto accepts any credentials
DEFAULT_REGION = "us-east-1"
LOOPBACK = "127.0.0.1"
# Local resources are named like a deployed stage called "local".
LOCAL_STAGE = "local"
_DAY_S = 86_400


@dataclass(frozen=True)
class Retention:
    """Retention settings of the deployment (S3 lifecycle and DynamoDB TTL)."""

    raw_days: int
    history_days: int


@dataclass(frozen=True)
class Resources:
    """What the handlers and the poller need to know about the provisioned resources."""

    region: str
    table_name: str
    idempotency_table_name: str
    bucket_name: str
    queue_url: str
    queue_arn: str
    dlq_url: str
    dlq_arn: str


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _fifo_deliverable(queue: Any) -> list[Any]:
    """Messages SQS would deliver from a FIFO queue now: in order, per group, up to the first in flight."""
    blocked: set[str] = set()
    deliverable = []
    for message in queue._messages:
        if message.delayed:
            continue
        group = message.group_id
        if group is not None and group in blocked:
            continue
        if message.visible:
            deliverable.append(message)
        elif group is not None:
            blocked.add(group)  # in flight: later messages of its group wait
    return deliverable


def fix_moto_fifo_ordering() -> None:
    """Make moto 5.2's FIFO queues keep the order of a message group across retries.

    moto blocks a group while any of its received messages is "pending", and clears a
    pending message only when its receive loop reaches it. When several messages of one
    group come back at once (a failed batch whose visibility expires), the first ones are
    skipped because the later ones still look pending, and a later message is delivered
    alone, ahead of the earlier ones. SQS instead delivers a group's messages in order, up
    to the first one still in flight. This computes that rule in `Queue.messages`, which the
    receive loop and the long-poll wait use, and leaves moto's own group bookkeeping empty
    for FIFO queues.
    """
    queue_class: Any = sqs_models.Queue
    if getattr(queue_class, "_hippocampus_fifo_fix", False):
        return
    visible = queue_class.messages.fget
    groups = queue_class.pending_message_groups.fget

    def messages(queue: Any) -> list[Any]:
        return _fifo_deliverable(queue) if queue.fifo_queue else list(visible(queue))

    def pending_message_groups(queue: Any) -> set[str]:
        return set() if queue.fifo_queue else set(groups(queue))

    def approximate_number_of_messages(queue: Any) -> int:
        return len(visible(queue))

    queue_class.messages = property(messages)
    queue_class.pending_message_groups = property(pending_message_groups)
    queue_class.approximate_number_of_messages = property(approximate_number_of_messages)
    queue_class._hippocampus_fifo_fix = True


class MotoEndpoint:
    """moto's ThreadedMotoServer on loopback, on a free port."""

    def __init__(self, port: int = 0) -> None:
        self._requested_port = port
        self._server: ThreadedMotoServer | None = None
        self.url = ""

    def start(self) -> str:
        # werkzeug logs every request to stderr unless told otherwise; the stack has its own access log.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        fix_moto_fifo_ordering()
        # Port 0: the server binds a free port itself (no race with another process).
        self._server = ThreadedMotoServer(ip_address=LOOPBACK, port=self._requested_port, verbose=False)
        self._server.start()
        host, bound = self._server.get_host_and_port()
        self.url = f"http://{host}:{bound}"
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None


def aws_client(service: str, endpoint_url: str | None, region: str) -> Any:
    """A boto3 client for moto, with dummy credentials whatever the environment holds."""
    return boto3.session.Session(
        aws_access_key_id=DUMMY_ACCESS_KEY_ID,
        aws_secret_access_key=DUMMY_SECRET_ACCESS_KEY,
        region_name=region,
    ).client(
        service,
        endpoint_url=endpoint_url,
        config=Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=2, read_timeout=30),
    )


def provision(endpoint_url: str | None, region: str, retention: Retention) -> Resources:
    """Create the tables, the bucket and the queues with the CDK app's settings.

    `endpoint_url` None: boto3's default endpoints (inside moto's `mock_aws`, as the integration tests do).
    """
    dynamodb = aws_client("dynamodb", endpoint_url, region)
    s3 = aws_client("s3", endpoint_url, region)
    sqs = aws_client("sqs", endpoint_url, region)

    _create_table(
        dynamodb,
        schema.resource_name(LOCAL_STAGE, schema.TABLE_NAME),
        keys=[(schema.TABLE_PARTITION_KEY, "HASH"), (schema.TABLE_SORT_KEY, "RANGE")],
        ttl_attribute=schema.TABLE_TTL_ATTRIBUTE,
        deletion_protection=True,
    )
    _create_table(
        dynamodb,
        schema.resource_name(LOCAL_STAGE, schema.IDEMPOTENCY_TABLE_NAME),
        keys=[(schema.IDEMPOTENCY_PARTITION_KEY, "HASH")],
        ttl_attribute=schema.IDEMPOTENCY_TTL_ATTRIBUTE,
    )
    _create_bucket(s3, schema.resource_name(LOCAL_STAGE, schema.BUCKET_NAME), region, retention)

    dlq_url = sqs.create_queue(
        QueueName=schema.resource_name(LOCAL_STAGE, schema.DLQ_NAME),
        Attributes={
            "FifoQueue": "true",
            "ContentBasedDeduplication": "false",
            "MessageRetentionPeriod": str(schema.DLQ_RETENTION_DAYS * _DAY_S),
            "SqsManagedSseEnabled": "true",
        },
    )["QueueUrl"]
    dlq_arn = _queue_arn(sqs, dlq_url)
    queue_url = sqs.create_queue(
        QueueName=schema.resource_name(LOCAL_STAGE, schema.QUEUE_NAME),
        Attributes={
            "FifoQueue": "true",
            # The ingest function sets explicit deduplication ids.
            "ContentBasedDeduplication": "false",
            # High-throughput FIFO.
            "DeduplicationScope": "messageGroup",
            "FifoThroughputLimit": "perMessageGroupId",
            "VisibilityTimeout": str(schema.QUEUE_VISIBILITY_TIMEOUT_S),
            "MessageRetentionPeriod": str(schema.QUEUE_RETENTION_DAYS * _DAY_S),
            "SqsManagedSseEnabled": "true",
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": schema.DLQ_MAX_RECEIVE_COUNT}
            ),
        },
    )["QueueUrl"]
    return Resources(
        region=region,
        table_name=schema.resource_name(LOCAL_STAGE, schema.TABLE_NAME),
        idempotency_table_name=schema.resource_name(LOCAL_STAGE, schema.IDEMPOTENCY_TABLE_NAME),
        bucket_name=schema.resource_name(LOCAL_STAGE, schema.BUCKET_NAME),
        queue_url=queue_url,
        queue_arn=_queue_arn(sqs, queue_url),
        dlq_url=dlq_url,
        dlq_arn=dlq_arn,
    )


def seed_secret(endpoint_url: str, region: str, name: str, value: str) -> None:
    """Store the LLM API key in moto's Secrets Manager, where a deployed function reads it."""
    secrets = aws_client("secretsmanager", endpoint_url, region)
    secrets.create_secret(Name=name, SecretString=value)


def _create_table(
    dynamodb: Any,
    name: str,
    keys: list[tuple[str, str]],
    ttl_attribute: str,
    deletion_protection: bool = False,
) -> None:
    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"} for key, _ in keys],
        KeySchema=[{"AttributeName": key, "KeyType": kind} for key, kind in keys],
        SSESpecification={"Enabled": True},
        DeletionProtectionEnabled=deletion_protection,
    )
    dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 50})
    dynamodb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl_attribute}
    )
    dynamodb.update_continuous_backups(
        TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
    )


def _create_bucket(s3: Any, name: str, region: str, retention: Retention) -> None:
    if region == "us-east-1":
        s3.create_bucket(Bucket=name)
    else:
        s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
    s3.put_public_access_block(
        Bucket=name,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    s3.put_bucket_ownership_controls(
        Bucket=name, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    )
    s3.put_bucket_encryption(
        Bucket=name,
        ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
        },
    )
    s3.put_bucket_lifecycle_configuration(
        Bucket=name,
        LifecycleConfiguration={
            "Rules": [
                {
                    "ID": "expire-raw",
                    "Filter": {"Prefix": schema.RAW_PREFIX},
                    "Status": "Enabled",
                    "Expiration": {"Days": retention.raw_days},
                },
                {
                    "ID": "expire-history",
                    "Filter": {"Prefix": schema.HISTORY_PREFIX},
                    "Status": "Enabled",
                    "Expiration": {"Days": retention.history_days},
                },
                {
                    "ID": "abort-incomplete-uploads",
                    "Filter": {"Prefix": ""},
                    "Status": "Enabled",
                    "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                },
            ]
        },
    )
    # Not reproduced locally: the bucket policy denying non-TLS requests (moto serves plain HTTP on
    # loopback and does not evaluate bucket policies), server access logging, the queues' TLS-only
    # policies, and the stage prefix of the deployed queue names.


def _queue_arn(sqs: Any, queue_url: str) -> str:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]
    return str(attributes["QueueArn"])
