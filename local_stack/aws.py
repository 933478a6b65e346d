"""The local stack's AWS resources, created in moto with boto3 from the CDK app's own specs.

The tables, the archive bucket and the queues are built from `infra.resources`, as the CDK
constructs are, with the local stage's names (`hippocampus-local-memory`, ...): the local
resources cannot drift from the deployed ones. What moto cannot enforce (TLS-only policies
over plain HTTP) is left out, and said so in the specs.

The change events (docs/architecture.md "Events"): the memory table has its stream (its spec's view
type), the bus is the deployment's (`hippocampus-<stage>`, `infra.resources.event_bus_name`), a
rule sends every event of the service to the standard queue `hippocampus-<stage>-events`, which a
developer follows (`hippocampus events --follow`) where a deployment would have its subscribers,
and the events DLQ `hippocampus-<stage>-events-dlq` receives the stream batches the events function
gave up on, as the deployed event source mapping sends them.
"""

import json
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config

from hippocampus.contracts import names
from hippocampus.contracts.events import EVENT_SOURCE
from infra import resources as specs
from infra.config import DeploymentConfig
from infra.resources import BucketSpec, LifecycleRule, QueueSpec, TableSpec

DUMMY_ACCESS_KEY_ID = "local"
DUMMY_SECRET_ACCESS_KEY = "local"  # noqa: S105 - moto accepts any credentials
# Local resources are named like a deployed stage called "local".
LOCAL_STAGE = "local"
_DAY_S = 86_400
EVENTS_RULE = "every-event-to-the-events-queue"
EVENTS_QUEUE_BASE_NAME = "events"
EVENTS_QUEUE_RETENTION_S = 4 * _DAY_S
# The deployed events DLQ (infra/events.py).
EVENTS_DLQ_BASE_NAME = names.EVENTS_DLQ_NAME


@dataclass(frozen=True)
class Resources:
    """What the handlers and the poller need to know about the provisioned resources."""

    region: str
    table_name: str
    bucket_name: str
    queue_url: str
    queue_arn: str
    dlq_url: str
    dlq_arn: str
    # The change events: the bus the events function publishes to, the queue its rule fills, and the
    # DLQ of the stream batches the function gave up on.
    event_bus_name: str = ""
    events_queue_url: str = ""
    events_dlq_url: str = ""

    @property
    def events_queue_name(self) -> str:
        return self.events_queue_url.rstrip("/").rpartition("/")[2]


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


def provision(endpoint_url: str | None, region: str, config: DeploymentConfig) -> Resources:
    """Create the tables, the archive bucket and the queues of a deployment with `config`.

    `endpoint_url` None: boto3's default endpoints (inside moto's `mock_aws`, as the integration tests do).
    """
    dynamodb = aws_client("dynamodb", endpoint_url, region)
    for table in specs.TABLES:
        _create_table(dynamodb, table)
    bucket = specs.archive_bucket(config)
    _create_bucket(aws_client("s3", endpoint_url, region), bucket, region)
    sqs = aws_client("sqs", endpoint_url, region)
    queues: dict[QueueSpec, tuple[str, str]] = {}  # spec → (url, ARN)
    for queue in specs.QUEUES:
        queues[queue] = _create_queue(sqs, queue, queues)
    queue_url, queue_arn = queues[specs.INGEST_QUEUE]
    dlq_url, dlq_arn = queues[specs.DEAD_LETTER_QUEUE]
    # `hippocampus-dev-events`: the queue the local rule sends every event to.
    events_queue = names.resource_name(config.stage, EVENTS_QUEUE_BASE_NAME)
    events_url, events_arn = _create_standard_queue(sqs, events_queue, EVENTS_QUEUE_RETENTION_S)
    events_dlq_name = names.resource_name(config.stage, EVENTS_DLQ_BASE_NAME)
    events_dlq_url, _ = _create_standard_queue(sqs, events_dlq_name, names.DLQ_RETENTION_DAYS * _DAY_S)
    bus_name = specs.event_bus_name(config)
    _create_event_bus(aws_client("events", endpoint_url, region), bus_name, events_arn)
    return Resources(
        region=region,
        table_name=specs.MEMORY_TABLE.name(LOCAL_STAGE),
        bucket_name=bucket.name(LOCAL_STAGE),
        queue_url=queue_url,
        queue_arn=queue_arn,
        dlq_url=dlq_url,
        dlq_arn=dlq_arn,
        event_bus_name=bus_name,
        events_queue_url=events_url,
        events_dlq_url=events_dlq_url,
    )


def seed_secret(endpoint_url: str, region: str, name: str, value: str) -> None:
    """Store the LLM API key in moto's Secrets Manager, where a deployed function reads it."""
    secrets = aws_client("secretsmanager", endpoint_url, region)
    secrets.create_secret(Name=name, SecretString=value)


