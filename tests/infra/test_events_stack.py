"""Change events in the deployment (docs/architecture.md "Events"): the table's stream, the events function's
event source mapping and role, the bus, the schema registry, the events DLQ, the alarms, and the webhooks
of cdk.json `webhooks`, with the errors of that key.

Two stacks, each synthesized once per process (`synthesize_once`): the default (`default_synth`, no
webhook) and stage `qa` with two webhooks, one of them limited to `User Forgotten`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, get_args

import pytest
from aws_cdk.assertions import Match
from cfnlint.schema.manager import PROVIDER_SCHEMA_MANAGER
from openapi_spec_validator import validate

from hippocampus.adapters import dynamodb_table as layout
from hippocampus.adapters.dynamodb_receipts import RECEIPT_SK
from hippocampus.adapters.dynamodb_stream import stored_change
from hippocampus.contracts import names
from hippocampus.contracts.events import DETAIL_MODELS, EVENT_SOURCE, DetailType
from infra import functions
from infra.config import EVENT_DETAIL_TYPES, MAX_WEBHOOKS, ConfigError, load_config, read_cdk_json_context
from infra.event_schemas import ENVELOPE, schema_document, schema_name
from infra.monitoring import ITERATOR_AGE_ALARM_MS
from infra.resources import MEMORY_TABLE
from infra.specs import ResourceNames, function_environments
from tests.infra.helpers import (
    FUNCTIONS,
    Synth,
    acknowledgments,
    assert_acknowledgments_used_and_explained,
    assert_cfn_lint_clean,
    assert_nag_clean,
    cli_context,
    context_with,
    granted,
    render,
    synthesize_once,
)

WEBHOOKS: list[dict[str, Any]] = [
    {
        "name": "crm",
        "url": "https://crm.example.com/hooks/memory",
        "secret_name": "hippocampus/qa/crm-webhook",
    },
    {
        "name": "privacy",
        "url": "https://privacy.example.com/erasures",
        "secret_name": "privacy-team/api-key",
        "header": "X-Privacy-Key",
        "detail_types": ["User Forgotten"],
    },
]
# What a deployed stack's memory table is called in its template: a new logical id would create a
# second, empty table (and, retained, orphan the users' one).
TABLE_LOGICAL_ID = "StorageMemoryTable4A77B353"
STREAM_READS = {"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}
DEFAULT_ALARMS = 8


@pytest.fixture(scope="module")
def webhooks(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    result = synthesize_once(tmp_path_factory, context_with(stage="qa", webhooks=WEBHOOKS))
    assert result.error is None, result.error
    return result


def ref(logical_id: str) -> str:
    return "${" + logical_id + "}"


def arn(logical_id: str) -> str:
    return "${" + logical_id + ".Arn}"


def only(synth: Synth, resource_type: str, properties: dict[str, Any] | None = None) -> str:
    """The logical id of the one resource of this type (with these properties)."""
    return synth.logical_id(resource_type, properties or {})


def events_dlq(synth: Synth) -> str:
    return only(synth, "AWS::SQS::Queue", {"QueueName": f"{synth.stack.config.name_prefix}-events-dlq"})


def stream_mapping(synth: Synth) -> dict[str, Any]:
    logical_id = only(
        synth, "AWS::Lambda::EventSourceMapping", {"FunctionName": {"Ref": synth.function_id("events")}}
    )
    return synth.props(logical_id)


def passes(patterns: list[dict[str, Any]], sort_key: str) -> bool:
    """Whether Lambda's event filtering lets a stream record with this sort key through: the filters are
    ORed, each matches `dynamodb.Keys.sk.S` against exact values or `{"prefix": ...}`."""
    for pattern in patterns:
        for rule in pattern["dynamodb"]["Keys"][names.TABLE_SORT_KEY]["S"]:
            if rule == sort_key or (isinstance(rule, dict) and sort_key.startswith(rule["prefix"])):
                return True
    return False


def is_event(pk: str, sort_key: str) -> bool:
    """Whether the events function reads a change of this item as an event."""
    image = {
        names.TABLE_PARTITION_KEY: {"S": pk},
        names.TABLE_SORT_KEY: {"S": sort_key},
        "user_id": {"S": "alice"},
        "receipt": {"S": json.dumps({"user_id": "alice"})},
    }
    keys = {names.TABLE_PARTITION_KEY: {"S": pk}, names.TABLE_SORT_KEY: {"S": sort_key}}
    record = {"eventID": "1", "dynamodb": {"Keys": keys, "NewImage": image}}
    return stored_change(record) is not None


def error_of(webhooks: object) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config({"hippocampus": {"webhooks": webhooks}})
    return str(caught.value)


# ----------------------------------------------------------------------------- without CDK


def test_the_filter_lets_through_exactly_the_sort_keys_the_function_reads_as_events() -> None:
    """The mapping's filter says in constants what adapters/dynamodb_stream.py reads: no event is
    filtered out, and the table's other items (facts, episodes, job references, ...) never invoke it."""
    assert set(functions.EVENT_SORT_KEYS) == {layout.MEMORY_SK, layout.JOB_SK, RECEIPT_SK}
    assert functions.EVENT_SORT_KEY_PREFIXES == (layout.RECORD_PREFIX,)
    patterns: list[dict[str, Any]] = [
        {"dynamodb": {"Keys": {"sk": {"S": list(functions.EVENT_SORT_KEYS)}}}},
        {"dynamodb": {"Keys": {"sk": {"S": [{"prefix": p} for p in functions.EVENT_SORT_KEY_PREFIXES]}}}},
    ]
    partitions = ("T#acme#U#alice", "T#acme#J#job-1", "T#acme#DEL#alice", "T#acme#USAGE", "DEFERRALS")
    sort_keys = (
        layout.MEMORY_SK,
        layout.JOB_SK,
        RECEIPT_SK,
        layout.RECORD_PREFIX + "rec_1",
        layout.FACT_PREFIX + "f1",
        layout.EPISODE_PREFIX + "e1",
        layout.PII_PREFIX + "KEY",
        layout.JOB_REF_PREFIX + "job-1",
        f"{names.IDEMPOTENCY_KEY_PREFIX}#0f3c",
        "DAY#2026-12-05",
        "T#acme",
        "RECORDS",
        "memory",
    )
    for sort_key in sort_keys:
        assert passes(patterns, sort_key) == any(is_event(pk, sort_key) for pk in partitions), sort_key


