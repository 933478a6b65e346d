"""Each function role's grants: what it touches, nothing more (docs/operations.md "What the functions may do").

Plain functions of a role and the resources; the event sources and the schedule stay with the
functions (`infra.functions`), which call these once per role.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from hippocampus.contracts import names as schema
from infra.config import DeploymentConfig
from infra.nag import acknowledge, nag_text
from infra.queueing import Queueing
from infra.storage import Storage

# Geographic prefixes of Bedrock cross-region inference profile ids (us.anthropic.claude-…).
_INFERENCE_PROFILE_PREFIXES: Final = ("us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global.")
# Secrets Manager appends six random characters to a secret's name in its ARN.
_ARN_NAME_SUFFIX: Final = "-??????"


def objects(role: iam.IRole, bucket: s3.IBucket, prefix: str, actions: Sequence[str]) -> None:
    """`actions` on the objects under `prefix` only."""
    resource = bucket.arn_for_objects(prefix + "*")
    role.add_to_principal_policy(iam.PolicyStatement(actions=list(actions), resources=[resource]))
    acknowledge(
        role,
        f"AwsSolutions-IAM5[Resource::{nag_text(role, resource)}]",
        f"Object keys under {prefix} are per tenant, user and job, created at run time; the prefix "
        f"is the narrowest ARN that covers them, and only {' and '.join(actions)} "
        f"{'is' if len(actions) == 1 else 'are'} allowed there.",
    )


def list_prefixes(role: iam.IRole, bucket: s3.IBucket, prefixes: Sequence[str]) -> None:
    """s3:ListBucket, for keys under `prefixes` only."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [prefix + "*" for prefix in prefixes]}},
        )
    )


def grant_get_memory(role: iam.IRole, storage: Storage) -> None:
    storage.table_items.grant_read_data(role)
    # The tenant's users: a Query of the one index, nothing else of it.
    index = f"{storage.table.table_arn}/index/{schema.USERS_INDEX_NAME}"
    role.add_to_principal_policy(iam.PolicyStatement(actions=["dynamodb:Query"], resources=[index]))
    # The export gives back the turns as sent (raw/) besides the history.
    objects(role, storage.bucket, schema.HISTORY_PREFIX, ["s3:GetObject"])
    objects(role, storage.bucket, schema.RAW_PREFIX, ["s3:GetObject"])
    list_prefixes(role, storage.bucket, [schema.HISTORY_PREFIX, schema.RAW_PREFIX])


def grant_ingest(role: iam.IRole, storage: Storage, queueing: Queueing) -> None:
    storage.table_items.grant_read_write_data(role)
    objects(role, storage.bucket, schema.RAW_PREFIX, ["s3:PutObject", "s3:GetObject", "s3:DeleteObject"])
    # PUT archives the version it writes; DELETE of a user erases their history too, and the stored
    # copy of their episodes, which forgetting one episode deletes as well.
    objects(role, storage.bucket, schema.HISTORY_PREFIX, ["s3:PutObject", "s3:DeleteObject"])
    objects(role, storage.bucket, schema.RECALL_PREFIX, ["s3:DeleteObject"])
    list_prefixes(role, storage.bucket, [schema.RAW_PREFIX, schema.HISTORY_PREFIX, schema.RECALL_PREFIX])
    queueing.queue.grant_send_messages(role)


def grant_condenser_storage(role: iam.IRole, storage: Storage) -> None:
    storage.table_items.grant_read_write_data(role)
    # It reads accepted payloads and archives versions; it erases what landed after a DELETE of
    # the user swept the prefix: the payload of an item it skips, its own copy of a version.
    objects(role, storage.bucket, schema.RAW_PREFIX, ["s3:GetObject", "s3:DeleteObject"])
    objects(role, storage.bucket, schema.HISTORY_PREFIX, ["s3:PutObject", "s3:DeleteObject"])
    # The stored copy of each user's episodes (adapters/episode_snapshots.py): kept after each pass
    # over the user, tagged for its lifecycle expiry, erased when a delete or a forget raced it.
    copies = ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging", "s3:DeleteObject"]
    objects(role, storage.bucket, schema.RECALL_PREFIX, copies)
    # Without s3:ListBucket, S3 answers a GetObject on a missing key with 403 AccessDenied, not
    # 404 NoSuchKey: a raw/ payload erased by a DELETE of the user would then fail the item
    # until the DLQ instead of making it `skipped`, and a user without a stored copy would fail
    # its keeping. For that check S3 evaluates s3:prefix as the requested key, so ListBucket
    # scoped to the prefixes read is enough (history/ is never read here).
    list_prefixes(role, storage.bucket, [schema.RAW_PREFIX, schema.RECALL_PREFIX])


def grant_condenser_redrive(role: iam.IRole, queueing: Queueing) -> None:
    """The redrive of the DLQ (docs/operations.md "The dead-letter queue"): take its messages,
    send them back to the ingest queue, delete them once sent, make the unsent visible again, and
    count what is left. SendMessage also authorises SendMessageBatch; DeleteMessage and
    ChangeMessageVisibility, their batch forms. Nothing else on either queue: the event source
    mapping consumes the ingest queue with the actions it grants itself."""
    role.add_to_principal_policy(
        iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[queueing.queue.queue_arn])
    )
    on_dlq = [
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
        "sqs:GetQueueAttributes",
    ]
    role.add_to_principal_policy(iam.PolicyStatement(actions=on_dlq, resources=[queueing.dlq.queue_arn]))


