"""Structural promises: thin handlers, boto3 only in adapters, a light read path."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers/core/python/hippocampus"
ADAPTERS = {PACKAGE / "adapters", PACKAGE / "llm"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_only_adapters_import_boto3():
    offenders = [
        path.relative_to(ROOT)
        for path in [*PACKAGE.rglob("*.py"), *(ROOT / "functions").rglob("*.py")]
        if "boto3" in imported_modules(path) and not any(adapter in path.parents for adapter in ADAPTERS)
    ]
    assert offenders == []


def test_handlers_stay_thin():
    for handler in (ROOT / "functions").glob("*/handler.py"):
        assert len(handler.read_text().splitlines()) <= 60, handler


def test_read_path_import_loads_neither_openai_nor_xray_sdk():
    script = f"""
import sys, os
sys.path[:0] = [{str(PACKAGE.parent)!r}]
os.environ.update(MEMORY_TABLE_NAME="t", MEMORY_BUCKET_NAME="b", AWS_DEFAULT_REGION="us-east-1",
                  AWS_EXECUTION_ENV="AWS_Lambda_python3.13", MEMORY_TRACING="xray")
import importlib.util
spec = importlib.util.spec_from_file_location("handler", {str(ROOT / "functions/get_memory/handler.py")!r})
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
from hippocampus import runtime
runtime.read_service()
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("openai", "aws_xray_sdk", "httpx"))
print(",".join(heavy))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_runtime_never_reads_os_environ_directly():
    for path in PACKAGE.rglob("*.py"):
        assert "os.environ" not in path.read_text(), path