def _create_table(dynamodb: Any, spec: TableSpec) -> None:
    name = spec.name(LOCAL_STAGE)
    keys = [(spec.partition_key, "HASH")] + ([(spec.sort_key, "RANGE")] if spec.sort_key else [])
    indexes = [
        {
            "IndexName": index.name,
            "KeySchema": [
                {"AttributeName": index.partition_key, "KeyType": "HASH"},
                {"AttributeName": index.sort_key, "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
        }
        for index in spec.indexes
    ]
    attributes = {key for key, _ in keys} | {
        key for index in spec.indexes for key in (index.partition_key, index.sort_key)
    }
    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"} for key in sorted(attributes)],
        KeySchema=[{"AttributeName": key, "KeyType": kind} for key, kind in keys],
        **({"GlobalSecondaryIndexes": indexes} if indexes else {}),
        SSESpecification={"Enabled": spec.aws_managed_key},
        DeletionProtectionEnabled=spec.deletion_protection,
        # The memory table's change stream, which the events function reads.
        **_stream(spec),
    )
    dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 50})
    dynamodb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute}
    )
    dynamodb.update_continuous_backups(
        TableName=name,
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": spec.point_in_time_recovery},
    )


def _stream(spec: TableSpec) -> dict[str, Any]:
    if spec.stream_view_type is None:
        return {}
    return {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": spec.stream_view_type}}


def _create_standard_queue(sqs: Any, name: str, retention_s: int) -> tuple[str, str]:
    """A standard queue (EventBridge and Lambda's on-failure destinations send to no FIFO one here)."""
    attributes = {"MessageRetentionPeriod": str(retention_s), "SqsManagedSseEnabled": "true"}
    url = str(sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"])
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return url, str(arn)


def _create_event_bus(events: Any, bus_name: str, queue_arn: str) -> None:
    """The deployment's bus, and a rule sending every event of the service to the queue."""
    events.create_event_bus(Name=bus_name)
    events.put_rule(
        Name=EVENTS_RULE,
        EventBusName=bus_name,
        EventPattern=json.dumps({"source": [EVENT_SOURCE]}),
        Description="Every change event of the service, to the queue `hippocampus events` follows.",
    )
    events.put_targets(
        Rule=EVENTS_RULE, EventBusName=bus_name, Targets=[{"Id": "events-queue", "Arn": queue_arn}]
    )


def _create_bucket(s3: Any, spec: BucketSpec, region: str) -> None:
    name = spec.name(LOCAL_STAGE)
    if region == "us-east-1":
        s3.create_bucket(Bucket=name)  # us-east-1 refuses a LocationConstraint naming itself
    else:
        s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
    if spec.block_public_access:
        flags = ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets")
        s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration=dict.fromkeys(flags, True))
    if spec.acls_disabled:
        s3.put_bucket_ownership_controls(
            Bucket=name, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
        )
    s3.put_bucket_encryption(
        Bucket=name,
        ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": spec.sse_algorithm}}]
        },
    )
    if spec.versioned:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_lifecycle_configuration(
        Bucket=name,
        LifecycleConfiguration={"Rules": [_lifecycle_rule(rule) for rule in spec.lifecycle_rules]},
    )


def _lifecycle_rule(rule: LifecycleRule) -> dict[str, Any]:
    document: dict[str, Any] = {"ID": rule.id, "Filter": {"Prefix": rule.prefix or ""}, "Status": "Enabled"}
    if rule.tag is not None:
        tag = {"Key": rule.tag[0], "Value": rule.tag[1]}
        document["Filter"] = {"And": {"Prefix": rule.prefix or "", "Tags": [tag]}}
    if rule.expiration_days is not None:
        document["Expiration"] = {"Days": rule.expiration_days}
    if rule.abort_incomplete_upload_days is not None:
        document["AbortIncompleteMultipartUpload"] = {
            "DaysAfterInitiation": rule.abort_incomplete_upload_days
        }
    return document


def _create_queue(sqs: Any, spec: QueueSpec, created: dict[QueueSpec, tuple[str, str]]) -> tuple[str, str]:
    """The URL and ARN of a new FIFO queue; its dead-letter queue must be in `created` already."""
    response = sqs.create_queue(QueueName=spec.name(LOCAL_STAGE), Attributes=_queue_attributes(spec, created))
    url = str(response["QueueUrl"])
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    return url, str(attributes["QueueArn"])


def _queue_attributes(spec: QueueSpec, created: dict[QueueSpec, tuple[str, str]]) -> dict[str, str]:
    attributes = {
        "FifoQueue": "true",
        "MessageRetentionPeriod": str(spec.retention_days * _DAY_S),
        "SqsManagedSseEnabled": json.dumps(spec.sqs_managed_sse),
    }
    if spec.content_based_deduplication is not None:
        attributes["ContentBasedDeduplication"] = json.dumps(spec.content_based_deduplication)
    if spec.high_throughput:
        attributes |= {"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}
    if spec.visibility_timeout_s is not None:
        attributes["VisibilityTimeout"] = str(spec.visibility_timeout_s)
    if spec.dead_letter is not None:
        _, dlq_arn = created[spec.dead_letter.queue]
        redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": spec.dead_letter.max_receive_count}
        attributes["RedrivePolicy"] = json.dumps(redrive)
    return attributes
