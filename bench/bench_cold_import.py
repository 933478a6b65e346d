"""Cold-start import cost of each handler, against baselines measured in the same run.

Each figure is the median wall time of a fresh `python -c ...` process over several runs:
- baseline: an empty interpreter, and boto3 alone (what every Lambda pays anyway);
- each handler module imported with its configuration (as Lambda's init phase does);
- what the read path avoids: openai and the X-Ray SDK.

Figures only, no assertions: `make bench` runs it.
"""

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = 7
ENVIRONMENT = {
    "PATH": os.environ.get("PATH", ""),  # noqa: TID251 - the child needs PATH only
    "PYTHONPATH": str(ROOT),
    "AWS_DEFAULT_REGION": "us-east-1",
    "MEMORY_TABLE_NAME": "table",
    "MEMORY_BUCKET_NAME": "bucket",
    "MEMORY_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/q.fifo",
    "MEMORY_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/dlq.fifo",
    "MEMORY_TRACING": "xray",
    "PYTHONDONTWRITEBYTECODE": "1",
}


def handler_import(name: str) -> str:
    path = ROOT / "functions" / name / "handler.py"
    return (
        "import importlib.util as u; "
        f"s = u.spec_from_file_location('handler', {str(path)!r}); m = u.module_from_spec(s); s.loader.exec_module(m)"
    )


CASES = {
    "empty interpreter": "pass",
    "import boto3 (runtime baseline)": "import boto3",
    "get_memory handler": handler_import("get_memory"),
    "ingest handler": handler_import("ingest"),
    "condenser handler": handler_import("condenser"),
    "import openai (avoided on the read path)": "import openai",
    "import aws_xray_sdk (avoided on the read path)": "from aws_xray_sdk.core import xray_recorder",
}


def median_ms(code: str) -> float:
    timings = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=ENVIRONMENT, check=True, capture_output=True)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def main() -> None:
    results = {label: median_ms(code) for label, code in CASES.items()}
    base = results["import boto3 (runtime baseline)"]
    print(f"cold import, median of {RUNS} fresh processes (python {sys.version.split()[0]})")
    for label, ms in results.items():
        print(f"{label:48s} {ms:7.0f} ms   {ms / base:5.2f}x boto3")


if __name__ == "__main__":
    main()
