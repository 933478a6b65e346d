"""A non-default deployment: Bedrock (inference profile), x86_64, no tracing, destroy, TTL, alarm e-mail."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from tests.infra.helpers import (
    Synth,
    as_list,
    assert_acknowledgments_used_and_explained,
    assert_cfn_lint_clean,
    assert_nag_clean,
    context_with,
    render,
    statements,
    synthesize,
)

MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1:0"


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    context = context_with(
        stage="prod",
        llm_provider="bedrock",
        llm_model=MODEL,
        architecture="x86_64",
        tracing=False,
        removal_policy="destroy",
        memory_ttl_days=90,
        alarm_email="ops@example.com",
        condenser_max_concurrency=5,
        log_retention_days=90,
        throttling_rate_limit=20,
        throttling_burst_limit=40,
    )
    return synthesize(tmp_path_factory.mktemp("cdk-bedrock"), context)


def test_nag_clean_and_acknowledgments_used(synth: Synth) -> None:
    assert_nag_clean(synth)
    assert_acknowledgments_used_and_explained(synth)


def test_cfn_lint(synth: Synth) -> None:
    assert_cfn_lint_clean(synth)


def test_bedrock_permission_scoped_to_the_model(synth: Synth) -> None:
    role = synth.props(synth.function_id("condenser"))["Role"]["Fn::GetAtt"][0]
    bedrock = [
        statement
        for logical_id, statement in statements(synth)
        if any(str(a).startswith("bedrock:") for a in as_list(statement.get("Action", [])))
    ]
    assert len(bedrock) == 1
    (statement,) = bedrock
    assert as_list(statement["Action"]) == ["bedrock:InvokeModel"]
    assert sorted(render(r) for r in statement["Resource"]) == [
        "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/" + MODEL,
        "arn:${AWS::Partition}:bedrock:*::foundation-model/" + MODEL.removeprefix("us."),
    ]
    (policy,) = [
        p for p in synth.of_type("AWS::IAM::Policy").values() if {"Ref": role} in p["Properties"]["Roles"]
    ]
    assert statement in policy["Properties"]["PolicyDocument"]["Statement"]


def test_no_secret_for_bedrock(synth: Synth) -> None:
    variables = synth.props(synth.function_id("condenser"))["Environment"]["Variables"]
    assert variables["MEMORY_LLM_PROVIDER"] == "bedrock" and variables["MEMORY_LLM_MODEL"] == MODEL
    assert "MEMORY_LLM_API_KEY_SECRET" not in variables and "OPENAI_BASE_URL" not in variables
    assert not [s for _, s in statements(synth) if "secretsmanager:GetSecretValue" in as_list(s["Action"])]


def test_architecture_and_tracing_off(synth: Synth) -> None:
    for name in ("get_memory", "ingest", "condenser"):
        props = synth.props(synth.function_id(name))
        assert props["Architectures"] == ["x86_64"]
        assert "TracingConfig" not in props or props["TracingConfig"] == {"Mode": "PassThrough"}
        assert props["Environment"]["Variables"]["MEMORY_TRACING"] == "off"
        assert props["Environment"]["Variables"]["MEMORY_TTL_DAYS"] == "90"
    for layer in synth.of_type("AWS::Lambda::LayerVersion").values():
        assert layer["Properties"]["CompatibleArchitectures"] == ["x86_64"]
    (stage,) = synth.of_type("AWS::ApiGateway::Stage").values()
    assert stage["Properties"]["TracingEnabled"] is False
    assert stage["Properties"]["StageName"] == "prod"
    (settings,) = stage["Properties"]["MethodSettings"]
    assert (settings["ThrottlingRateLimit"], settings["ThrottlingBurstLimit"]) == (20, 40)
    # Without tracing, no statement needs Resource "*".
    assert not [s for _, s in statements(synth) if s["Effect"] == "Allow" and "*" in as_list(s["Resource"])]


def test_x86_64_layer_has_x86_64_binaries(synth: Synth) -> None:
    layer_ids = synth.props(synth.function_id("get_memory"))["Layers"]
    dirs = [synth.asset_dir(synth.props(layer["Ref"])["Content"]["S3Key"]) for layer in layer_ids]
    binaries = [p.name for d in dirs for p in (d / "python" / "pydantic_core").glob("*.so")]
    assert binaries and all("x86_64" in name for name in binaries)


def test_destroy_removes_data_with_the_stack(synth: Synth) -> None:
    for resource_type in ("AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::Logs::LogGroup"):
        for logical_id, resource in synth.of_type(resource_type).items():
            assert resource["DeletionPolicy"] == "Delete", logical_id
    for table in synth.of_type("AWS::DynamoDB::Table").values():
        assert not table["Properties"].get("DeletionProtectionEnabled")
    assert len(synth.of_type("Custom::S3AutoDeleteObjects")) == 2  # buckets are emptied first


def test_alarm_email_and_concurrency(synth: Synth) -> None:
    (subscription,) = synth.of_type("AWS::SNS::Subscription").values()
    assert subscription["Properties"]["Protocol"] == "email"
    assert subscription["Properties"]["Endpoint"] == "ops@example.com"
    (mapping,) = synth.of_type("AWS::Lambda::EventSourceMapping").values()
    assert mapping["Properties"]["ScalingConfig"] == {"MaximumConcurrency": 5}
    for log_group in synth.of_type("AWS::Logs::LogGroup").values():
        assert log_group["Properties"]["RetentionInDays"] == 90


# What the Lambda Python runtime ships besides the standard library (/var/runtime).
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six.py")

IMPORT_PROBE = """
import json, sys, time
sys.path[:0] = json.loads(sys.argv[1])
started = time.perf_counter()
import handler
elapsed = time.perf_counter() - started
from hippocampus.settings import load_settings
load_settings()
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"openai", "aws_xray_sdk", "httpx2", "boto3"})
print(json.dumps({"heavy": heavy, "import_s": elapsed}))
"""


@pytest.fixture(scope="module")
def lambda_runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stand-in for /var/runtime: the packages the runtime provides, nothing else."""
    site = Path(boto3.__file__).parent.parent
    runtime = tmp_path_factory.mktemp("var-runtime")
    for name in RUNTIME_PACKAGES:
        (runtime / name).symlink_to(site / name)
    return runtime


