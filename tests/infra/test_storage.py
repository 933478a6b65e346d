"""Tables, buckets and queues of the stack with the model's default settings (one shared synth)."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Match

from hippocampus.contracts import names as schema
from tests.infra.helpers import Synth

QUEUE = "hippocampus-dev-ingest.fifo"
DLQ = "hippocampus-dev-ingest-dlq.fifo"
TLS_ONLY = {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}


def test_memory_table_on_demand_pitr_ttl_protected(default_synth: Synth) -> None:
    default_synth.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [
                {"AttributeName": schema.TABLE_PARTITION_KEY, "KeyType": "HASH"},
                {"AttributeName": schema.TABLE_SORT_KEY, "KeyType": "RANGE"},
            ],
            "BillingMode": "PAY_PER_REQUEST",
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "TimeToLiveSpecification": {"AttributeName": schema.TABLE_TTL_ATTRIBUTE, "Enabled": True},
            "SSESpecification": {"SSEEnabled": True},
            "DeletionProtectionEnabled": True,
        },
    )


def test_the_tenants_users_come_from_a_sparse_keys_only_index(default_synth: Synth) -> None:
    default_synth.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": schema.USERS_INDEX_NAME,
                    "KeySchema": [
                        {"AttributeName": schema.USERS_INDEX_PARTITION_KEY, "KeyType": "HASH"},
                        {"AttributeName": schema.USERS_INDEX_SORT_KEY, "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ]
        },
    )


def test_one_table_holds_everything_so_a_delete_can_find_everything(default_synth: Synth) -> None:
    """Idempotency-Key records live in the memory table, in the user's index partition."""
    default_synth.template.resource_count_is("AWS::DynamoDB::Table", 1)


def test_data_outlives_the_stack_by_default(default_synth: Synth) -> None:
    template = default_synth.template
    for resource_type in ("AWS::DynamoDB::Table", "AWS::S3::Bucket"):
        retained = template.find_resources(resource_type, {"DeletionPolicy": "Retain"})
        assert retained.keys() == template.find_resources(resource_type).keys(), resource_type
        assert retained


def test_archive_expires_raw_and_history_after_their_retention(default_synth: Synth) -> None:
    config = default_synth.stack.config
    default_synth.template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LoggingConfiguration": {"LogFilePrefix": "archive/"},
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [
                        {
                            "Id": "expire-raw",
                            "Prefix": schema.RAW_PREFIX,
                            "ExpirationInDays": config.raw_retention_days,
                            "Status": "Enabled",
                        },
                        {
                            "Id": "expire-history",
                            "Prefix": schema.HISTORY_PREFIX,
                            "ExpirationInDays": config.history_retention_days,
                            "Status": "Enabled",
                        },
                        {
                            "Id": "abort-incomplete-uploads",
                            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                            "Status": "Enabled",
                        },
                    ]
                )
            },
        },
    )


def test_each_stored_copy_of_episodes_expires_by_its_tag_before_its_first_episode(
    default_synth: Synth,
) -> None:
    """recall/ objects carry the whole days left to their first episode's expiry, rounded down to a
    power of two (adapters/episode_snapshots.py); one rule per value, up to the raw retention, and
    one for any copy at the raw retention."""
    bucket = next(
        properties["Properties"]
        for properties in default_synth.template.find_resources("AWS::S3::Bucket").values()
        if properties["Properties"].get("LoggingConfiguration")
    )
    copies = [
        rule for rule in bucket["LifecycleConfiguration"]["Rules"] if rule["Id"].startswith("expire-recall")
    ]
    assert default_synth.stack.config.raw_retention_days == 30
    assert [(rule["ExpirationInDays"], rule.get("TagFilters")) for rule in copies] == [
        *((days, [{"Key": schema.RECALL_EXPIRY_TAG, "Value": str(days)}]) for days in (1, 2, 4, 8, 16)),
        (30, None),  # whatever its tag (one of a longer retention set before): never past the raw retention
    ]
    assert {rule["Prefix"] for rule in copies} == {schema.RECALL_PREFIX}


def test_buckets_private_encrypted_unversioned(default_synth: Synth) -> None:
    template = default_synth.template
    template.resource_count_is("AWS::S3::Bucket", 2)  # the archive and its access logs
    template.resource_properties_count_is(
        "AWS::S3::Bucket",
        {
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                ]
            },
            "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
            # DELETE of a user must erase the content, not keep old versions.
            "VersioningConfiguration": Match.absent(),
        },
        2,
    )


def test_buckets_refuse_plain_http_and_old_tls(default_synth: Synth) -> None:
    old_tls = {"Effect": "Deny", "Condition": {"NumericLessThan": {"s3:TlsVersion": 1.2}}}
    default_synth.template.resource_properties_count_is(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with([Match.object_like(TLS_ONLY), Match.object_like(old_tls)])
            }
        },
        2,
    )


def queue_id(synth: Synth, name: str) -> str:
    return synth.logical_id("AWS::SQS::Queue", {"QueueName": name})


def test_ingest_queue_is_high_throughput_fifo_with_a_fifo_dlq(default_synth: Synth) -> None:
    template = default_synth.template
    template.has_resource_properties(
        "AWS::SQS::Queue",
        {
            "QueueName": QUEUE,
            "FifoQueue": True,
            "DeduplicationScope": "messageGroup",
            "FifoThroughputLimit": "perMessageGroupId",
            "ContentBasedDeduplication": False,  # ingest sets explicit deduplication ids
            "SqsManagedSseEnabled": True,
            "MessageRetentionPeriod": schema.QUEUE_RETENTION_DAYS * 86400,
            "RedrivePolicy": {
                "deadLetterTargetArn": {"Fn::GetAtt": [queue_id(default_synth, DLQ), "Arn"]},
                "maxReceiveCount": schema.DLQ_MAX_RECEIVE_COUNT,
            },
        },
    )
    template.has_resource_properties(
        "AWS::SQS::Queue",
        {
            "QueueName": DLQ,
            "FifoQueue": True,
            "SqsManagedSseEnabled": True,
            "MessageRetentionPeriod": schema.DLQ_RETENTION_DAYS * 86400,
        },
    )


def test_queues_refuse_plain_http(default_synth: Synth) -> None:
    default_synth.template.resource_properties_count_is(
        "AWS::SQS::QueuePolicy", {"PolicyDocument": {"Statement": [Match.object_like(TLS_ONLY)]}}, 3
    )  # the ingest queue, its DLQ, the events DLQ (test_events_stack.py)


def test_a_message_is_not_redelivered_while_the_condenser_may_still_run(default_synth: Synth) -> None:
    """SQS' guidance for Lambda: a visibility timeout of at least six times the function timeout."""
    queue: dict[str, Any] = default_synth.props(queue_id(default_synth, QUEUE))
    assert queue["VisibilityTimeout"] >= 6 * default_synth.function("condenser")["Timeout"]


def test_condenser_consumes_the_queue_reporting_item_failures(default_synth: Synth) -> None:
    template = default_synth.template
    template.resource_count_is("AWS::Lambda::EventSourceMapping", 2)  # and the events function's stream
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "FunctionName": {"Ref": default_synth.function_id("condenser")},
            "EventSourceArn": {"Fn::GetAtt": [queue_id(default_synth, QUEUE), "Arn"]},
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BatchSize": schema.CONDENSER_BATCH_SIZE,
            "ScalingConfig": Match.absent(),  # no concurrency cap unless configured
        },
    )
