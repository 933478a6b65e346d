"""Storage: the memory table, the idempotency table and the archive bucket (plus its access-log bucket)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hippocampus.contracts import names as schema
from infra.config import DeploymentConfig

ACCESS_LOG_RETENTION_DAYS = 90


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
        pitr = dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True)

        # Single-table design: memories, facts, jobs, history index (keys in hippocampus.schema).
        self.table = dynamodb.Table(
            self,
            "MemoryTable",
            partition_key=dynamodb.Attribute(
                name=schema.TABLE_PARTITION_KEY, type=dynamodb.AttributeType.STRING
            ),
            sort_key=dynamodb.Attribute(name=schema.TABLE_SORT_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=pitr,
            time_to_live_attribute=schema.TABLE_TTL_ATTRIBUTE,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            deletion_protection=not destroy,
            removal_policy=removal,
        )

        # Powertools idempotency records of the Idempotency-Key header (its default attribute names).
        self.idempotency_table = dynamodb.Table(
            self,
            "IdempotencyTable",
            partition_key=dynamodb.Attribute(
                name=schema.IDEMPOTENCY_PARTITION_KEY, type=dynamodb.AttributeType.STRING
            ),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=pitr,
            time_to_live_attribute=schema.IDEMPOTENCY_TTL_ATTRIBUTE,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            removal_policy=removal,
        )

        self.access_log_bucket = _secure_bucket(
            self,
            "AccessLogBucket",
            removal,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-access-logs", expiration=cdk.Duration.days(ACCESS_LOG_RETENTION_DAYS)
                )
            ],
        )

        # Raw payloads (raw/) and past memory versions (history/), each expired after its retention.
        # Unversioned on purpose: DELETE must really erase a user's content, not keep old versions.
        self.bucket = _secure_bucket(
            self,
            "ArchiveBucket",
            removal,
            versioned=False,
            server_access_logs_bucket=self.access_log_bucket,
            server_access_logs_prefix="archive/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-raw",
                    prefix=schema.RAW_PREFIX,
                    expiration=cdk.Duration.days(config.raw_retention_days),
                ),
                s3.LifecycleRule(
                    id="expire-history",
                    prefix=schema.HISTORY_PREFIX,
                    expiration=cdk.Duration.days(config.history_retention_days),
                ),
                s3.LifecycleRule(
                    id="abort-incomplete-uploads",
                    abort_incomplete_multipart_upload_after=cdk.Duration.days(1),
                ),
            ],
        )


def _secure_bucket(
    scope: Construct, construct_id: str, removal: cdk.RemovalPolicy, **props: Any
) -> s3.Bucket:
    """Every bucket: no public access, encrypted, TLS 1.2+ only, no ACLs, emptied when destroyed."""
    return s3.Bucket(
        scope,
        construct_id,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        minimum_tls_version=1.2,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=removal,
        auto_delete_objects=removal == cdk.RemovalPolicy.DESTROY,
        **props,
    )