def test_the_memory_table_spec_streams_both_images() -> None:
    assert MEMORY_TABLE.stream_view_type == "NEW_AND_OLD_IMAGES"


def test_the_events_function_is_told_the_bus_and_whether_events_carry_content() -> None:
    resources = ResourceNames("t", "b", "q", "d", event_bus="hippocampus-dev")
    events = function_environments(load_config({}), resources)["events"]
    assert (events["MEMORY_EVENT_BUS_NAME"], events["MEMORY_EVENTS_INCLUDE_CONTENT"]) == (
        "hippocampus-dev",
        "false",
    )
    assert not {"MEMORY_TABLE_NAME", "MEMORY_BUCKET_NAME", "MEMORY_QUEUE_URL"} & events.keys()
    config = load_config({"hippocampus": {"events_include_content": True}})
    assert function_environments(config, resources)["events"]["MEMORY_EVENTS_INCLUDE_CONTENT"] == "true"
    for name, environment in function_environments(config, resources).items():
        assert ("MEMORY_EVENT_BUS_NAME" in environment) == (name == "events"), name


@pytest.mark.parametrize("detail_type", list(DETAIL_MODELS))
def test_each_schema_is_an_openapi_3_document_of_the_envelope_and_its_detail(detail_type: str) -> None:
    document = schema_document(detail_type)
    validate(document)  # OpenAPI 3.0: `nullable`, not JSON Schema's "type": "null"
    assert document["openapi"] == "3.0.0" and '"type": "null"' not in json.dumps(document)
    schemas = document["components"]["schemas"]
    envelope = schemas[ENVELOPE]
    assert envelope["x-amazon-events-detail-type"] == detail_type
    assert envelope["x-amazon-events-source"] == EVENT_SOURCE
    assert set(envelope["required"]) == {
        "account",
        "detail",
        "detail-type",
        "id",
        "region",
        "resources",
        "source",
        "time",
        "version",
    }
    model = DETAIL_MODELS[detail_type]
    assert envelope["properties"]["detail"] == {"$ref": f"#/components/schemas/{model.__name__}"}
    detail = schemas[model.__name__]
    assert set(detail["properties"]) == set(model.model_fields)
    assert set(detail["required"]) == {
        name for name, field in model.model_fields.items() if field.is_required()
    }
    # Every $ref resolves within the document.
    for target in re.findall(r'"\$ref": "#/components/schemas/(\w+)"', json.dumps(document)):
        assert target in schemas, target
    assert schema_name(detail_type) == f"hippocampus@{detail_type.replace(' ', '')}"