@pytest.mark.skipif(platform.machine() != "x86_64", reason="imports the x86_64 layers natively")
@pytest.mark.parametrize("function", ["get_memory", "ingest", "condenser"])
def test_handler_imports_with_only_its_layers(synth: Synth, lambda_runtime: Path, function: str) -> None:
    """The layers are complete: each handler imports with its code, its layers and the runtime's
    packages only (no site-packages), and its environment is valid for the settings model."""
    props = synth.props(synth.function_id(function))
    code = synth.asset_dir(props["Code"]["S3Key"])
    layers = [
        synth.asset_dir(synth.props(layer["Ref"])["Content"]["S3Key"]) / "python" for layer in props["Layers"]
    ]
    environment = {
        key: value if isinstance(value, str) else f"dummy-{key.lower()}"
        for key, value in props["Environment"]["Variables"].items()
    }
    environment |= {
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
        "AWS_LAMBDA_FUNCTION_NAME": props["FunctionName"],
    }
    paths = [str(code), *map(str, layers), str(lambda_runtime)]
    result = subprocess.run(
        [sys.executable, "-S", "-B", "-c", IMPORT_PROBE, json.dumps(paths)],
        env=environment,
        cwd=code,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    if function == "condenser":
        return  # openai is its own layer's business (imported lazily, on the first LLM call)
    assert "openai" not in outcome["heavy"]
    if function == "get_memory":
        assert "aws_xray_sdk" not in outcome["heavy"]
