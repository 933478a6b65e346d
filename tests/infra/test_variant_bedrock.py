"""A non-default deployment: Bedrock (inference profile), x86_64, no tracing, destroy, TTL, alarm e-mail."""

from __future__ import annotations

import json
import platform
import subprocess
from pathlib import Path

import boto3
import pytest

from hippocampus.api.openapi import openapi_document
from infra.assets import find_runtime_python
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

EVENTS = Path(__file__).resolve().parents[2] / "events"
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
import importlib.util, json, sys, time
sys.path[:0] = json.loads(sys.argv[1])
function = sys.argv[2]
started = time.perf_counter()
import handler
elapsed = time.perf_counter() - started
from hippocampus import wiring as runtime
from hippocampus.adapters.tracing import make_tracing
from hippocampus.settings import load_settings
settings = load_settings()
HEAVY = {"openai", "aws_xray_sdk", "httpx2", "boto3"}
heavy = sorted({m.split(".")[0] for m in sys.modules} & HEAVY)
# The function's services, as its first request builds them (adapters stay lazy).
{"get_memory": runtime.read_service, "ingest": runtime.idempotent_ingest,
 "condenser": runtime.consolidation_service}[function]()
heavy_after_services = sorted({m.split(".")[0] for m in sys.modules} & HEAVY)
xray_sdk = None
if settings.tracing_mode == "xray" and importlib.util.find_spec("aws_xray_sdk") is not None:
    with make_tracing("xray").span("probe", probe="layers"):  # loads the SDK, as the first span does
        pass
    xray_sdk = sys.modules["aws_xray_sdk"].__file__
served = {}
if function == "get_memory":  # Powertools' resolver, validation and OpenAPI generation, from bytecode
    class Context:
        function_name, memory_limit_in_mb, aws_request_id = "probe", 1024, "probe-request"
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:probe"
    for event in json.loads(sys.argv[3]):
        response = handler.lambda_handler(event, Context())
        served[event["path"]] = [response["statusCode"], json.loads(response["body"])]
openai_client = None
if function == "condenser":
    import openai  # from the bytecode-only llm layer; the condenser imports it on its first LLM call
    openai_client = type(openai.OpenAI(api_key="probe", base_url="https://llm.invalid/v1")).__name__
print(json.dumps({"heavy": heavy, "heavy_after_services": heavy_after_services, "import_s": elapsed,
                  "tracing": settings.tracing_mode, "xray_sdk": xray_sdk, "openai_client": openai_client,
                  "served": served}))
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
@pytest.mark.parametrize("tracing", ["deployed", "xray"])
@pytest.mark.parametrize("function", ["get_memory", "ingest", "condenser"])
def test_handler_imports_with_only_its_layers(
    synth: Synth, lambda_runtime: Path, function: str, tracing: str
) -> None:
    """The layers are complete: each handler imports with its code, its layers and the runtime's
    packages only (no site-packages), under python3.13, and its environment is valid for the settings
    model. This deployment has tracing off; "xray" runs the same functions as a traced deployment
    would (MEMORY_TRACING=xray, in a traced invocation): ingest and condenser load the X-Ray SDK
    from their xray layer on the first span, get_memory neither loads nor carries it."""
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
        "LAMBDA_TASK_ROOT": str(code),
    }
    if tracing == "xray":
        environment |= {
            "MEMORY_TRACING": "xray",
            "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
            "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:9",  # segments are sent over UDP: nothing listens
        }
    paths = [str(code), *map(str, layers), str(lambda_runtime)]
    events = [
        json.loads((EVENTS / name).read_text()) for name in ("api_get_health.json", "api_get_openapi.json")
    ]
    result = subprocess.run(
        [
            find_runtime_python(),
            "-S",
            "-B",
            "-c",
            IMPORT_PROBE,
            json.dumps(paths),
            function,
            json.dumps(events),
        ],
        env=environment,
        cwd=code,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["tracing"] == ("xray" if tracing == "xray" else "off")
    # Neither the handler's import nor its services load the X-Ray SDK or openai: both are lazy.
    assert not {"openai", "aws_xray_sdk"} & set(outcome["heavy_after_services"]), outcome
    if function == "get_memory":
        assert outcome["xray_sdk"] is None  # not in its layers at all
        assert outcome["served"]["/v1/health"][0] == 200
        # The same document as the one generated from the sources of every package.
        assert outcome["served"]["/v1/openapi.json"] == [200, openapi_document()]
    elif tracing == "xray":
        xray_layer = next(str(layer) for layer in layers if (layer / "aws_xray_sdk").is_dir())
        assert outcome["xray_sdk"].startswith(xray_layer + "/"), outcome
    if function == "condenser":
        assert outcome["openai_client"] == "OpenAI"