def test_optional_fields_are_nullable_and_content_is_never_required() -> None:
    records = schema_document("Records Changed")["components"]["schemas"]["RecordsChangedDetail"]
    assert records["properties"]["category"] == {"type": "string", "title": "Category", "nullable": True}
    assert records["properties"]["change"]["enum"] == ["added", "invalidated", "deleted"]
    assert "text" not in records["required"]
    memory = schema_document("Memory Updated")["components"]["schemas"]["MemoryUpdatedDetail"]
    assert memory["properties"]["memory"]["nullable"] is True and "memory" not in memory["required"]
    forgotten = schema_document("User Forgotten")["components"]["schemas"]
    assert forgotten["UserForgottenDetail"]["properties"]["erased"] == {
        "$ref": "#/components/schemas/ErasedCounts"
    }
    assert {"ErasedCounts", "DynamoDbErased", "S3Erased", "QueueErased", "VectorsErased"} <= forgotten.keys()


def test_webhooks_default_to_none_and_cdk_json_lists_the_key() -> None:
    assert load_config({}).webhooks == ()
    assert read_cdk_json_context()["hippocampus"]["webhooks"] == []
    assert EVENT_DETAIL_TYPES == get_args(DetailType) == tuple(DETAIL_MODELS)


def test_a_webhook_takes_the_default_header_and_every_detail_type() -> None:
    config = load_config({"hippocampus": {"webhooks": WEBHOOKS}})
    crm, privacy = config.webhooks
    assert (crm.header, crm.detail_types) == ("X-Api-Key", EVENT_DETAIL_TYPES)
    assert (privacy.header, privacy.detail_types) == ("X-Privacy-Key", ("User Forgotten",))


def test_webhooks_given_on_the_command_line_are_read() -> None:
    config = load_config(cli_context(webhooks=json.dumps(WEBHOOKS)))
    assert [webhook.name for webhook in config.webhooks] == ["crm", "privacy"]


def hook(**changes: object) -> dict[str, object]:
    return {"name": "crm", "url": "https://crm.example.com/h", "secret_name": "crm/key"} | changes


@pytest.mark.parametrize(
    ("webhooks", "expected"),
    [
        ([hook(url="http://crm.example.com/h")], "hippocampus.webhooks.0.url: must be an https:// URL"),
        ([hook(), hook(name="b", url="ftp://x")], "hippocampus.webhooks.1.url: must be an https:// URL"),
        ([hook(), hook()], "hippocampus.webhooks.1.name: 'crm' is already the name of webhook 0"),
        ([hook(name="CRM")], "hippocampus.webhooks.0.name: String should match pattern"),
        ([hook(name="a" * 24)], "hippocampus.webhooks.0.name: String should match pattern"),
        ([hook(detail_types=["Memory Deleted"])], "hippocampus.webhooks.0.detail_types.0: Input should be"),
        ([hook(detail_types=[])], "hippocampus.webhooks.0.detail_types: must name at least one detail type"),
        (
            [hook(detail_types=["Job Finished", "Job Finished"])],
            "hippocampus.webhooks.0.detail_types: names a detail type twice",
        ),
        ([hook(header="X Api Key")], "hippocampus.webhooks.0.header: String should match pattern"),
        ([hook(secret_name="")], "hippocampus.webhooks.0.secret_name: String should match pattern"),
        ([{"name": "crm", "url": "https://x.io"}], "hippocampus.webhooks.0.secret_name: Field required"),
        ([hook(method="GET")], "hippocampus.webhooks.0.method: Extra inputs are not permitted"),
        ({"name": "crm"}, "hippocampus.webhooks: must be a list of webhooks"),
        ("https://crm.example.com", "hippocampus.webhooks: must be a list of webhooks"),
        ([hook(name=f"w{i}") for i in range(MAX_WEBHOOKS + 1)], f"at most {MAX_WEBHOOKS}"),
    ],
)
def test_a_bad_webhook_is_refused_naming_the_key_and_its_index(webhooks: object, expected: str) -> None:
    message = error_of(webhooks)
    assert message.startswith("invalid deployment configuration: hippocampus.webhooks"), message
    assert expected in message, message


