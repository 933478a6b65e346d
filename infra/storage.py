"""Storage: the memory table (Idempotency-Key records included, its change stream) and the archive bucket
(plus its access-log bucket).

What each resource is comes from `infra.resources`, which the local stack provisions from too;
this module maps those specs onto CDK constructs.
"""

from __future__ import annotations

from typing import Any, Final

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra import resources
from infra.config import DeploymentConfig
from infra.resources import BucketSpec, LifecycleRule, TableSpec

_STREAM_VIEW_TYPE: Final = {"NEW_AND_OLD_IMAGES": dynamodb.StreamViewType.NEW_AND_OLD_IMAGES}

_BUCKET_ENCRYPTION: Final = {
    "AES256": s3.BucketEncryption.S3_MANAGED,
    "aws:kms": s3.BucketEncryption.KMS_MANAGED,
}


def removal_policy(config: DeploymentConfig) -> cdk.RemovalPolicy:
    return cdk.RemovalPolicy.DESTROY if config.removal_policy == "destroy" else cdk.RemovalPolicy.RETAIN


class Storage(Construct):
    """DynamoDB on demand with PITR and TTL; S3 with block-public-access, SSE, TLS-only, lifecycle.

    Tables and buckets get generated names (surfaced as stack outputs): a table or bucket kept
    by `removal_policy: retain` then never blocks a redeploy of the same stage.
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig) -> None:
        super().__init__(scope, construct_id)
        removal = removal_policy(config)
        destroy = config.removal_policy == "destroy"
        self.table = _table(self, "MemoryTable", resources.MEMORY_TABLE, removal, destroy)
        # The same table seen without its indexes: a grant on it covers the table's items alone
        # (a grant on `table` adds `<table>/index/*`). Only get_memory may query the users index,
        # and it is granted that alone (infra/grants.py).
        self.table_items = dynamodb.Table.from_table_attributes(
            self, "MemoryTableItems", table_arn=self.table.table_arn
        )
        self.access_log_bucket = _secure_bucket(self, "AccessLogBucket", resources.ACCESS_LOG_BUCKET, removal)
        self.bucket = _secure_bucket(
            self,
            "ArchiveBucket",
            resources.archive_bucket(config),
            removal,
            server_access_logs_bucket=self.access_log_bucket,
            server_access_logs_prefix="archive/",
        )


def _table(
    scope: Construct, construct_id: str, spec: TableSpec, removal: cdk.RemovalPolicy, destroy: bool
) -> dynamodb.Table:
    """An unnamed table: a retained one never blocks a redeploy."""
    table = dynamodb.Table(
        scope,
        construct_id,
        partition_key=_string_key(spec.partition_key),
        sort_key=_string_key(spec.sort_key) if spec.sort_key else None,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=spec.point_in_time_recovery
        ),
        time_to_live_attribute=spec.ttl_attribute,
        # Enabled on an existing table in place (StreamSpecification updates without replacement).
        stream=_STREAM_VIEW_TYPE[spec.stream_view_type] if spec.stream_view_type else None,
        encryption=(
            dynamodb.TableEncryption.AWS_MANAGED if spec.aws_managed_key else dynamodb.TableEncryption.DEFAULT
        ),
        # A table `cdk destroy` may delete cannot be protected from deletion.
        deletion_protection=not destroy if spec.deletion_protection else None,
        removal_policy=removal,
    )
    for index in spec.indexes:
        table.add_global_secondary_index(
            index_name=index.name,
            partition_key=_string_key(index.partition_key),
            sort_key=_string_key(index.sort_key),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
    return table


def _string_key(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


def _secure_bucket(
    scope: Construct, construct_id: str, spec: BucketSpec, removal: cdk.RemovalPolicy, **props: Any
) -> s3.Bucket:
    """A bucket as `spec` describes it, emptied when destroyed."""
    return s3.Bucket(
        scope,
        construct_id,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL if spec.block_public_access else None,
        encryption=_BUCKET_ENCRYPTION[spec.sse_algorithm],
        enforce_ssl=True,
        minimum_tls_version=spec.minimum_tls_version,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED if spec.acls_disabled else None,
        versioned=spec.versioned,
        lifecycle_rules=[_lifecycle_rule(rule) for rule in spec.lifecycle_rules],
        removal_policy=removal,
        auto_delete_objects=removal == cdk.RemovalPolicy.DESTROY,
        **props,
    )


def _lifecycle_rule(rule: LifecycleRule) -> s3.LifecycleRule:
    return s3.LifecycleRule(
        id=rule.id,
        prefix=rule.prefix,
        tag_filters=dict([rule.tag]) if rule.tag else None,
        expiration=_days(rule.expiration_days),
        abort_incomplete_multipart_upload_after=_days(rule.abort_incomplete_upload_days),
    )


def _days(days: int | None) -> cdk.Duration | None:
    return None if days is None else cdk.Duration.days(days)
