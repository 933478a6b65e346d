"""The layers are complete: each handler imports and serves with its code, its layers and what the
Lambda runtime provides, nothing else (no site-packages), under python3.13, as deployed on x86_64.

No synth: the folders are the ones the stack stages (`infra.bundling.LambdaAssets.stage`), each
function gets the layers of its spec, and the environment `infra.specs.function_environments` deploys.
"""

from __future__ import annotations

import json
import platform
import subprocess
from collections.abc import Callable
from pathlib import Path

import boto3
import pytest

from hippocampus.api.openapi import openapi_document
from infra.config import load_config
from infra.specs import FUNCTION_SPECS, ResourceNames, function_environments
from tools.assets import find_runtime_python

EVENTS = Path(__file__).resolve().parents[2] / "events"
# A deployment without tracing, on Bedrock, with a memory TTL (every optional variable is set).
CONFIG = load_config(
    {
        "hippocampus": {
            "tracing": False,
            "architecture": "x86_64",
            "llm_provider": "bedrock",
            "memory_ttl_days": 90,
        }
    }
)
# recall carries the openai SDK (layer "llm") only when the embeddings are OpenAI's: the same
# deployment with those, for the case "recall-openai".
OPENAI_EMBEDDINGS = CONFIG.model_copy(update={"embedding_provider": "openai"})
# ... and the offline model (layer "embeddings") only when the embeddings are offline: "recall-offline".
OFFLINE_EMBEDDINGS = CONFIG.model_copy(update={"embedding_provider": "offline"})
# With `pii: mask` and the pattern detector, the masking functions load it from their layers: ingest
# from "pii", the condenser (offline embeddings, so six layers otherwise) from "embeddings-pii".
PII_MASKING = OFFLINE_EMBEDDINGS.model_copy(update={"pii": "mask"})
CASES = {
    "recall-openai": ("recall", OPENAI_EMBEDDINGS),
    "recall-offline": ("recall", OFFLINE_EMBEDDINGS),
    "ingest-pii": ("ingest", PII_MASKING),
    "condenser-pii": ("condenser", PII_MASKING),
}
PII_PROBE_TEXT = "Write to ann@example.com or call +1 415 555 0100, IBAN GB82 WEST 1234 5698 7654 32."
RESOURCES = ResourceNames(
    table="dummy-table", bucket="dummy-bucket", queue_url="https://q", dlq_url="https://dlq"
)

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
 "condenser": runtime.consolidation_service, "recall": runtime.recall_service}[function]()
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
offline_model = None
if function in ("recall", "condenser") and settings.embedder == "offline":  # from the embeddings layer alone
    from hippocampus.adapters.embeddings import offline
    vector = runtime.query_embedder().embed(["How should I contact him?"])[0]
    offline_model = {"dimensions": len(vector), "folder": str(offline.model_folder()),
                     "tokenizers": sys.modules["tokenizers"].__file__}
pii = None
if settings.pii == "mask":  # the services built the detector: its libraries come from a layer
    from hippocampus.adapters.pii.factory import make_pii_detector
    spans = make_pii_detector(settings.pii_detector).detect(sys.argv[4])
    pii = {"kinds": [span.kind for span in spans], "phonenumbers": sys.modules["phonenumbers"].__file__,
           "stdnum": sys.modules["stdnum"].__file__}
openai_client = None
if importlib.util.find_spec("openai") is not None:  # only in the llm layer: condenser, recall-openai
    import openai  # from the bytecode-only llm layer; imported on the first LLM or embedding call
    openai_client = type(openai.OpenAI(api_key="probe", base_url="https://llm.invalid/v1")).__name__
print(json.dumps({"heavy": heavy, "heavy_after_services": heavy_after_services, "import_s": elapsed,
                  "tracing": settings.tracing_mode, "xray_sdk": xray_sdk, "openai_client": openai_client,
                  "offline_model": offline_model, "served": served, "pii": pii}))
"""


@pytest.fixture(scope="module")
def assets(staged_assets: Callable[[str], dict[str, Path]]) -> dict[str, Path]:
    return staged_assets("x86_64")


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
@pytest.mark.parametrize(
    "case",
    [
        "get_memory",
        "ingest",
        "condenser",
        "recall",
        "recall-openai",
        "recall-offline",
        "ingest-pii",
        "condenser-pii",
    ],
)
def test_handler_imports_with_only_its_layers(
    assets: dict[str, Path], lambda_runtime: Path, case: str, tracing: str
) -> None:
    """Each handler imports with its code, its layers and the runtime's packages only, and its
    environment is valid for the settings model. This deployment has tracing off; "xray" runs the
    same functions as a traced deployment would (MEMORY_TRACING=xray, in a traced invocation):
    ingest and condenser load the X-Ray SDK from their xray layer on the first span, get_memory
    and recall neither load nor carry it."""
    function, config = CASES.get(case, (case, CONFIG))
    (spec,) = [spec for spec in FUNCTION_SPECS if spec.name == function]
    code = assets[f"code:{function}"]
    layers = [assets[f"layer:{name}"] / "python" for name in spec.layers_for(config)]
    environment = function_environments(config, RESOURCES)[spec.name] | {
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
        "AWS_LAMBDA_FUNCTION_NAME": f"{config.name_prefix}-{function.replace('_', '-')}",
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
            PII_PROBE_TEXT,
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
    if function in ("get_memory", "recall"):
        assert outcome["xray_sdk"] is None  # not in its layers at all
    if function == "get_memory":
        assert outcome["served"]["/v1/health"][0] == 200
        # The same document as the one generated from the sources of every package.
        assert outcome["served"]["/v1/openapi.json"] == [200, openapi_document()]
    elif tracing == "xray" and function != "recall":
        xray_layer = next(str(layer) for layer in layers if (layer / "aws_xray_sdk").is_dir())
        assert outcome["xray_sdk"].startswith(xray_layer + "/"), outcome
    # The offline model embeds from the embeddings layer: its two files and the tokenizers library.
    if case.endswith("-pii"):
        (detector_layer,) = [str(layer) for layer in layers if (layer / "phonenumbers").is_dir()]
        assert outcome["pii"] == {
            "kinds": ["EMAIL", "PHONE", "IBAN"],
            "phonenumbers": detector_layer + "/phonenumbers/__init__.pyc",
            "stdnum": detector_layer + "/stdnum/__init__.pyc",
        }
    else:
        assert outcome["pii"] is None
    if case in ("recall-offline", "condenser-pii"):  # from "embeddings", or "embeddings-pii"
        (embeddings_layer,) = [str(layer) for layer in layers if (layer / "wordllama").is_dir()]
        assert outcome["offline_model"] == {
            "dimensions": 256,
            "folder": embeddings_layer + "/wordllama",
            "tokenizers": embeddings_layer + "/tokenizers/__init__.pyc",
        }
    else:
        assert outcome["offline_model"] is None
    # The SDK comes from the llm layer, which only the condenser and recall-openai carry.
    assert outcome["openai_client"] == (
        "OpenAI" if case in ("condenser", "condenser-pii", "recall-openai") else None
    )