# ----------------------------------------------------------------------------- the default stack


def test_the_table_streams_new_and_old_images_and_a_deployed_table_is_updated_in_place(
    default_synth: Synth,
) -> None:
    table = only(default_synth, "AWS::DynamoDB::Table")
    assert table == TABLE_LOGICAL_ID
    properties = default_synth.props(table)
    assert properties["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    # Neither the stream nor anything else the table sets replaces it: CloudFormation replaces a table
    # only for its create-only properties (its name, an import), and the table is unnamed.
    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", "AWS::DynamoDB::Table").schema
    create_only = {path.removeprefix("/properties/") for path in schema["createOnlyProperties"]}
    assert "StreamSpecification" not in create_only
    assert not create_only & properties.keys()


def test_the_events_function_reads_the_stream_filtered_retried_split_then_dead_lettered(
    default_synth: Synth,
) -> None:
    mapping = stream_mapping(default_synth)
    filters = [json.loads(f["Pattern"]) for f in mapping.pop("FilterCriteria")["Filters"]]
    assert {key: value for key, value in mapping.items() if key != "Tags"} == {
        "FunctionName": {"Ref": default_synth.function_id("events")},
        "EventSourceArn": {"Fn::GetAtt": [TABLE_LOGICAL_ID, "StreamArn"]},
        "StartingPosition": "TRIM_HORIZON",
        "BatchSize": 100,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "BisectBatchOnFunctionError": True,
        "MaximumRetryAttempts": 10,
        "MaximumRecordAgeInSeconds": 24 * 3600,
        "DestinationConfig": {
            "OnFailure": {"Destination": {"Fn::GetAtt": [events_dlq(default_synth), "Arn"]}}
        },
    }
    assert filters == [
        {"dynamodb": {"Keys": {"sk": {"S": ["MEMORY", "JOB", "RECEIPT"]}}}},
        {"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "RECORD#"}]}}}},
    ]
    assert passes(filters, "RECORD#rec_1") and not passes(filters, "FACT#f1")


def test_the_events_dlq_is_encrypted_tls_only_and_keeps_a_batch_14_days(default_synth: Synth) -> None:
    dlq = events_dlq(default_synth)
    properties = default_synth.props(dlq)
    assert properties["SqsManagedSseEnabled"] is True
    assert properties["MessageRetentionPeriod"] == names.DLQ_RETENTION_DAYS * 86400
    assert "FifoQueue" not in properties  # Lambda sends a stream's failed batches to standard queues only
    default_synth.template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "Queues": [{"Ref": dlq}],
            "PolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
                    )
                ]
            },
        },
    )


