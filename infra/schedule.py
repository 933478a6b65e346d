"""The condenser's scheduled pass over its dead-letter queue (docs/architecture.md "The condenser")."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hippocampus.contracts import names as schema


def schedule_dead_letter_pass(
    scope: Construct, condenser: lambda_.IFunction, role: iam.IRole, dlq: sqs.IQueue
) -> None:
    """An EventBridge rule runs the condenser every few minutes; the pass only receives from the
    DLQ (and makes what it read visible again: grants.grant_condenser_redrive): it never deletes a
    dead letter, they stay for a redrive."""
    role.add_to_principal_policy(
        iam.PolicyStatement(actions=["sqs:ReceiveMessage"], resources=[dlq.queue_arn])
    )
    events.Rule(
        scope,
        "DeadLetterPass",
        description="Closes the jobs of messages the condenser dead-lettered without closing them.",
        schedule=events.Schedule.rate(cdk.Duration.minutes(schema.DEAD_LETTER_PASS_MINUTES)),
        targets=[events_targets.LambdaFunction(condenser, retry_attempts=2)],
    )
