"""What the tables, the archive bucket and the queues are: one description for both builders.

The CDK constructs (`storage.py`, `queueing.py`) and the local stack (`local_stack/aws.py`,
boto3 against moto) both build from these specs, so the local resources have the deployed
settings. No aws_cdk import: the local stack reads this module. Names and keys come from
`hippocampus.contracts.names`, which the adapters read too (docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from hippocampus.contracts import names
from infra.config import DeploymentConfig

ACCESS_LOG_RETENTION_DAYS: Final = 90


@dataclass(frozen=True)
class IndexSpec:
    """A global secondary index with string keys that projects only the keys."""

    name: str
    partition_key: str
    sort_key: str


@dataclass(frozen=True)
class TableSpec:
    """An on-demand DynamoDB table with string keys and a TTL attribute."""

    base_name: str
    partition_key: str
    ttl_attribute: str
    sort_key: str | None = None
    # Unless the deployment's removal policy is `destroy` (the local stack has none).
    deletion_protection: bool = False
    point_in_time_recovery: bool = True
    # A KMS key AWS manages for the account (False: the key AWS owns).
    aws_managed_key: bool = True
    indexes: tuple[IndexSpec, ...] = ()
    # The table's change stream (None: none). Enabling one on an existing table updates it in place.
    stream_view_type: Literal["NEW_AND_OLD_IMAGES"] | None = None

    def name(self, stage: str) -> str:
        """The local stack's name; deployed tables get generated names (stack outputs)."""
        return names.resource_name(stage, self.base_name)


@dataclass(frozen=True)
class LifecycleRule:
    id: str
    prefix: str | None = None  # None: every object
    expiration_days: int | None = None
    abort_incomplete_upload_days: int | None = None
    tag: tuple[str, str] | None = None  # only the objects with this tag (key, value)


@dataclass(frozen=True)
class BucketSpec:
    """A private bucket: public access blocked, ACLs disabled, SSE-S3, plain HTTP and old TLS refused.

    Locally moto serves plain HTTP and evaluates no bucket policy: the TLS settings are CDK only.
    """

    lifecycle_rules: tuple[LifecycleRule, ...]
    # The local stack's name (deployed buckets get generated names); None: not created locally.
    base_name: str | None = None
    versioned: bool = False
    block_public_access: bool = True
    acls_disabled: bool = True
    sse_algorithm: Literal["AES256", "aws:kms"] = "AES256"
    minimum_tls_version: float = 1.2

    def name(self, stage: str) -> str:
        if self.base_name is None:
            raise ValueError("this bucket is not created locally: it has no name of its own")
        return names.resource_name(stage, self.base_name)


@dataclass(frozen=True)
class DeadLetter:
    queue: QueueSpec
    max_receive_count: int


@dataclass(frozen=True)
class QueueSpec:
    """A FIFO queue with SQS-managed encryption, refusing plain HTTP (CDK only, as for buckets)."""

    base_name: str
    retention_days: int
    visibility_timeout_s: int | None = None  # None: SQS's default
    content_based_deduplication: bool | None = None  # None: SQS's default (off)
    # High-throughput FIFO: deduplication per message group, throughput limit per group id.
    high_throughput: bool = False
    dead_letter: DeadLetter | None = None
    sqs_managed_sse: bool = True

    def name(self, stage: str) -> str:
        return names.resource_name(stage, self.base_name)


# Single-table design: memories, facts, jobs, history index.
MEMORY_TABLE: Final = TableSpec(
    base_name=names.TABLE_NAME,
    partition_key=names.TABLE_PARTITION_KEY,
    sort_key=names.TABLE_SORT_KEY,
    ttl_attribute=names.TABLE_TTL_ATTRIBUTE,
    deletion_protection=True,
    indexes=(IndexSpec(names.USERS_INDEX_NAME, names.USERS_INDEX_PARTITION_KEY, names.USERS_INDEX_SORT_KEY),),
    # What the events function reads (docs/architecture.md "Events"): both images, since an event says
    # what changed (a record invalidated, a job that reached its final status).
    stream_view_type="NEW_AND_OLD_IMAGES",
)


def event_bus_name(config: DeploymentConfig) -> str:
    """The change events' bus, and their schema registry: `hippocampus-<stage>`, the stage's prefix itself
    (docs/architecture.md "Events")."""
    return config.name_prefix


def archive_bucket(config: DeploymentConfig) -> BucketSpec:
    """Raw payloads (raw/) and past memory versions (history/), each expired after its retention;
    the stored copies of users' episodes (recall/), each expired by its tag about when its first
    episode is (within S3's daily run), and none later than the raw retention
    (adapters/episode_snapshots.py).

    Unversioned on purpose: DELETE must really erase a user's content, not keep old versions.
    """
    copies = tuple(
        LifecycleRule(
            f"expire-recall-{days}d",
            prefix=names.RECALL_PREFIX,
            expiration_days=days,
            tag=(names.RECALL_EXPIRY_TAG, str(days)),
        )
        for days in names.recall_expiry_days(config.raw_retention_days)
    )
    return BucketSpec(
        base_name=names.BUCKET_NAME,
        lifecycle_rules=(
            LifecycleRule("expire-raw", prefix=names.RAW_PREFIX, expiration_days=config.raw_retention_days),
            LifecycleRule(
                "expire-history", prefix=names.HISTORY_PREFIX, expiration_days=config.history_retention_days
            ),
            *copies,
            # Whatever its tag (one of a longer retention, set before it was shortened): no copy
            # outlives the raw payloads' retention (S3 applies the earliest expiry that matches).
            LifecycleRule(
                "expire-recall", prefix=names.RECALL_PREFIX, expiration_days=config.raw_retention_days
            ),
            LifecycleRule("abort-incomplete-uploads", abort_incomplete_upload_days=1),
        ),
    )


# The archive bucket's server access logs (CDK only: the local stack keeps no access logs).
ACCESS_LOG_BUCKET: Final = BucketSpec(
    lifecycle_rules=(LifecycleRule("expire-access-logs", expiration_days=ACCESS_LOG_RETENTION_DAYS),),
)

DEAD_LETTER_QUEUE: Final = QueueSpec(base_name=names.DLQ_NAME, retention_days=names.DLQ_RETENTION_DAYS)
# One message per accepted item, grouped by tenant+user so each user is condensed in order.
# Ingest sets explicit deduplication ids, so content-based deduplication is off.
INGEST_QUEUE: Final = QueueSpec(
    base_name=names.QUEUE_NAME,
    retention_days=names.QUEUE_RETENTION_DAYS,
    visibility_timeout_s=names.QUEUE_VISIBILITY_TIMEOUT_S,
    content_based_deduplication=False,
    high_throughput=True,
    dead_letter=DeadLetter(DEAD_LETTER_QUEUE, max_receive_count=names.DLQ_MAX_RECEIVE_COUNT),
)

# Everything the local stack creates; a dead-letter queue comes before the queue that uses it.
TABLES: Final = (MEMORY_TABLE,)
QUEUES: Final = (DEAD_LETTER_QUEUE, INGEST_QUEUE)