def test_the_events_role_reads_the_stream_puts_on_the_bus_and_nothing_else(default_synth: Synth) -> None:
    synth = default_synth
    role = synth.role_id("events")
    log_group = synth.function("events")["LoggingConfig"]["LogGroup"]["Ref"]
    stream = "${" + TABLE_LOGICAL_ID + ".StreamArn}"
    bus, dlq = only(synth, "AWS::Events::EventBus"), events_dlq(synth)
    expected = {
        "logs:CreateLogStream": {arn(log_group)},
        "logs:PutLogEvents": {arn(log_group)},
        "xray:PutTraceSegments": {"*"},
        "xray:PutTelemetryRecords": {"*"},
        **{action: {stream} for action in STREAM_READS},
        "dynamodb:ListStreams": {"*"},  # no resource-level permissions: its own acknowledged policy
        "events:PutEvents": {arn(bus)},
        # The mapping's on-failure destination (SqsDlq grants what Lambda sends it with).
        "sqs:SendMessage": {arn(dlq)},
        "sqs:GetQueueAttributes": {arn(dlq)},
        "sqs:GetQueueUrl": {arn(dlq)},
    }
    assert granted(synth, role) == expected
    # ListStreams is alone in its policy, which the function (hence the mapping) waits for.
    (policy,) = synth.template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"PolicyName": Match.string_like_regexp("StreamListPolicy")}}
    )
    statements = synth.props(policy)["PolicyDocument"]["Statement"]
    assert statements == [{"Action": "dynamodb:ListStreams", "Effect": "Allow", "Resource": "*"}]
    assert policy in synth.template.to_json()["Resources"][synth.function_id("events")]["DependsOn"]
    # No other function may publish or read the stream (get_memory's GetRecords is on the table's ARN,
    # which no stream matches: CDK's read grant names it).
    for name in FUNCTIONS:
        if name != "events":
            grants = granted(synth, synth.role_id(name))
            assert not [a for a in grants if a.startswith("events:") or a == "dynamodb:ListStreams"], name
            assert not [a for a, rs in grants.items() for r in rs if "StreamArn" in r or "/stream" in r], name


def test_the_bus_is_the_stages_and_the_function_and_the_outputs_name_it(default_synth: Synth) -> None:
    bus = only(default_synth, "AWS::Events::EventBus", {"Name": "hippocampus-dev"})
    assert default_synth.environment("events")["MEMORY_EVENT_BUS_NAME"] == {"Ref": bus}
    assert default_synth.environment("events")["MEMORY_EVENTS_INCLUDE_CONTENT"] == "false"
    default_synth.template.has_output("EventBusName", {"Value": {"Ref": bus}})
    default_synth.template.has_output("EventBusArn", {"Value": {"Fn::GetAtt": [bus, "Arn"]}})


def test_the_registry_holds_one_schema_per_detail_type(default_synth: Synth) -> None:
    template = default_synth.template
    registry = only(default_synth, "AWS::EventSchemas::Registry", {"RegistryName": "hippocampus-dev"})
    schemas = template.find_resources("AWS::EventSchemas::Schema")
    assert len(schemas) == len(DETAIL_MODELS)
    by_name = {s["Properties"]["SchemaName"]: s["Properties"] for s in schemas.values()}
    for detail_type, model in DETAIL_MODELS.items():
        properties = by_name[schema_name(detail_type)]
        assert properties["RegistryName"] == {"Fn::GetAtt": [registry, "RegistryName"]}
        assert properties["Type"] == "OpenApi3"
        content = json.loads(properties["Content"])
        assert content == schema_document(detail_type)
        detail = content["components"]["schemas"][model.__name__]
        for field in model.model_fields:
            assert field in detail["properties"], (detail_type, field)


def test_the_events_alarms_watch_the_dlq_and_the_streams_age(default_synth: Synth) -> None:
    (topic,) = default_synth.template.find_resources("AWS::SNS::Topic")
    notifies = {
        "AlarmActions": [{"Ref": topic}],
        "OKActions": [{"Ref": topic}],
        "TreatMissingData": "notBreaching",
        "EvaluationPeriods": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
    }
    default_synth.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": "hippocampus-dev-events-dlq-not-empty",
            "Namespace": "AWS/SQS",
            "MetricName": "ApproximateNumberOfMessagesVisible",
            "Dimensions": [
                {"Name": "QueueName", "Value": {"Fn::GetAtt": [events_dlq(default_synth), "QueueName"]}}
            ],
            "Statistic": "Maximum",
            "Period": 60,
            "Threshold": 1,
            **notifies,
        },
    )
    default_synth.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": "hippocampus-dev-events-iterator-age",
            "Namespace": "AWS/Lambda",
            "MetricName": "IteratorAge",
            "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": default_synth.function_id("events")}}],
            "Statistic": "Maximum",
            "Period": 300,
            "Threshold": ITERATOR_AGE_ALARM_MS,
            **notifies,
        },
    )
    assert ITERATOR_AGE_ALARM_MS == 5 * 60 * 1000  # IteratorAge is in milliseconds
    default_synth.template.resource_count_is("AWS::CloudWatch::Alarm", DEFAULT_ALARMS)
    (dashboard,) = default_synth.template.find_resources("AWS::CloudWatch::Dashboard").values()
    body = render(dashboard["Properties"]["DashboardBody"])
    for metric in (
        '"EventsPublished"',
        '"IteratorAge"',
        '"label":"events p99"',
        '"label":"Events DLQ depth"',
    ):
        assert metric in body, metric


