"""Change events (docs/architecture.md "Events"): the bus, its schema registry, the events DLQ and the webhooks.

The events function and its stream (the event source mapping) are the functions' (`infra.functions`);
this module holds where the events go: the bus `hippocampus-<stage>` the function publishes to, one
registered schema per detail type, the dead-letter queue of the stream batches the function gave up
on, and, for each cdk.json `webhooks` entry, an EventBridge API destination and the rule that feeds it.
"""

from __future__ import annotations

import json
from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_eventschemas as eventschemas
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hippocampus.contracts import names
from hippocampus.contracts.events import DETAIL_MODELS, EVENT_SOURCE
from infra.config import DeploymentConfig, Webhook
from infra.event_schemas import schema_document, schema_name
from infra.nag import acknowledge
from infra.resources import event_bus_name

EVENTS_DLQ_NAME: Final = names.EVENTS_DLQ_NAME
WEBHOOKS_DLQ_NAME: Final = "webhooks-dlq"
# A webhook's delivery is retried for up to a day (EventBridge's own ceiling), then dead-lettered.
WEBHOOK_RETRY_ATTEMPTS: Final = 185
WEBHOOK_MAX_EVENT_AGE: Final = cdk.Duration.hours(24)


class ChangeEvents(Construct):
    """The bus, the schema registry, the events DLQ, and the webhooks of `config.webhooks` (none by default)."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(
            self,
            "Bus",
            event_bus_name=event_bus_name(config),
            description=f"Hippocampus {config.stage}: change events (source {EVENT_SOURCE})",
        )
        # Standard, not FIFO: Lambda sends a stream's failed batches to a standard queue or a topic only.
        self.dlq = _dead_letter_queue(
            self,
            "DeadLetterQueue",
            names.resource_name(config.stage, EVENTS_DLQ_NAME),
            "It is the on-failure destination of the events function's stream (the event source mapping "
            "sends it the batches it gave up on), not a queue anything consumes: no queue of its own.",
        )
        self.registry = _schema_registry(self, config)
        self.webhooks_dlq: sqs.Queue | None = None
        self.webhooks: dict[str, events.Rule] = {}
        if config.webhooks:
            self.webhooks_dlq = _dead_letter_queue(
                self,
                "WebhooksDeadLetterQueue",
                names.resource_name(config.stage, WEBHOOKS_DLQ_NAME),
                "It is the dead-letter queue of the webhooks' EventBridge rule targets (the events a "
                "webhook's endpoint never accepted), not a queue anything consumes: no queue of its own.",
            )
            for webhook in config.webhooks:
                self.webhooks[webhook.name] = self._webhook(config, webhook, self.webhooks_dlq)

    def _webhook(self, config: DeploymentConfig, webhook: Webhook, dlq: sqs.IQueue) -> events.Rule:
        """An API destination (its connection sends the API key read from the secret) and the rule on the
        bus that sends it the webhook's detail types, retried for a day, then dead-lettered."""
        scope = Construct(self, f"Webhook-{webhook.name}")
        name = f"{config.name_prefix}-webhook-{webhook.name}"
        connection = events.Connection(
            scope,
            "Connection",
            connection_name=name,
            description=f"Hippocampus webhook {webhook.name}: API key from the secret {webhook.secret_name}",
            authorization=events.Authorization.api_key(
                webhook.header, cdk.SecretValue.secrets_manager(webhook.secret_name)
            ),
        )
        destination = events.ApiDestination(
            scope,
            "Destination",
            api_destination_name=name,
            description=f"Hippocampus webhook {webhook.name}",
            connection=connection,
            endpoint=webhook.url,
            http_method=events.HttpMethod.POST,
        )
        return events.Rule(
            scope,
            "Rule",
            rule_name=name,
            description=f"Hippocampus webhook {webhook.name}: {', '.join(webhook.detail_types)}",
            event_bus=self.bus,
            event_pattern=events.EventPattern(source=[EVENT_SOURCE], detail_type=list(webhook.detail_types)),
            targets=[
                targets.ApiDestination(
                    destination,
                    retry_attempts=WEBHOOK_RETRY_ATTEMPTS,
                    max_event_age=WEBHOOK_MAX_EVENT_AGE,
                    dead_letter_queue=dlq,
                )
            ],
        )


def _dead_letter_queue(scope: Construct, construct_id: str, queue_name: str, why_no_dlq: str) -> sqs.Queue:
    """A TLS-only standard queue with SQS-managed encryption, keeping a message 14 days (as the ingest DLQ)."""
    queue = sqs.Queue(
        scope,
        construct_id,
        queue_name=queue_name,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=cdk.Duration.days(names.DLQ_RETENTION_DAYS),
    )
    acknowledge(queue, "AwsSolutions-SQS3", why_no_dlq)
    return queue


def _schema_registry(scope: Construct, config: DeploymentConfig) -> eventschemas.CfnRegistry:
    """The registry `hippocampus-<stage>`, one OpenAPI 3.0 schema per detail type (L1: no L2 exists)."""
    registry = eventschemas.CfnRegistry(
        scope,
        "SchemaRegistry",
        registry_name=event_bus_name(config),
        description=f"Hippocampus {config.stage}: the change events on the bus {event_bus_name(config)}",
    )
    for detail_type, model in DETAIL_MODELS.items():
        eventschemas.CfnSchema(
            scope,
            "Schema" + detail_type.replace(" ", ""),
            registry_name=registry.attr_registry_name,
            schema_name=schema_name(detail_type),
            type="OpenApi3",
            content=json.dumps(schema_document(detail_type), separators=(",", ":")),
            description=(model.__doc__ or detail_type).strip(),
        )
    return registry
