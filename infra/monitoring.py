"""Monitoring: a CloudWatch dashboard, alarms, and an SNS topic with an optional e-mail subscription."""

from __future__ import annotations

from itertools import batched
from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hippocampus.contracts import names as schema
from hippocampus.contracts.names import (
    TENANT_COMPLETION_TOKENS,
    TENANT_DIMENSION,
    TENANT_JOBS_DEFERRED,
    TENANT_LLM_CALLS,
    TENANT_PROMPT_TOKENS,
)
from infra.config import DeploymentConfig

PERIOD: Final = cdk.Duration.minutes(5)
# Backlog alarm: the oldest queued item waits longer than this (condenser stuck or throttled).
QUEUE_AGE_ALARM_S: Final = 900
# The events function's stream: the oldest record of a batch waited this long (IteratorAge, in ms) when
# it was read; the stream keeps a record 24 hours.
ITERATOR_AGE_ALARM_MS: Final = 5 * 60 * 1000
# The token budget alarm's period: CloudWatch's (sliding) window is then the 24 hours before each
# evaluation, so it fires within minutes of a UTC day's use reaching the budget (docs/operations.md).
BUDGET_PERIOD: Final = cdk.Duration.days(1)
# The most alarms one alarm status widget shows (CloudWatch's limit).
ALARMS_PER_STATUS_WIDGET: Final = 100


def service_metric(name: str, statistic: str, label: str | None = None) -> cloudwatch.Metric:
    """A metric the functions emit through Powertools Metrics (EMF): namespace + `service` dimension."""
    return cloudwatch.Metric(
        namespace=schema.METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": schema.SERVICE_NAME},
        statistic=statistic,
        period=PERIOD,
        label=label or name,
    )


def tenant_metric(name: str, tenant_id: str, period: cdk.Duration) -> cloudwatch.Metric:
    """One tenant's series of a per-tenant metric (its Sum), as the condenser emits it."""
    return cloudwatch.Metric(
        namespace=schema.METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": schema.SERVICE_NAME, TENANT_DIMENSION: tenant_id},
        statistic="Sum",
        period=period,
    )


def tenant_construct_id(tenant_id: str) -> str:
    """A tenant id as part of a construct id: letters and digits kept, any other character (`._@:-`)
    written `_` and its hex code, so no two tenants share one and a tenant's ids never change."""
    return "".join(c if c.isascii() and c.isalnum() else f"_{ord(c):02x}" for c in tenant_id)


