"""Warm read overhead: the get_memory handler per request against a raw DynamoDB read.

One process, one moto server (its own process on 127.0.0.1), one user with a memory and FACTS
facts. Interleaved, so both see the same machine:
- baseline: a raw boto3 `Query` of the user's partition (what the handler reads), strongly
  consistent, on a client with the handler's own configuration;
- get_memory: the handler answering `GET …/memory` (API Gateway event → 200 with the JSON body),
  and the direct-invoke action `get_memory`.

Prints p50 and p95 of each and their ratio to the baseline (target <= 1.2x, README "Performance").
Figures only, no assertions: `make bench` runs it.
"""

import os
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.moto_server import function_environment, moto_process, percentile, quiet_stdout
from hippocampus.adapters.dynamodb_table import user_pk

ROOT = Path(__file__).resolve().parent.parent
TENANT, USER = "acme", "warm-reader"
FACTS = 20
ROUNDS = 400
WARMUP = 30


def seed(call: Callable[..., Any]) -> None:
    from tests.support.lambda_harness import api_event  # the events API Gateway sends

    base = f"/v1/tenants/{TENANT}/users/{USER}/memory"
    put = call("ingest", api_event("PUT", base, {"memory": "Runs a candle shop.", "expected_version": 0}))
    facts = [
        {"id": f"fact_{n}", "text": f"Fact number {n} about the shop.", "infer": False} for n in range(FACTS)
    ]
    post = call("ingest", api_event("POST", base, {"items": facts}))
    if put["statusCode"] != 200 or post["statusCode"] != 202:
        raise RuntimeError(f"seeding failed: {put} {post}")


def main() -> None:
    with moto_process() as endpoint:
        environment = function_environment(endpoint, ROOT)
        # This process is the function's execution environment: Lambda's variables, metrics on.
        os.environ.update(environment, POWERTOOLS_METRICS_DISABLED="false")  # noqa: TID251
        measure(endpoint, environment["MEMORY_TABLE_NAME"])


def measure(endpoint: str, table: str) -> None:
    from hippocampus import wiring
    from hippocampus.adapters import aws_clients
    from local_stack.lambda_context import LambdaContext
    from tests.support.lambda_harness import api_event, load_handler

    handlers = {name: load_handler(name) for name in ("get_memory", "ingest")}

    def call(function: str, event: dict[str, Any]) -> Any:
        return handlers[function].lambda_handler(event, LambdaContext())

    with quiet_stdout():
        seed(call)
    client = aws_clients.client("dynamodb")  # the handler's own client and configuration
    get_event = api_event("GET", f"/v1/tenants/{TENANT}/users/{USER}/memory")
    direct_event = {"action": "get_memory", "tenant_id": TENANT, "user_id": USER}

    def raw_query() -> Any:
        return client.query(
            TableName=table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": user_pk(TENANT, USER)}},
            ConsistentRead=True,
        )

    cases: dict[str, Callable[[], Any]] = {
        "baseline: raw Query of the partition": raw_query,
        "get_memory: GET …/memory (API event)": lambda: call("get_memory", get_event),
        "get_memory: direct invoke get_memory": lambda: call("get_memory", direct_event),
    }
    timings: dict[str, list[float]] = {label: [] for label in cases}
    warnings.simplefilter("ignore")  # Powertools warns when a direct read records no metric
    with quiet_stdout():
        for round_ in range(WARMUP + ROUNDS):
            for label, run in cases.items():
                started = time.perf_counter()
                run()
                if round_ >= WARMUP:
                    timings[label].append((time.perf_counter() - started) * 1000)
    assert len(raw_query()["Items"]) == FACTS + 1  # the memory and its facts: the same partition
    wiring.reset()
    base = timings["baseline: raw Query of the partition"]
    base_p50, base_p95 = statistics.median(base), percentile(base, 0.95)
    print(f"warm reads, {ROUNDS} rounds interleaved, one user with {FACTS} facts, moto on {endpoint}")
    print(f"{'':40s} {'p50':>8s} {'p95':>8s}   ratio p50 / p95 (target <= 1.2x)   added p50")
    for label, values in timings.items():
        p50, p95 = statistics.median(values), percentile(values, 0.95)
        ratios = f"{p50 / base_p50:4.2f}x / {p95 / base_p95:4.2f}x"
        print(f"{label:40s} {p50:6.2f}ms {p95:6.2f}ms   {ratios:34s} {p50 - base_p50:+5.2f} ms")


if __name__ == "__main__":
    main()
