"""A moto server for the benchmarks that time handlers in their own processes.

The resources are the deployed ones (`local_stack.aws.provision`, from the CDK app's specs); the
children reach them through boto3's `AWS_ENDPOINT_URL` with dummy credentials, as the local
stack's functions do.
"""

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from local_stack import aws as local_aws
from local_stack.defaults import load as load_defaults

REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def function_environment(endpoint: str, root: Path) -> dict[str, str]:
    """What a function's process sees: the resources on moto at `endpoint`, as Lambda would set."""
    resources = local_aws.provision(endpoint, REGION, load_defaults().config)
    return {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(root),
        "PYTHONDONTWRITEBYTECODE": "1",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": local_aws.DUMMY_ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": local_aws.DUMMY_SECRET_ACCESS_KEY,
        "AWS_EC2_METADATA_DISABLED": "true",
        "MEMORY_TABLE_NAME": resources.table_name,
        "MEMORY_BUCKET_NAME": resources.bucket_name,
        "MEMORY_QUEUE_URL": resources.queue_url,
        "MEMORY_DLQ_URL": resources.dlq_url,
    }


def wait_for(endpoint: str, timeout_s: float = 20) -> None:
    """Until the moto server at `endpoint` answers."""
    import time
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(endpoint + "/moto-api/", timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextlib.contextmanager
def moto_process() -> Iterator[str]:
    """The local stack's moto (with its fixes: one DynamoDB request at a time, queries of one
    partition) in a process of its own, so its CPU is not the benchmark's; its endpoint."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    serve = f"from local_stack.moto_endpoint import MotoEndpoint; import time; MotoEndpoint({port}).start(); time.sleep(1e9)"
    server = subprocess.Popen(
        [sys.executable, "-c", serve],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(endpoint)
        yield endpoint
    finally:
        server.terminate()
        server.wait(10)


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Send the handlers' log lines and EMF blobs to /dev/null (Lambda ships them off-process)."""
    saved = os.dup(1)
    with Path(os.devnull).open("w") as devnull:
        os.dup2(devnull.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]
