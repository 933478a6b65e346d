"""Freshness and coalescing on the local stack, with an instant OpenAI-compatible LLM (the test stub).

Prints:
- end-to-end freshness: from an ingest's 202 to the new memory being readable, p50 and p95
  over a conversation of 30 turns for one user (each turn sent once the previous one is visible);
- LLM calls per item for a burst of 20 items to one user, sent as one request and as 20
  concurrent requests (target <= 0.2; Hippocampus makes one call per turn).

Figures only, no assertions: `make bench` runs it.
"""

import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.e2e.e2e_support import (
    MARKER,
    Api,
    LocalStackProcess,
    marker,
    stub_calls_with,
    stub_reply,
    stub_stack_environment,
    unique,
)
from tests.support.openai_stub import OpenAIStub

TURNS = 30
BURST = 20
POLL_S = 0.005


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def freshness(api: Api, tenant: str) -> list[float]:
    user = unique("fresh")
    latencies = []
    for turn in range(TURNS):
        word = marker()
        api.ingest(tenant, user, [{"text": f"Turn {turn}: {word}."}])
        accepted = time.perf_counter()
        deadline = accepted + 30
        while word not in (api.memory(tenant, user)["memory"] or ""):
            if time.perf_counter() > deadline:
                raise RuntimeError(f"turn {turn} not visible after 30 s")
            time.sleep(POLL_S)
        latencies.append((time.perf_counter() - accepted) * 1000)
    return latencies


def read_round_trip(api: Api, tenant: str) -> list[float]:
    """Baseline measured in the same run: one GET of a memory through the same stack."""
    user = unique("read")
    timings = []
    for _ in range(TURNS):
        started = time.perf_counter()
        api.memory(tenant, user)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def burst(api: Api, stub: OpenAIStub, tenant: str, one_request: bool) -> tuple[int, int]:
    user = unique("burst")
    words = [marker() for _ in range(BURST)]
    items = [{"text": f"Turn {i}: {word}."} for i, word in enumerate(words)]
    if one_request:
        jobs = api.ingest(tenant, user, items)
    else:
        with ThreadPoolExecutor(max_workers=BURST) as pool:
            jobs = list(pool.map(lambda item: api.ingest(tenant, user, [item])[0], items))
    api.wait_completed(tenant, jobs)
    kept = MARKER.findall(api.memory(tenant, user)["memory"] or "")
    if sorted(kept) != sorted(words) if not one_request else kept != words:
        raise RuntimeError(
            f"the burst lost or reordered items: {len(set(kept) & set(words))} of {BURST} kept"
        )
    return stub_calls_with(stub, *words), api.memory(tenant, user)["version"]


def main() -> None:
    with OpenAIStub(stub_reply) as stub, tempfile.TemporaryDirectory() as tmp:
        environment = stub_stack_environment(stub.base_url)
        stack = LocalStackProcess(Path(tmp) / "stack.log", environment, concurrency=4).start()
        try:
            api = Api(stack.url)
            tenant = unique("bench")
            # Not measured: the condenser's first LLM call (the SDK is imported lazily, as in Lambda).
            api.wait_completed(tenant, api.ingest(tenant, unique("warm"), [{"text": "warm up"}]))
            latencies = freshness(api, tenant)
            reads = read_round_trip(api, tenant)
            print(
                f"local stack, instant LLM stub; {TURNS} turns of one user, each sent once the previous is visible"
            )
            print(
                f"freshness (202 accepted -> memory visible): p50 {statistics.median(latencies):.0f} ms, "
                f"p95 {percentile(latencies, 0.95):.0f} ms, max {max(latencies):.0f} ms"
            )
            print(
                f"baseline, one memory read through the same stack: p50 {statistics.median(reads):.1f} ms -> "
                f"freshness p50 = {statistics.median(latencies) / statistics.median(reads):.1f}x a read"
            )
            for label, one_request in (
                ("one request of 20 items", True),
                (f"{BURST} concurrent requests of 1 item", False),
            ):
                calls, versions = burst(api, stub, tenant, one_request)
                print(
                    f"burst of {BURST} items to one user, {label}: {calls} LLM calls, "
                    f"{calls / BURST:.2f} calls per item (target <= 0.2; baseline one call per turn = 1.00, "
                    f"so {calls / BURST:.2f}x), {versions} memory versions"
                )
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