def test_without_webhooks_nothing_of_them_is_created(default_synth: Synth) -> None:
    template = default_synth.template
    for resource_type in ("AWS::Events::Connection", "AWS::Events::ApiDestination"):
        template.resource_count_is(resource_type, 0)
    # The one rule is the condenser's schedule, on the default bus.
    (rule,) = template.find_resources("AWS::Events::Rule").values()
    assert "EventBusName" not in rule["Properties"] and "ScheduleExpression" in rule["Properties"]
    assert not template.find_resources(
        "AWS::SQS::Queue", {"Properties": {"QueueName": "hippocampus-dev-webhooks-dlq"}}
    )
    assert "webhooks" not in json.dumps(template.find_resources("AWS::CloudWatch::Alarm"))


# ----------------------------------------------------------------------------- stage qa, two webhooks


def test_each_webhook_is_a_connection_with_its_secrets_api_key(webhooks: Synth) -> None:
    webhooks.template.resource_count_is("AWS::Events::Connection", len(WEBHOOKS))
    for name, header, secret in (
        ("crm", "X-Api-Key", "hippocampus/qa/crm-webhook"),
        ("privacy", "X-Privacy-Key", "privacy-team/api-key"),
    ):
        webhooks.template.has_resource_properties(
            "AWS::Events::Connection",
            {
                "Name": f"hippocampus-qa-webhook-{name}",
                "AuthorizationType": "API_KEY",
                "AuthParameters": {
                    "ApiKeyAuthParameters": {
                        "ApiKeyName": header,
                        # A dynamic reference, resolved by CloudFormation: the key is never in the template.
                        "ApiKeyValue": f"{{{{resolve:secretsmanager:{secret}:SecretString:::}}}}",
                    }
                },
            },
        )


def test_each_webhook_is_an_api_destination_fed_by_a_rule_on_the_bus(webhooks: Synth) -> None:
    template = webhooks.template
    bus = only(webhooks, "AWS::Events::EventBus", {"Name": "hippocampus-qa"})
    dlq = only(webhooks, "AWS::SQS::Queue", {"QueueName": "hippocampus-qa-webhooks-dlq"})
    template.resource_count_is("AWS::Events::ApiDestination", len(WEBHOOKS))
    on_bus = template.find_resources("AWS::Events::Rule", {"Properties": {"EventBusName": {"Ref": bus}}})
    assert len(on_bus) == len(WEBHOOKS)
    for webhook, detail_types in zip(WEBHOOKS, (list(EVENT_DETAIL_TYPES), ["User Forgotten"]), strict=True):
        name = f"hippocampus-qa-webhook-{webhook['name']}"
        connection = only(webhooks, "AWS::Events::Connection", {"Name": name})
        destination = only(
            webhooks,
            "AWS::Events::ApiDestination",
            {
                "Name": name,
                "InvocationEndpoint": webhook["url"],
                "HttpMethod": "POST",
                "ConnectionArn": {"Fn::GetAtt": [connection, "Arn"]},
            },
        )
        rule = webhooks.props(only(webhooks, "AWS::Events::Rule", {"Name": name}))
        assert rule["EventBusName"] == {"Ref": bus}
        assert rule["EventPattern"] == {"source": [EVENT_SOURCE], "detail-type": detail_types}
        (target,) = rule["Targets"]
        assert target["Arn"] == {"Fn::GetAtt": [destination, "Arn"]}
        assert target["RetryPolicy"] == {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": 86400}
        assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [dlq, "Arn"]}}
        # The rule's role may call its own destination, nothing else.
        role = target["RoleArn"]["Fn::GetAtt"][0]
        assert granted(webhooks, role) == {"events:InvokeApiDestination": {arn(destination)}}


