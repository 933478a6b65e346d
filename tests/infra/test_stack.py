"""The stack with the model's default settings: every property of issue 3, from one synth.

The settings are pinned to DeploymentConfig's defaults (not to whatever cdk.json says today);
test_compliance.py checks the stack cdk.json actually describes.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hippocampus.contracts import names as schema
from hippocampus.contracts.routes import ROUTES
from infra.api import GATEWAY_ERRORS
from tests.infra.helpers import (
    Synth,
    acknowledgments,
    as_list,
    assert_acknowledgments_used_and_explained,
    assert_nag_clean,
    context_with,
    render,
    statements,
    synthesize,
)

FUNCTIONS = ("get_memory", "ingest", "condenser")


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    result = synthesize(tmp_path_factory.mktemp("cdk-default"), context_with())
    assert result.error is None, result.error
    return result


def single(synth: Synth, resource_type: str, **match: Any) -> tuple[str, dict[str, Any]]:
    found = [
        (k, v["Properties"])
        for k, v in synth.of_type(resource_type).items()
        if all(v["Properties"].get(key) == value for key, value in match.items())
    ]
    assert len(found) == 1, f"{resource_type} {match}: {len(found)} found"
    return found[0]


def env(synth: Synth, name: str) -> dict[str, Any]:
    return synth.props(synth.function_id(name))["Environment"]["Variables"]


# ----------------------------------------------------------------------------- storage


def test_memory_table_on_demand_pitr_ttl(synth: Synth) -> None:
    _, table = single(
        synth,
        "AWS::DynamoDB::Table",
        TimeToLiveSpecification={
            "AttributeName": schema.TABLE_TTL_ATTRIBUTE,
            "Enabled": True,
        },
    )
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["KeySchema"] == [
        {"AttributeName": schema.TABLE_PARTITION_KEY, "KeyType": "HASH"},
        {"AttributeName": schema.TABLE_SORT_KEY, "KeyType": "RANGE"},
    ]
    assert table["SSESpecification"] == {"SSEEnabled": True}
    assert table["DeletionProtectionEnabled"] is True


def test_idempotency_table(synth: Synth) -> None:
    _, table = single(
        synth,
        "AWS::DynamoDB::Table",
        TimeToLiveSpecification={
            "AttributeName": schema.IDEMPOTENCY_TTL_ATTRIBUTE,
            "Enabled": True,
        },
    )
    assert table["KeySchema"] == [{"AttributeName": schema.IDEMPOTENCY_PARTITION_KEY, "KeyType": "HASH"}]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_data_is_retained_by_default(synth: Synth) -> None:
    for resource_type in ("AWS::DynamoDB::Table", "AWS::S3::Bucket"):
        for logical_id, resource in synth.of_type(resource_type).items():
            assert resource["DeletionPolicy"] == "Retain", logical_id


def archive_bucket(synth: Synth) -> tuple[str, dict[str, Any]]:
    """The bucket that logs to the access-log bucket."""
    return next(
        (k, v["Properties"])
        for k, v in synth.of_type("AWS::S3::Bucket").items()
        if "LoggingConfiguration" in v["Properties"]
    )


def test_archive_bucket_lifecycle_from_config(synth: Synth) -> None:
    _, bucket = archive_bucket(synth)
    config = synth.stack.config
    rules = {rule["Id"]: rule for rule in bucket["LifecycleConfiguration"]["Rules"]}
    assert rules["expire-raw"]["Prefix"] == schema.RAW_PREFIX
    assert rules["expire-raw"]["ExpirationInDays"] == config.raw_retention_days
    assert rules["expire-history"]["Prefix"] == schema.HISTORY_PREFIX
    assert rules["expire-history"]["ExpirationInDays"] == config.history_retention_days
    assert all(rule["Status"] == "Enabled" for rule in rules.values())
    assert rules["abort-incomplete-uploads"]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}


def test_buckets_private_encrypted_tls_only(synth: Synth) -> None:
    buckets = synth.of_type("AWS::S3::Bucket")
    assert len(buckets) == 2  # archive + its access logs
    for logical_id, resource in buckets.items():
        props = resource["Properties"]
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }, logical_id
        sse = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
        assert sse["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
        assert "VersioningConfiguration" not in props  # DELETE must erase content, not keep versions
        policy = next(
            p["Properties"]["PolicyDocument"]
            for p in synth.of_type("AWS::S3::BucketPolicy").values()
            if p["Properties"]["Bucket"] == {"Ref": logical_id}
        )
        denies = [s for s in policy["Statement"] if s["Effect"] == "Deny"]
        assert {"Bool": {"aws:SecureTransport": "false"}} in [s["Condition"] for s in denies]
        assert {"NumericLessThan": {"s3:TlsVersion": 1.2}} in [s["Condition"] for s in denies]
    _, archive = archive_bucket(synth)
    assert archive["LoggingConfiguration"]["LogFilePrefix"] == "archive/"


# ----------------------------------------------------------------------------- queueing


def queues(synth: Synth) -> tuple[dict[str, Any], dict[str, Any], str]:
    _, queue = single(synth, "AWS::SQS::Queue", QueueName="hippocampus-dev-ingest.fifo")
    dlq_id, dlq = single(synth, "AWS::SQS::Queue", QueueName="hippocampus-dev-ingest-dlq.fifo")
    return queue, dlq, dlq_id


def test_fifo_queue_high_throughput_with_fifo_dlq(synth: Synth) -> None:
    queue, dlq, dlq_id = queues(synth)
    assert queue["FifoQueue"] is True and dlq["FifoQueue"] is True
    assert queue["DeduplicationScope"] == "messageGroup"
    assert queue["FifoThroughputLimit"] == "perMessageGroupId"
    assert queue["ContentBasedDeduplication"] is False  # ingest sets explicit deduplication ids
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
        "maxReceiveCount": schema.DLQ_MAX_RECEIVE_COUNT,
    }
    assert schema.DLQ_MAX_RECEIVE_COUNT == 5
    assert queue["SqsManagedSseEnabled"] is True and dlq["SqsManagedSseEnabled"] is True
    assert dlq["MessageRetentionPeriod"] == schema.DLQ_RETENTION_DAYS * 86400


def test_queues_are_tls_only(synth: Synth) -> None:
    policies = synth.of_type("AWS::SQS::QueuePolicy")
    assert len(policies) == 2
    for policy in policies.values():
        (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
        assert statement["Effect"] == "Deny"
        assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_visibility_timeout_covers_six_condenser_timeouts(synth: Synth) -> None:
    queue, _, _ = queues(synth)
    condenser = synth.props(synth.function_id("condenser"))
    assert condenser["Timeout"] == schema.CONDENSER_TIMEOUT_S
    assert queue["VisibilityTimeout"] == schema.QUEUE_VISIBILITY_TIMEOUT_S
    assert queue["VisibilityTimeout"] >= 6 * condenser["Timeout"]


def test_condenser_event_source_reports_batch_item_failures(synth: Synth) -> None:
    (mapping,) = synth.of_type("AWS::Lambda::EventSourceMapping").values()
    props = mapping["Properties"]
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["BatchSize"] == schema.CONDENSER_BATCH_SIZE
    assert props["FunctionName"] == {"Ref": synth.function_id("condenser")}
    queue_id = single(synth, "AWS::SQS::Queue", QueueName="hippocampus-dev-ingest.fifo")[0]
    assert props["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}


# ----------------------------------------------------------------------------- functions


def test_functions_runtime_arch_tracing_logging(synth: Synth) -> None:
    functions = synth.of_type("AWS::Lambda::Function")
    assert len(functions) == 3
    log_groups = synth.of_type("AWS::Logs::LogGroup")
    for name in FUNCTIONS:
        props = synth.props(synth.function_id(name))
        assert props["Runtime"] == "python3.13"
        assert props["Architectures"] == ["arm64"]
        assert props["Handler"] == "handler.lambda_handler"
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert props["MemorySize"] >= 128 and props["Timeout"] >= 1
        logging = props["LoggingConfig"]
        assert logging["LogFormat"] == "JSON"
        log_group_id = logging["LogGroup"]["Ref"]
        assert (
            log_groups[log_group_id]["Properties"]["RetentionInDays"] == synth.stack.config.log_retention_days
        )


def test_one_role_per_function(synth: Synth) -> None:
    roles = {synth.props(synth.function_id(name))["Role"]["Fn::GetAtt"][0] for name in FUNCTIONS}
    assert len(roles) == 3
    for role in roles:
        assert "ManagedPolicyArns" not in synth.props(role)  # no AWSLambdaBasicExecutionRole
        assert synth.props(role)["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
            "Service": "lambda.amazonaws.com"
        }


def test_environment(synth: Synth) -> None:
    config = synth.stack.config
    common = {
        "MEMORY_MAX_WORDS": str(config.max_words),
        "MEMORY_TRACING": "xray",
        "MEMORY_LOG_CONTENT": "false",
        "MEMORY_JOB_RETENTION_DAYS": str(config.raw_retention_days),
        "POWERTOOLS_SERVICE_NAME": schema.SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": schema.METRICS_NAMESPACE,
        "POWERTOOLS_LOG_LEVEL": config.log_level,
    }
    for name in FUNCTIONS:
        variables = env(synth, name)
        assert common.items() <= variables.items(), name
        assert "Ref" in variables["MEMORY_TABLE_NAME"] and "Ref" in variables["MEMORY_BUCKET_NAME"]
        assert "MEMORY_TTL_DAYS" not in variables  # not configured by default
        assert not any("KEY" in key and "SECRET" not in key for key in variables), "no plain API key"
    ingest = env(synth, "ingest")
    assert "MEMORY_QUEUE_URL" in ingest and "MEMORY_IDEMPOTENCY_TABLE_NAME" in ingest
    assert "MEMORY_QUEUE_URL" not in env(synth, "get_memory")
    condenser = env(synth, "condenser")
    assert condenser["MEMORY_LLM_PROVIDER"] == "offline"
    assert "MEMORY_LLM_MODEL" not in condenser  # offline: no model
    assert float(condenser["MEMORY_LLM_TIMEOUT_S"]) == config.llm_timeout_s
    assert "MEMORY_LLM_API_KEY_SECRET" not in condenser  # offline: no secret, no grant
    for name in ("get_memory", "ingest"):
        assert not any(key.startswith("MEMORY_LLM") for key in env(synth, name))


def layer_dirs(synth: Synth, function: str) -> list[Path]:
    layers = synth.props(synth.function_id(function))["Layers"]
    return [synth.asset_dir(synth.props(layer["Ref"])["Content"]["S3Key"]) for layer in layers]


def test_layers_per_function(synth: Synth) -> None:
    for name in FUNCTIONS:
        dirs = layer_dirs(synth, name)
        packages = {p.name for d in dirs for p in (d / "python").iterdir()}
        assert "hippocampus" in packages and "aws_lambda_powertools" in packages and "pydantic" in packages
        assert not packages & {"boto3", "botocore", "s3transfer"}, name
        assert ("openai" in packages) == (name == "condenser"), name
        # The read path never loads the X-Ray SDK, so it does not carry it either.
        assert ("aws_xray_sdk" in packages) == (name != "get_memory"), name
        # Layers of one function are extracted into the same /opt/python: no package may be in two.
        tops = [{p.name for p in (d / "python").iterdir() if p.name != "__pycache__"} for d in dirs]
        assert sum(map(len, tops)) == len(set().union(*tops)), name
    for layer in synth.of_type("AWS::Lambda::LayerVersion").values():
        assert layer["Properties"]["CompatibleRuntimes"] == ["python3.13"]
        assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]


def test_layers_and_code_ship_unchecked_hash_pyc_for_313(synth: Synth) -> None:
    for name in FUNCTIONS:
        code = synth.asset_dir(synth.props(synth.function_id(name))["Code"]["S3Key"])
        assert (code / "handler.py").is_file()
        assert (code / "__pycache__" / "handler.cpython-313.pyc").is_file()
        for directory in layer_dirs(synth, name):
            pycs = list((directory / "python").rglob("*.pyc"))
            assert pycs, directory
            # Python 3.13's magic number (the dependency layers' legacy .pyc carry no cpython-313 tag).
            headers = {p.read_bytes()[:8] for p in pycs[:200]}
            assert {header[:4] for header in headers} == {importlib.util.MAGIC_NUMBER}, directory
            # PEP 552 flags: 0b01 = hash-based, not checked against the source.
            assert {int.from_bytes(header[4:8], "little") for header in headers} == {1}, directory
    core = next(d for d in layer_dirs(synth, "get_memory") if (d / "python" / "hippocampus").is_dir())
    assert (core / "python" / "hippocampus" / "contracts" / "routes.py").is_file()
    assert (
        core / "python" / "hippocampus" / "contracts" / "__pycache__" / "routes.cpython-313.pyc"
    ).is_file()
    deps = next(d for d in layer_dirs(synth, "get_memory") if (d / "python" / "pydantic").is_dir())
    assert (deps / "python" / "pydantic" / "main.pyc").is_file()  # bytecode only
    assert not (deps / "python" / "pydantic" / "main.py").exists()


# ----------------------------------------------------------------------------- IAM


def test_no_wildcard_actions_in_allow_statements(synth: Synth) -> None:
    for logical_id, statement in statements(synth):
        if statement["Effect"] != "Allow":
            continue
        for action in as_list(statement["Action"]):
            assert "*" not in action, f"{logical_id}: {action}"


def test_resource_star_only_for_xray_and_metrics(synth: Synth) -> None:
    allowed = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "cloudwatch:PutMetricData"}
    for logical_id, statement in statements(synth):
        if statement["Effect"] == "Allow" and "*" in as_list(statement.get("Resource", [])):
            assert set(as_list(statement["Action"])) <= allowed, f"{logical_id}: {statement}"


def policy_of(synth: Synth, function: str) -> list[dict[str, Any]]:
    role = synth.props(synth.function_id(function))["Role"]["Fn::GetAtt"][0]
    return [
        statement
        for p in synth.of_type("AWS::IAM::Policy").values()
        if {"Ref": role} in p["Properties"]["Roles"]
        for statement in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def allowed(synth: Synth, function: str) -> dict[str, set[str]]:
    """action → set of rendered resources (with the condition when there is one)."""
    result: dict[str, set[str]] = {}
    for statement in policy_of(synth, function):
        assert statement["Effect"] == "Allow"
        for action in as_list(statement["Action"]):
            for resource in as_list(statement["Resource"]):
                text = render(resource)
                if "Condition" in statement:
                    text += " if " + json.dumps(statement["Condition"], sort_keys=True)
                result.setdefault(action, set()).add(text)
    return result


def bucket_arn(synth: Synth) -> str:
    return "${" + archive_bucket(synth)[0] + ".Arn}"


def test_get_memory_permissions(synth: Synth) -> None:
    grants = allowed(synth, "get_memory")
    bucket = bucket_arn(synth)
    assert grants["s3:GetObject"] == {f"{bucket}/history/*"}
    assert grants["s3:ListBucket"] == {bucket + ' if {"StringLike": {"s3:prefix": ["history/*"]}}'}
    assert "dynamodb:GetItem" in grants and "dynamodb:Query" in grants
    writes = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}
    assert not writes & grants.keys()
    assert not {a for a in grants if a.startswith(("sqs:", "secretsmanager:", "bedrock:"))}
    assert not {"s3:PutObject", "s3:DeleteObject"} & grants.keys()


def test_ingest_permissions(synth: Synth) -> None:
    grants = allowed(synth, "ingest")
    bucket = bucket_arn(synth)
    assert grants["s3:PutObject"] == {f"{bucket}/raw/*"}
    assert grants["s3:GetObject"] == {f"{bucket}/raw/*"}
    assert grants["s3:DeleteObject"] == {f"{bucket}/raw/*", f"{bucket}/history/*"}
    assert grants["s3:ListBucket"] == {bucket + ' if {"StringLike": {"s3:prefix": ["raw/*", "history/*"]}}'}
    assert "sqs:SendMessage" in grants and "sqs:ReceiveMessage" not in grants
    assert len(grants["dynamodb:PutItem"]) == 2  # memory table and idempotency table
    assert not {a for a in grants if a.startswith(("secretsmanager:", "bedrock:"))}


def test_condenser_permissions(synth: Synth) -> None:
    grants = allowed(synth, "condenser")
    bucket = bucket_arn(synth)
    assert grants["s3:GetObject"] == {f"{bucket}/raw/*"}
    assert "s3:DeleteObject" not in grants  # raw/ expires by lifecycle; only a user's DELETE erases
    assert grants["s3:PutObject"] == {f"{bucket}/history/*"}
    # So that a raw/ payload erased by a DELETE is 404 NoSuchKey (skipped), not 403 AccessDenied.
    assert grants["s3:ListBucket"] == {bucket + ' if {"StringLike": {"s3:prefix": ["raw/*"]}}'}
    assert {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"} <= grants.keys()
    assert "sqs:SendMessage" not in grants
    assert len(grants["dynamodb:PutItem"]) == 1  # memory table only
    # offline provider: neither a secret nor Bedrock
    assert not {a for a in grants if a.startswith(("secretsmanager:", "bedrock:"))}


def test_logs_scoped_to_own_log_group(synth: Synth) -> None:
    for name in FUNCTIONS:
        log_group = synth.props(synth.function_id(name))["LoggingConfig"]["LogGroup"]["Ref"]
        assert allowed(synth, name)["logs:PutLogEvents"] == {"${" + log_group + ".Arn}"}


# ----------------------------------------------------------------------------- API


def resource_paths(synth: Synth) -> dict[str, str]:
    """API Gateway Resource logical id → full path."""
    resources = synth.of_type("AWS::ApiGateway::Resource")
    paths: dict[str, str] = {}

    def path_of(logical_id: str) -> str:
        if logical_id not in paths:
            props = resources[logical_id]["Properties"]
            parent = props["ParentId"]
            prefix = path_of(parent["Ref"]) if "Ref" in parent else ""
            paths[logical_id] = f"{prefix}/{props['PathPart']}"
        return paths[logical_id]

    for logical_id in resources:
        path_of(logical_id)
    return paths


def methods(synth: Synth) -> dict[tuple[str, str], dict[str, Any]]:
    paths = resource_paths(synth)
    return {
        (m["Properties"]["HttpMethod"], paths[m["Properties"]["ResourceId"]["Ref"]]): m["Properties"]
        for m in synth.of_type("AWS::ApiGateway::Method").values()
        if "Ref" in m["Properties"]["ResourceId"]
    }


def integration_target(synth: Synth, method: dict[str, Any]) -> str:
    uri = render(method["Integration"]["Uri"])
    ids = {logical_id: name for name, logical_id in synth.function_ids().items()}
    (target,) = [name for logical_id, name in ids.items() if "${" + logical_id + ".Arn}" in uri]
    return target


def test_every_route_maps_to_its_function(synth: Synth) -> None:
    found = methods(synth)
    prefix = synth.stack.config.name_prefix
    for route in ROUTES:
        method = found[(route.method, route.path)]
        assert method["Integration"]["Type"] == "AWS_PROXY"
        assert integration_target(synth, method) == f"{prefix}-{route.function.replace('_', '-')}"
    # ANY on every routed resource reaches get_memory (it answers 405); nothing else exists.
    routed = {route.path for route in ROUTES}
    for path in routed:
        assert integration_target(synth, found[("ANY", path)]) == f"{prefix}-get-memory"
    assert set(found) == {(r.method, r.path) for r in ROUTES} | {("ANY", p) for p in routed}


def test_all_methods_use_iam_and_the_parameter_validator(synth: Synth) -> None:
    ((validator_id, validator),) = synth.of_type("AWS::ApiGateway::RequestValidator").items()
    assert validator["Properties"]["ValidateRequestParameters"] is True
    assert validator["Properties"]["ValidateRequestBody"] is False  # the Lambda answers 422 itself
    all_methods = synth.of_type("AWS::ApiGateway::Method")
    assert all_methods
    for logical_id, method in all_methods.items():
        props = method["Properties"]
        assert props["AuthorizationType"] == "AWS_IAM", logical_id
        assert props["RequestValidatorId"] == {"Ref": validator_id}, logical_id
        assert "RequestModels" not in props
        for name in re.findall(r"\{([^}]+)\}", resource_paths(synth)[props["ResourceId"]["Ref"]]):
            assert props["RequestParameters"][f"method.request.path.{name}"] is True


def test_stage_throttling_logging_tracing(synth: Synth) -> None:
    config = synth.stack.config
    (stage,) = synth.of_type("AWS::ApiGateway::Stage").values()
    props = stage["Properties"]
    assert props["StageName"] == config.stage
    assert props["TracingEnabled"] is True
    (settings,) = props["MethodSettings"]
    assert settings["ThrottlingRateLimit"] == config.throttling_rate_limit
    assert settings["ThrottlingBurstLimit"] == config.throttling_burst_limit
    assert settings["LoggingLevel"] == "ERROR"
    assert settings["DataTraceEnabled"] is False
    assert settings["MetricsEnabled"] is True
    access_log = json.loads(props["AccessLogSetting"]["Format"])
    assert {"requestId", "status", "resourcePath", "errorType", "xrayTraceId"} <= access_log.keys()
    log_group = props["AccessLogSetting"]["DestinationArn"]["Fn::GetAtt"][0]
    assert synth.props(log_group)["RetentionInDays"] == config.log_retention_days
    ((rest_api_id, rest_api),) = synth.of_type("AWS::ApiGateway::RestApi").items()
    assert rest_api["Properties"]["EndpointConfiguration"] == {"Types": ["REGIONAL"]}
    # API Gateway's own execution log group, owned by the stack so that it has a retention.
    (execution_logs,) = [
        g["Properties"]
        for g in synth.of_type("AWS::Logs::LogGroup").values()
        if render(g["Properties"].get("LogGroupName", "")).startswith("API-Gateway-Execution-Logs_")
    ]
    assert (
        render(execution_logs["LogGroupName"])
        == f"API-Gateway-Execution-Logs_${{{rest_api_id}}}/{config.stage}"
    )
    assert execution_logs["RetentionInDays"] == config.log_retention_days


def test_lambda_permissions_are_scoped_to_this_api(synth: Synth) -> None:
    permissions = synth.of_type("AWS::Lambda::Permission")
    assert len(permissions) == 2  # one per API function, not one per method
    (api_id,) = synth.of_type("AWS::ApiGateway::RestApi")
    for permission in permissions.values():
        props = permission["Properties"]
        assert props["Principal"] == "apigateway.amazonaws.com"
        assert render(props["SourceArn"]).endswith("${" + api_id + "}/*/*/*")


EXPECTED_STATUS = {
    "MISSING_AUTHENTICATION_TOKEN": (404, "not_found"),
    "RESOURCE_NOT_FOUND": (404, "not_found"),
    "ACCESS_DENIED": (403, "access_denied"),
    "THROTTLED": (429, "throttled"),
    "REQUEST_TOO_LARGE": (413, "payload_too_large"),
    "BAD_REQUEST_BODY": (400, "bad_request"),
    "BAD_REQUEST_PARAMETERS": (422, "validation_error"),
    "DEFAULT_4XX": (400, "bad_request"),
    "DEFAULT_5XX": (500, "internal_error"),
}


def test_gateway_responses_use_the_error_envelope(synth: Synth) -> None:
    responses = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in synth.of_type("AWS::ApiGateway::GatewayResponse").values()
    }
    assert len(responses) == len(GATEWAY_ERRORS)
    for response_type, (status, code) in EXPECTED_STATUS.items():
        assert int(responses[response_type]["StatusCode"]) == status, response_type
        assert (
            json.loads(
                responses[response_type]["ResponseTemplates"]["application/json"].replace(
                    "$context.error.messageString", '"message from API Gateway"'
                )
            )["error"]["code"]
            == code
        )
    for response_type, props in responses.items():
        body = json.loads(
            props["ResponseTemplates"]["application/json"].replace(
                "$context.error.messageString", '"message from API Gateway"'
            )
        )
        assert set(body) == {"error"}, response_type
        error = body["error"]
        assert set(error) == {"code", "message", "status", "details"}
        assert error["status"] == int(props["StatusCode"]), response_type
        assert error["details"] == []
        assert re.fullmatch(r"[a-z][a-z_]*", error["code"])
        assert props["ResponseParameters"] == {"gatewayresponse.header.Content-Type": "'application/json'"}


# ----------------------------------------------------------------------------- monitoring


def test_alarms(synth: Synth) -> None:
    alarms = {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in synth.of_type("AWS::CloudWatch::Alarm").values()
    }
    prefix = synth.stack.config.name_prefix
    (topic_id,) = synth.of_type("AWS::SNS::Topic")

    dlq = alarms[f"{prefix}-dlq-not-empty"]
    assert dlq["MetricName"] == "ApproximateNumberOfMessagesVisible" and dlq["Namespace"] == "AWS/SQS"
    assert dlq["Threshold"] == 1 and dlq["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    dlq_id = single(synth, "AWS::SQS::Queue", QueueName="hippocampus-dev-ingest-dlq.fifo")[0]
    assert dlq["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}]

    errors = alarms[f"{prefix}-condenser-errors"]
    assert errors["MetricName"] == "Errors" and errors["Namespace"] == "AWS/Lambda"
    assert errors["Dimensions"] == [
        {"Name": "FunctionName", "Value": {"Ref": synth.function_id("condenser")}}
    ]

    api = alarms[f"{prefix}-api-5xx"]
    assert api["MetricName"] == "5XXError" and api["Namespace"] == "AWS/ApiGateway"

    llm = alarms[f"{prefix}-llm-latency"]
    assert llm["MetricName"] == "LlmLatencyMs" and llm["Namespace"] == schema.METRICS_NAMESPACE
    assert llm["Dimensions"] == [{"Name": "service", "Value": schema.SERVICE_NAME}]
    assert llm["Threshold"] == synth.stack.config.llm_latency_alarm_ms

    for name, alarm in alarms.items():
        assert alarm["AlarmActions"] == [{"Ref": topic_id}], name
        assert alarm["TreatMissingData"] == "notBreaching", name
    # No e-mail configured by default: the topic exists, nothing subscribes.
    assert not synth.of_type("AWS::SNS::Subscription")


def test_dashboard_shows_api_ingest_condenser_dlq_and_llm(synth: Synth) -> None:
    (dashboard,) = synth.of_type("AWS::CloudWatch::Dashboard").values()
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
    ):
        assert f'"{metric}"' in body, metric
    assert f'"{schema.METRICS_NAMESPACE}"' in body and '"service","hippocampus"' in body


# ----------------------------------------------------------------------------- outputs


def test_outputs_with_fixed_keys(synth: Synth) -> None:
    keys = {
        "ApiUrl",
        "GetMemoryFunctionName",
        "GetMemoryFunctionArn",
        "IngestFunctionName",
        "IngestFunctionArn",
        "CondenserFunctionName",
        "CondenserFunctionArn",
        "TableName",
        "IdempotencyTableName",
        "BucketName",
        "QueueName",
        "QueueUrl",
        "DlqName",
    }
    outputs = synth.template["Outputs"]
    assert keys <= outputs.keys()
    assert render(outputs["ApiUrl"]["Value"]).startswith("https://")
    assert outputs["GetMemoryFunctionName"]["Value"] == {"Ref": synth.function_id("get_memory")}
    assert outputs["CondenserFunctionArn"]["Value"] == {"Fn::GetAtt": [synth.function_id("condenser"), "Arn"]}


# ----------------------------------------------------------------------------- cdk-nag acknowledgments


def test_nag_clean_and_acknowledgments_used(synth: Synth) -> None:
    assert_nag_clean(synth)
    assert_acknowledgments_used_and_explained(synth)


def test_acknowledged_rules_are_the_reviewed_ones(synth: Synth) -> None:
    """A new acknowledgment must be reviewed: it changes this list."""
    rules = Counter(re.sub(r"<[^>]+>", "<ref>", rule_id) for _, rule_id, _ in acknowledgments(synth))
    assert rules == {
        "AwsSolutions-L1": 3,  # python3.13, the runtime we compile bytecode for
        "AwsSolutions-IAM5[Resource::*]": 3,  # X-Ray, one per traced function
        "AwsSolutions-IAM5[Resource::<ref>/history/*]": 3,
        "AwsSolutions-IAM5[Resource::<ref>/raw/*]": 2,
        "AwsSolutions-IAM4[Policy::arn:<ref>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]": 1,
        "AwsSolutions-APIG2": 1,  # parameters validated by API Gateway, bodies by the Lambda (422)
        "AwsSolutions-APIG3": 1,  # no WAF: IAM auth + throttling
        "AwsSolutions-COG4": 1,  # IAM auth, not Cognito
    }


def test_reasons_are_specific(synth: Synth) -> None:
    by_reason: dict[str, set[str]] = {}
    for _, rule_id, reason in acknowledgments(synth):
        by_reason.setdefault(reason, set()).add(re.sub(r"\[.*", "", rule_id))
    # A reason may cover the same finding on several constructs, never two different rules.
    assert all(len(rules) == 1 for rules in by_reason.values()), by_reason
    generic = re.compile(r"^(ok|fine|n/?a|not needed|suppress(ed)?|false positive)\.?$", re.IGNORECASE)
    assert not [reason for reason in by_reason if generic.match(reason.strip())]
