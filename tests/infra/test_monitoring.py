"""Alarms, dashboard and stack outputs of the default stack (what an operator watches and reads)."""

from __future__ import annotations

from aws_cdk.assertions import Match

from hippocampus.contracts import names as schema
from infra.monitoring import QUEUE_AGE_ALARM_S
from tests.infra.helpers import Synth, render

FIXED_OUTPUTS = (
    "ApiUrl",
    "GetMemoryFunctionName",
    "GetMemoryFunctionArn",
    "IngestFunctionName",
    "IngestFunctionArn",
    "CondenserFunctionName",
    "CondenserFunctionArn",
    "RecallFunctionName",
    "RecallFunctionArn",
    "TableName",
    "BucketName",
    "QueueName",
    "QueueUrl",
    "DlqName",
    "AlarmTopicArn",
    "EventBusName",
    "EventBusArn",
)


def alarm(synth: Synth, suffix: str, **properties: object) -> None:
    """An alarm named `<prefix>-<suffix>` with these properties, notifying the topic on alarm and on OK."""
    (topic,) = synth.template.find_resources("AWS::SNS::Topic")
    synth.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": f"{synth.stack.config.name_prefix}-{suffix}",
            "AlarmActions": [{"Ref": topic}],
            "OKActions": [{"Ref": topic}],
            "TreatMissingData": "notBreaching",
            **properties,
        },
    )


def test_dlq_alarm_fires_on_the_first_dead_letter(default_synth: Synth) -> None:
    dlq = default_synth.logical_id("AWS::SQS::Queue", {"QueueName": "hippocampus-dev-ingest-dlq.fifo"})
    alarm(
        default_synth,
        "dlq-not-empty",
        Namespace="AWS/SQS",
        MetricName="ApproximateNumberOfMessagesVisible",
        Dimensions=[{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq, "QueueName"]}}],
        Threshold=1,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
    )


def test_condenser_errors_and_api_5xx_alarm_on_the_first_one(default_synth: Synth) -> None:
    condenser = {"Name": "FunctionName", "Value": {"Ref": default_synth.function_id("condenser")}}
    alarm(
        default_synth, "condenser-errors", Namespace="AWS/Lambda", MetricName="Errors", Dimensions=[condenser]
    )
    alarm(default_synth, "api-5xx", Namespace="AWS/ApiGateway", MetricName="5XXError", Threshold=1)


def test_recall_errors_alarm_on_the_first_one(default_synth: Synth) -> None:
    """Crashes, timeouts and failed cold starts of recall, direct invocations included."""
    recall = {"Name": "FunctionName", "Value": {"Ref": default_synth.function_id("recall")}}
    alarm(
        default_synth,
        "recall-errors",
        Namespace="AWS/Lambda",
        MetricName="Errors",
        Dimensions=[recall],
        Threshold=1,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
    )


def test_llm_latency_alarm_uses_the_configured_threshold_for_15_minutes(default_synth: Synth) -> None:
    alarm(
        default_synth,
        "llm-latency",
        Namespace=schema.METRICS_NAMESPACE,
        MetricName="LlmLatencyMs",
        Dimensions=[{"Name": "service", "Value": schema.SERVICE_NAME}],
        ExtendedStatistic="p90",
        Threshold=default_synth.stack.config.llm_latency_alarm_ms,
        EvaluationPeriods=3,
        Period=300,
    )


def test_queue_backlog_alarm(default_synth: Synth) -> None:
    alarm(
        default_synth,
        "queue-backlog",
        MetricName="ApproximateAgeOfOldestMessage",
        Threshold=QUEUE_AGE_ALARM_S,
        ComparisonOperator="GreaterThanThreshold",
    )
    default_synth.template.resource_count_is("AWS::CloudWatch::Alarm", 8)  # with the events' two


def test_no_email_subscription_unless_configured(default_synth: Synth) -> None:
    default_synth.template.resource_count_is("AWS::SNS::Topic", 1)
    default_synth.template.resource_count_is("AWS::SNS::Subscription", 0)


def test_dashboard_shows_the_llm_usage_of_each_tenant(default_synth: Synth) -> None:
    (dashboard,) = default_synth.template.find_resources("AWS::CloudWatch::Dashboard").values()
    body = render(dashboard["Properties"]["DashboardBody"])
    for name in ("TenantPromptTokens", "TenantCompletionTokens", "TenantLlmCalls"):
        assert f"SEARCH('{{Hippocampus,service,tenant}} MetricName=\\\"{name}\\\"', 'Sum', 300)" in body


def test_dashboard_shows_api_ingest_condenser_dlq_and_llm(default_synth: Synth) -> None:
    (dashboard,) = default_synth.template.find_resources("AWS::CloudWatch::Dashboard").values()
    body = render(dashboard["Properties"]["DashboardBody"])
    for metric in (
        "Latency",
        "5XXError",
        "ItemsIngested",
        "Duration",
        "Errors",
        "ApproximateNumberOfMessagesVisible",
        "LlmLatencyMs",
        "PromptTokens",
        "CompletionTokens",
        "CondensationsOk",
        "CondensationsFailed",
        "Queries",
        "DocumentsIndexed",
        "IndexingFailed",
        "Throttles",
    ):
        assert f'"{metric}"' in body, metric
    assert f'"{schema.METRICS_NAMESPACE}"' in body and f'"service","{schema.SERVICE_NAME}"' in body
    # Every function's duration, recall's included.
    for name in ("get_memory", "ingest", "condenser", "recall", "events"):
        assert f'"label":"{name} p99"' in body, name


def test_outputs_have_fixed_keys_and_say_what_they_are(default_synth: Synth) -> None:
    template = default_synth.template
    assert set(template.find_outputs("*")) == set(FIXED_OUTPUTS)  # no LlmSecretName: offline
    for key in FIXED_OUTPUTS:
        template.has_output(key, {"Description": Match.string_like_regexp(r"\w{4,}")})
    template.has_output("GetMemoryFunctionName", {"Value": {"Ref": default_synth.function_id("get_memory")}})
    template.has_output(
        "CondenserFunctionArn", {"Value": {"Fn::GetAtt": [default_synth.function_id("condenser"), "Arn"]}}
    )
    template.has_output("RecallFunctionName", {"Value": {"Ref": default_synth.function_id("recall")}})
    template.has_output(
        "RecallFunctionArn", {"Value": {"Fn::GetAtt": [default_synth.function_id("recall"), "Arn"]}}
    )
    url = render(template.find_outputs("ApiUrl")["ApiUrl"]["Value"])
    assert url.startswith("https://") and url.endswith("/")