def grant_recall(role: iam.IRole, storage: Storage) -> None:
    # One user's partition, read with Query (and GetItem): no Scan, no BatchGetItem, no write.
    storage.table_items.grant(role, "dynamodb:Query", "dynamodb:GetItem")
    # The stored copy of the user's episodes, read only; ListBucket on its prefix makes a missing
    # copy 404 NoSuchKey rather than 403 (see grant_condenser_storage).
    objects(role, storage.bucket, schema.RECALL_PREFIX, ["s3:GetObject"])
    list_prefixes(role, storage.bucket, [schema.RECALL_PREFIX])


def grant_stream_read(scope: Construct, role: iam.IRole, table: dynamodb.ITable) -> iam.Policy:
    """What the events function's event source mapping reads the table's change stream with, and nothing
    of the table itself: DescribeStream, GetRecords and GetShardIterator on the stream; ListStreams, which
    takes no resource, in a policy of its own (`scope`/StreamListPolicy) so that its acknowledgment covers
    that one statement alone. (The DynamoEventSource construct would grant the same, with ListStreams
    on `*` in the role's default policy, where the X-Ray acknowledgment would hide it.)"""
    stream = table.table_stream_arn
    if stream is None:
        raise ValueError("the table has no stream to read")
    reads = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"]
    role.add_to_principal_policy(iam.PolicyStatement(actions=reads, resources=[stream]))
    return _policy_of_one_unscoped_action(
        scope,
        "StreamListPolicy",
        role,
        "dynamodb:ListStreams",
        "which Lambda needs to read a DynamoDB stream for an event source mapping",
    )


def grant_put_events(role: iam.IRole, bus: events.IEventBus) -> None:
    """events:PutEvents on the service's bus only."""
    bus.grant_put_events_to(role)


def grant_condenser_models(
    role: iam.IRole, config: DeploymentConfig, secret: secretsmanager.ISecret | None
) -> None:
    """The LLM and the embedding model the condenser calls: by IAM (bedrock) or through the key (openai)."""
    if config.llm_provider == "bedrock":
        grant_bedrock(role, config.resolved_llm_model)
    if config.resolved_embedding_provider == "bedrock":
        grant_bedrock(role, config.resolved_embedding_model)
    if secret is not None:  # openai, for the LLM or the embeddings (one key for both)
        grant_secret_value(role, secret)


def grant_embeddings(
    role: iam.IRole, config: DeploymentConfig, secret: secretsmanager.ISecret | None
) -> None:
    """The embedding model only: offline and none call nothing."""
    provider = config.resolved_embedding_provider
    if provider == "bedrock":
        grant_bedrock(role, config.resolved_embedding_model)
    elif provider == "openai":
        assert secret is not None, "an openai deployment always names its secret"
        grant_secret_value(role, secret)


def grant_pii_detection(scope: Construct, role: iam.IRole, config: DeploymentConfig) -> iam.Policy | None:
    """comprehend:DetectPiiEntities for a function that masks with `pii_detector: comprehend`, in a
    policy of its own (`scope`/PiiDetectionPolicy) so that its acknowledgment covers this statement
    alone; None, and nothing granted, otherwise (`patterns` runs in the function)."""
    if config.pii != "mask" or config.pii_detector != "comprehend":
        return None
    return _policy_of_one_unscoped_action(
        scope,
        "PiiDetectionPolicy",
        role,
        "comprehend:DetectPiiEntities",
        "for PII masking with pii_detector comprehend",
    )


def _policy_of_one_unscoped_action(
    scope: Construct, construct_id: str, role: iam.IRole, action: str, what_for: str
) -> iam.Policy:
    """`action` on `*` in a policy of its own, so that its cdk-nag acknowledgment covers that one
    statement alone: for an action with no resource-level permissions."""
    statement = iam.PolicyStatement(actions=[action], resources=["*"])
    policy = iam.Policy(scope, construct_id, roles=[role], statements=[statement])
    acknowledge(
        policy,
        "AwsSolutions-IAM5[Resource::*]",
        f"{action}, {what_for}, supports no resource-level permissions (Service Authorization "
        "Reference: no resource type), so Resource '*' is the only valid value; this policy allows "
        "that one action and nothing else.",
    )
    return policy


def grant_secret_value(role: iam.IRole, secret: secretsmanager.ISecret) -> None:
    """secretsmanager:GetSecretValue on the one secret (what the functions call; no DescribeSecret)."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["secretsmanager:GetSecretValue"], resources=[secret.secret_arn + _ARN_NAME_SUFFIX]
        )
    )


def grant_bedrock(role: iam.IRole, model: str) -> None:
    """bedrock:InvokeModel (which also authorises the Converse API) on the configured model only."""
    stack = cdk.Stack.of(role)
    bedrock = f"arn:{stack.partition}:bedrock"
    resources = (
        [model] if model.startswith("arn:") else [f"{bedrock}:{stack.region}::foundation-model/{model}"]
    )
    if model.startswith(_INFERENCE_PROFILE_PREFIXES):
        # A cross-region inference profile routes to the model in any region of its geography.
        regional = f"{bedrock}:*::foundation-model/{model.split('.', 1)[1]}"
        resources = [f"{bedrock}:{stack.region}:{stack.account}:inference-profile/{model}", regional]
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::{nag_text(role, regional)}]",
            "A cross-region inference profile invokes the same foundation model in whichever region "
            "of its geography has capacity; the model id stays fixed, only the region is open.",
        )
    role.add_to_principal_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=resources))