def tenant_usage(name: str) -> cloudwatch.MathExpression:
    """Every tenant's series of one per-tenant metric (observability: record_tenant_usage and
    record_tenant_deferred)."""
    dimensions = f"{schema.METRICS_NAMESPACE},service,{TENANT_DIMENSION}"
    search = f"SEARCH('{{{dimensions}}} MetricName=\"{name}\"', 'Sum', 300)"
    return cloudwatch.MathExpression(expression=search, label=name, period=PERIOD)


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        stage: apigw.Stage,
        get_memory: lambda_.IFunction,
        ingest: lambda_.IFunction,
        condenser: lambda_.IFunction,
        recall: lambda_.IFunction,
        queue: sqs.IQueue,
        dlq: sqs.IQueue,
        events: lambda_.IFunction,
        events_dlq: sqs.IQueue,
        webhooks_dlq: sqs.IQueue | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        prefix = config.name_prefix

        self.topic = sns.Topic(
            self, "AlarmTopic", display_name=f"Hippocampus {config.stage} alarms", enforce_ssl=True
        )
        if config.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))

        # Alarm metrics carry no label (a label turns the alarm into a metric-math alarm);
        # the dashboard labels them with `with_`.
        api_5xx = stage.metric_server_error(period=PERIOD, statistic="Sum")
        api_4xx = stage.metric_client_error(period=PERIOD, statistic="Sum", label="API 4xx")
        api_count = stage.metric_count(period=PERIOD, statistic="Sum", label="Requests")
        llm_latency_p90 = cloudwatch.Metric(
            namespace=schema.METRICS_NAMESPACE,
            metric_name="LlmLatencyMs",
            dimensions_map={"service": schema.SERVICE_NAME},
            statistic="p90",
            period=PERIOD,
        )
        dlq_depth = dlq.metric_approximate_number_of_messages_visible(
            period=cdk.Duration.minutes(1), statistic="Maximum"
        )
        queue_age = queue.metric_approximate_age_of_oldest_message(period=PERIOD, statistic="Maximum")
        events_dlq_depth = events_dlq.metric_approximate_number_of_messages_visible(
            period=cdk.Duration.minutes(1), statistic="Maximum"
        )
        iterator_age = events.metric("IteratorAge", period=PERIOD, statistic="Maximum")

        self.alarms = [
            self._alarm(
                "DlqNotEmpty",
                f"{prefix}-dlq-not-empty",
                "An item failed condensation after every retry and is in the dead-letter queue.",
                dlq_depth,
                threshold=1,
            ),
            self._alarm(
                "CondenserErrors",
                f"{prefix}-condenser-errors",
                "The condenser function failed (errors, not partial batch failures).",
                condenser.metric_errors(period=PERIOD, statistic="Sum"),
                threshold=1,
            ),
            # Crashes, timeouts and failed cold starts (a bad embedding setting fails every one), also
            # of direct invocations, which the API's 5xx alarm never sees.
            self._alarm(
                "RecallErrors",
                f"{prefix}-recall-errors",
                "The recall function failed (an unhandled error, a timeout or a failed cold start).",
                recall.metric_errors(period=PERIOD, statistic="Sum"),
                threshold=1,
            ),
            self._alarm(
                "Api5xx",
                f"{prefix}-api-5xx",
                "The API answered 5xx: a dependency or a function failed.",
                api_5xx,
                threshold=1,
            ),
            self._alarm(
                "LlmLatency",
                f"{prefix}-llm-latency",
                f"LLM latency p90 above {config.llm_latency_alarm_ms} ms for 15 minutes.",
                llm_latency_p90,
                threshold=config.llm_latency_alarm_ms,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=3,
            ),
            self._alarm(
                "QueueBacklog",
                f"{prefix}-queue-backlog",
                f"An ingested item has waited more than {QUEUE_AGE_ALARM_S} s to be condensed.",
                queue_age,
                threshold=QUEUE_AGE_ALARM_S,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            ),
            self._alarm(
                "EventsDlqNotEmpty",
                f"{prefix}-events-dlq-not-empty",
                "The events function gave up on a batch of the table's stream: its changes were not "
                "published, and the events DLQ names the batch (readable in the stream for 24 hours).",
                events_dlq_depth,
                threshold=1,
            ),
            self._alarm(
                "EventsIteratorAge",
                f"{prefix}-events-iterator-age",
                f"Change events are late: the events function read a stream record at least "
                f"{ITERATOR_AGE_ALARM_MS // 60_000} minutes old (the stream keeps a record 24 hours).",
                iterator_age,
                threshold=ITERATOR_AGE_ALARM_MS,
            ),
        ]
        if webhooks_dlq is not None:
            self.alarms.append(
                self._alarm(
                    "WebhooksDlqNotEmpty",
                    f"{prefix}-webhooks-dlq-not-empty",
                    "A webhook's endpoint did not accept an event for 24 hours (or refused it): the event "
                    "is in the webhooks DLQ.",
                    webhooks_dlq.metric_approximate_number_of_messages_visible(
                        period=cdk.Duration.minutes(1), statistic="Maximum"
                    ),
                    threshold=1,
                )
            )

        # Two per tenant named in tenant_token_budgets; "*" stands for tenants no list holds.
        self.budget_alarms = [
            alarm
            for tenant_id, budget in config.budgeted_tenants.items()
            for alarm in self._budget_alarms(prefix, tenant_id, budget)
        ]

        def fn_metrics(fn: lambda_.IFunction, label: str) -> list[cloudwatch.IMetric]:
            return [
                fn.metric_duration(period=PERIOD, statistic="p50", label=f"{label} p50"),
                fn.metric_duration(period=PERIOD, statistic="p99", label=f"{label} p99"),
            ]

        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"{prefix}-{cdk.Aws.REGION}",
            default_interval=cdk.Duration.hours(3),
        )
        self.dashboard.add_widgets(
            cloudwatch.TextWidget(
                markdown=f"# Hippocampus `{config.stage}`\nAPI, ingestion, condensation, recall, LLM and "
                "change events' health.",
                width=24,
                height=2,
            )
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="API latency (ms)",
                left=[
                    stage.metric_latency(period=PERIOD, statistic="p50", label="p50"),
                    stage.metric_latency(period=PERIOD, statistic="p99", label="p99"),
                ],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="API requests and errors",
                left=[api_count],
                right=[api_4xx, api_5xx.with_(label="API 5xx")],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Ingest rate",
                left=[service_metric("ItemsIngested", "Sum", "Items ingested")],
                right=[ingest.metric_invocations(period=PERIOD, statistic="Sum", label="Ingest invocations")],
                width=8,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Function duration (ms)",
                left=[
                    *fn_metrics(get_memory, "get_memory"),
                    *fn_metrics(ingest, "ingest"),
                    *fn_metrics(recall, "recall"),
                ],
                right=[*fn_metrics(condenser, "condenser"), *fn_metrics(events, "events")],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Condenser errors and outcomes",
                left=[
                    condenser.metric_errors(period=PERIOD, statistic="Sum", label="Errors"),
                    condenser.metric_throttles(period=PERIOD, statistic="Sum", label="Throttles"),
                ],
                right=[
                    service_metric("CondensationsOk", "Sum", "Condensations ok"),
                    service_metric("CondensationsFailed", "Sum", "Condensations failed"),
                ],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Queues",
                left=[dlq_depth.with_(label="DLQ depth")],
                right=[queue_age.with_(label="Oldest queued item (s)")],
                width=8,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="LLM latency (ms)",
                left=[
                    service_metric("LlmLatencyMs", "p50", "p50"),
                    llm_latency_p90.with_(label="p90"),
                    service_metric("LlmLatencyMs", "p99", "p99"),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="LLM tokens",
                left=[
                    service_metric("PromptTokens", "Sum", "Prompt tokens"),
                    service_metric("CompletionTokens", "Sum", "Completion tokens"),
                ],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Recall",
                left=[service_metric("Queries", "Sum", "Queries")],
                right=[
                    recall.metric_errors(period=PERIOD, statistic="Sum", label="Errors"),
                    recall.metric_throttles(period=PERIOD, statistic="Sum", label="Throttles"),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Indexing (embeddings of facts and episodes)",
                left=[service_metric("DocumentsIndexed", "Sum", "Documents indexed")],
                right=[service_metric("IndexingFailed", "Sum", "Indexing failed")],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="LLM tokens by tenant (prompt + completion)",
                left=[tenant_usage(TENANT_PROMPT_TOKENS), tenant_usage(TENANT_COMPLETION_TOKENS)],
                right=[tenant_usage(TENANT_LLM_CALLS)],
                width=24,
            )
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Change events",
                left=[service_metric("EventsPublished", "Sum", "Events published")],
                right=[
                    events.metric_errors(period=PERIOD, statistic="Sum", label="Errors"),
                    events.metric_throttles(period=PERIOD, statistic="Sum", label="Throttles"),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Change events' stream",
                left=[iterator_age.with_(label="Oldest record read (ms)")],
                right=[events_dlq_depth.with_(label="Events DLQ depth")],
                width=12,
            ),
        )
        if config.tenant_token_budgets:
            self.dashboard.add_widgets(
                cloudwatch.GraphWidget(
                    title="Turns parked by token budgets, by tenant",
                    left=[tenant_usage(TENANT_JOBS_DEFERRED)],
                    width=24,
                )
            )
        self.dashboard.add_widgets(cloudwatch.AlarmStatusWidget(alarms=self.alarms, title="Alarms", width=24))
        for alarms in batched(self.budget_alarms, ALARMS_PER_STATUS_WIDGET):
            self.dashboard.add_widgets(
                cloudwatch.AlarmStatusWidget(alarms=list(alarms), title="Token budgets", width=24)
            )

    def _budget_alarms(self, prefix: str, tenant_id: str, budget: int) -> list[cloudwatch.Alarm]:
        """The tenant's tokens reached its budget; its turns are being parked."""
        tokens = cloudwatch.MathExpression(
            expression="prompt + completion",
            using_metrics={
                "prompt": tenant_metric(TENANT_PROMPT_TOKENS, tenant_id, BUDGET_PERIOD),
                "completion": tenant_metric(TENANT_COMPLETION_TOKENS, tenant_id, BUDGET_PERIOD),
            },
            period=BUDGET_PERIOD,
        )
        construct_id = tenant_construct_id(tenant_id)
        return [
            self._alarm(
                f"TokenBudget-{construct_id}",
                f"{prefix}-tenant-{tenant_id}-token-budget",
                f"Tenant {tenant_id} used at least its daily token budget ({budget}) in the last 24 hours; "
                "once its UTC day's tokens reach it, its turns are parked until 00:00 UTC (its usage route "
                "tells the day's).",
                tokens,
                threshold=budget,
            ),
            self._alarm(
                f"JobsDeferred-{construct_id}",
                f"{prefix}-tenant-{tenant_id}-jobs-deferred",
                f"Turns of tenant {tenant_id} were parked by its token budget in the last 5 minutes "
                "(kept as episodes, jobs deferred, condensed after 00:00 UTC).",
                tenant_metric(TENANT_JOBS_DEFERRED, tenant_id, PERIOD),
                threshold=1,
            ),
        ]

    def _alarm(
        self,
        construct_id: str,
        name: str,
        description: str,
        metric: cloudwatch.IMetric,
        *,
        threshold: float,
        comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluation_periods: int = 1,
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            alarm_name=name,
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=evaluation_periods,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(cw_actions.SnsAction(self.topic))
        alarm.add_ok_action(cw_actions.SnsAction(self.topic))
        return alarm