def test_the_webhooks_dlq_takes_the_rules_failures_only_and_alarms(webhooks: Synth) -> None:
    dlq = only(webhooks, "AWS::SQS::Queue", {"QueueName": "hippocampus-qa-webhooks-dlq"})
    properties = webhooks.props(dlq)
    assert properties["SqsManagedSseEnabled"] is True
    assert properties["MessageRetentionPeriod"] == names.DLQ_RETENTION_DAYS * 86400
    (policy,) = webhooks.template.find_resources(
        "AWS::SQS::QueuePolicy", {"Properties": {"Queues": [{"Ref": dlq}]}}
    )
    statements = webhooks.props(policy)["PolicyDocument"]["Statement"]
    rules = {
        only(webhooks, "AWS::Events::Rule", {"Name": f"hippocampus-qa-webhook-{w['name']}"}) for w in WEBHOOKS
    }
    allowed = [s for s in statements if s["Effect"] == "Allow"]
    assert {s["Condition"]["ArnEquals"]["aws:SourceArn"]["Fn::GetAtt"][0] for s in allowed} == rules
    for statement in allowed:
        assert (statement["Principal"], statement["Action"]) == (
            {"Service": "events.amazonaws.com"},
            "sqs:SendMessage",
        )
    webhooks.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": "hippocampus-qa-webhooks-dlq-not-empty",
            "MetricName": "ApproximateNumberOfMessagesVisible",
            "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq, "QueueName"]}}],
            "Threshold": 1,
        },
    )
    webhooks.template.resource_count_is("AWS::CloudWatch::Alarm", DEFAULT_ALARMS + 1)


def test_the_stage_names_the_bus_and_the_registry(webhooks: Synth) -> None:
    bus = only(webhooks, "AWS::Events::EventBus", {"Name": "hippocampus-qa"})
    assert webhooks.environment("events")["MEMORY_EVENT_BUS_NAME"] == {"Ref": bus}
    only(webhooks, "AWS::EventSchemas::Registry", {"RegistryName": "hippocampus-qa"})
    only(webhooks, "AWS::SQS::Queue", {"QueueName": "hippocampus-qa-events-dlq"})


# ----------------------------------------------------------------------------- cdk-nag and cfn-lint


def test_both_stacks_pass_cdk_nag_and_cfn_lint(default_synth: Synth, webhooks: Synth) -> None:
    for synth in (default_synth, webhooks):
        assert_nag_clean(synth)
        assert_acknowledgments_used_and_explained(synth)
        assert_cfn_lint_clean(synth)


def test_acknowledgments_of_events_are_the_reviewed_ones(default_synth: Synth, webhooks: Synth) -> None:
    """The events' own: ListStreams' `*` on its own policy, the events DLQ that is no queue's DLQ; the
    webhooks add their DLQ's, nothing else."""

    def rules(synth: Synth) -> Counter[tuple[str, str]]:
        return Counter(
            (path.split("/", 1)[1], re.sub(r"<[^>]+>", "<ref>", rule_id))
            for path, rule_id, _ in acknowledgments(synth)
        )

    events = {
        key: n
        for key, n in rules(default_synth).items()
        if key[0].startswith(("Events", "Functions/Events/"))
    }
    assert events == {
        ("Events/DeadLetterQueue", "AwsSolutions-SQS3"): 1,
        ("Functions/Events/StreamListPolicy", "AwsSolutions-IAM5[Resource::*]"): 1,
        ("Functions/Events/Role", "AwsSolutions-IAM5[Resource::*]"): 1,  # X-Ray, as every traced function
        ("Functions/Events/Function", "AwsSolutions-L1"): 1,
    }
    assert rules(webhooks) - rules(default_synth) == {
        ("Events/WebhooksDeadLetterQueue", "AwsSolutions-SQS3"): 1
    }
