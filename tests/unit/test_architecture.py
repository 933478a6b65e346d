"""The house rules of docs/architecture.md "Layers", read from the code's own imports (ast).

contracts ← domain ← api ← wiring, adapters ← wiring; no cycle anywhere in the package.
"""

import ast
import graphlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "layers/core/src"
PACKAGE = SRC / "hippocampus"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports_of(path: Path) -> Iterator[tuple[str, ast.AST]]:
    """Every module `path` imports, anywhere in the file (lazy and type-only imports included)."""
    tree = ast.parse(path.read_text())
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                ).strip(".")
            for alias in node.names:
                child = f"{base}.{alias.name}"
                yield (child if child in MODULES else base), node


def internal_imports(name: str) -> set[str]:
    return {target for target, _ in imports_of(MODULES[name]) if target in MODULES and target != name}


def layer_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "package"


def external_roots(name: str) -> set[str]:
    return {target for target, _ in imports_of(MODULES[name]) if not target.startswith("hippocampus")}


FORBIDDEN = {
    "contracts": (
        "hippocampus.domain",
        "hippocampus.api",
        "hippocampus.adapters",
        "hippocampus.wiring",
        "hippocampus.settings",
        "hippocampus.observability",
        "boto3",
        "botocore",
        "aws_lambda_powertools",
    ),
    "domain": (
        "hippocampus.api",
        "hippocampus.adapters",
        "hippocampus.wiring",
        "hippocampus.settings",
        "boto3",
        "botocore",
        "aws_lambda_powertools",
        "os",
    ),
    "api": ("hippocampus.adapters", "hippocampus.wiring", "hippocampus.settings", "boto3"),
    "adapters": ("hippocampus.domain", "hippocampus.api", "hippocampus.wiring"),
    "observability": (
        "hippocampus.domain",
        "hippocampus.api",
        "hippocampus.adapters",
        "hippocampus.wiring",
        "hippocampus.settings",
        "boto3",
        "botocore",
    ),
    "settings": (
        "hippocampus.domain",
        "hippocampus.api",
        "hippocampus.adapters",
        "hippocampus.wiring",
        "boto3",
        "botocore",
    ),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_layer_imports_only_what_its_rules_allow(name):
    forbidden = FORBIDDEN.get(layer_of(name), ())
    offending = sorted(
        target
        for target, _ in imports_of(MODULES[name])
        if any(target == rule or target.startswith(rule + ".") for rule in forbidden)
    )
    assert offending == [], f"{name} ({layer_of(name)}) must not import {offending}"


def test_the_package_has_no_import_cycle():
    graph = {name: internal_imports(name) for name in MODULES}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        pytest.fail("import cycle: " + " -> ".join(reversed(error.args[1])))


def test_only_adapters_import_boto3():
    for name in MODULES:
        if "boto3" in {root.split(".")[0] for root in external_roots(name)}:
            assert layer_of(name) == "adapters", name


# The SDKs the read path must not load: the LLM client, both HTTP stacks (openai 3 is built on
# httpx2, older ones on httpx), X-Ray and OpenTelemetry's SDK.
HEAVY_ROOTS = ("openai", "aws_xray_sdk", "httpx", "httpx2", "opentelemetry")


# A child that imports get_memory's handler as Lambda's init phase does (`module`), in X-Ray mode.
GET_MEMORY_COLD_START = f"""
import json, os, sys
os.environ.update(MEMORY_TABLE_NAME="t", MEMORY_BUCKET_NAME="b", AWS_DEFAULT_REGION="us-east-1",
                  AWS_EXECUTION_ENV="AWS_Lambda_python3.13", MEMORY_TRACING="xray")
import importlib.util
spec = importlib.util.spec_from_file_location("handler", {str(ROOT / "functions/get_memory/handler.py")!r})
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
"""


def test_read_path_import_loads_no_llm_sdk_no_tracing_sdk_and_no_write_routes():
    script = (
        GET_MEMORY_COLD_START
        + f"""
from hippocampus import wiring
wiring.read_service()
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY_ROOTS!r}
               or m in ("hippocampus.api.write_routes", "aws_lambda_powertools.utilities.idempotency"))
print(",".join(heavy))
"""
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_a_memory_read_from_a_cold_start_loads_neither_pydantic_nor_the_resolver():
    # The fast lane's point (docs/architecture.md "The memory read's fast lane"): pydantic and the
    # resolver cost most of get_memory's cold start. The table answers from a stub client.
    script = (
        GET_MEMORY_COLD_START
        + f"""
from hippocampus.adapters import aws_clients
class Stub:
    def query(self, **request): return {{"Items": []}}
aws_clients._clients[("dynamodb", False)] = Stub()
class Context:
    function_name = "get_memory"; memory_limit_in_mb = 1024; aws_request_id = "r"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:get_memory"
event = json.loads(open({str(ROOT / "events/api_get_memory.json")!r}).read())
answer = module.lambda_handler(event, Context())
assert answer["statusCode"] == 200, answer
print("loaded:" + ",".join(sorted(m for m in sys.modules if m.split(".")[0] == "pydantic"
                                  or m.startswith("aws_lambda_powertools.event_handler"))))
"""
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "loaded:"  # after the metrics' log line


def test_recall_import_with_offline_embeddings_loads_no_sdk_no_write_path_and_no_idempotency():
    # The recall function has neither the xray nor (with offline embeddings) the llm layer: its
    # cold start and its first query embedding must not need them, nor anything of the write path.
    script = f"""
import json, os, sys
for name in ("OPENAI_API_KEY", "MEMORY_LLM_API_KEY_SECRET", "MEMORY_EMBEDDING_PROVIDER", "MEMORY_EMBEDDING_MODEL"):
    os.environ.pop(name, None)  # the default provider: offline
os.environ.update(MEMORY_TABLE_NAME="t", MEMORY_BUCKET_NAME="b", AWS_DEFAULT_REGION="us-east-1",
                  AWS_EXECUTION_ENV="AWS_Lambda_python3.13", MEMORY_TRACING="xray")
import importlib.util
spec = importlib.util.spec_from_file_location("handler", {str(ROOT / "functions/recall/handler.py")!r})
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
from hippocampus import wiring
wiring.recall_service()
embedder = wiring.query_embedder()
embedder.embed(["What does Alice sell?"])  # what the first query does before it reads the table
prefixes = ("hippocampus.api.write_routes", "hippocampus.api.idempotency", "hippocampus.api.queue_batch",
            "hippocampus.domain.ingest.service", "hippocampus.domain.condense.consolidation", "hippocampus.adapters.sqs",
            "hippocampus.adapters.llm", "hippocampus.adapters.embeddings.openai_embeddings",
            "hippocampus.adapters.embeddings.bedrock_embeddings",
            "aws_lambda_powertools.utilities.idempotency", "aws_lambda_powertools.utilities.parameters",
            "aws_lambda_powertools.utilities.batch")
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY_ROOTS!r}
               or any(m == prefix or m.startswith(prefix + ".") for prefix in prefixes))
print(json.dumps({{"provider": embedder.provider, "heavy": heavy}}))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == {"provider": "offline", "heavy": []}
