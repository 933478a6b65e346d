"""Freshness and coalescing on the local stack, with an OpenAI-compatible LLM (the test stub).

Prints:
- end-to-end freshness with an instant LLM: from an ingest's 202 to the new memory being
  readable, p50 and p95 over a conversation of 30 turns for one user (each turn sent once the
  previous one is visible), against one memory read through the same stack;
- LLM calls per item for a burst of 20 items to one user, sent as one request and as 20
  concurrent requests, with an instant LLM and with one that takes 1.5 s (target <= 0.2; one
  call per turn would be 1.00);
- LLM calls per item for 100 users x 5 concurrent one-item requests with a 0.5 s LLM
  (target <= 0.3).
Every burst checks that no item was lost (each marker sent is in the user's memory).

Figures only, no assertions: `make bench` runs it.
"""

import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

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
USERS, PER_USER = 100, 5
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


def ingest_retrying(api: Api, tenant: str, user: str, item: dict[str, Any]) -> dict[str, Any]:
    """One item, sent again after a short pause while the stack answers 429 or 503 (throttled)."""
    for attempt in range(50):
        response = api.request("POST", api.memory_path(tenant, user), json={"items": [item]})
        if response.status_code == 202:
            job: dict[str, Any] = response.json()["jobs"][0]
            return job
        if response.status_code not in (429, 503):
            raise RuntimeError(f"{response.status_code}: {response.text}")
        time.sleep(0.05 * (attempt + 1))
    raise RuntimeError("throttled 50 times in a row")


def many_users(api: Api, stub: OpenAIStub, tenant: str) -> int:
    """USERS users, each sending PER_USER one-item requests at once; every marker must be kept."""
    words = {unique("many"): [marker() for _ in range(PER_USER)] for _ in range(USERS)}
    sends = [
        (user, {"text": f"Turn {i}: {word}."}) for user, ws in words.items() for i, word in enumerate(ws)
    ]
    with ThreadPoolExecutor(max_workers=50) as pool:
        jobs = list(pool.map(lambda send: ingest_retrying(api, tenant, *send), sends))
    api.wait_completed(tenant, jobs)
    for user, sent in words.items():
        if sorted(MARKER.findall(api.memory(tenant, user)["memory"] or "")) != sorted(sent):
            raise RuntimeError(f"user {user} lost or duplicated items")
    return stub_calls_with(stub, *(word for ws in words.values() for word in ws))


def print_burst(label: str, calls: int, items: int, versions: int | None, target: float) -> None:
    per_item = calls / items
    kept = f", {versions} memory versions" if versions is not None else ""
    print(
        f"{label}: {calls} LLM calls, {per_item:.2f} calls per item (target <= {target}; one call per "
        f"turn = 1.00, so {per_item:.2f}x){kept}, no item lost"
    )


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
            for delay_s, label, one_request in (
                (0.0, "one request of 20 items, instant LLM", True),
                (0.0, f"{BURST} concurrent requests of 1 item, instant LLM", False),
                (1.5, f"{BURST} concurrent requests of 1 item, 1.5 s LLM", False),
            ):
                stub.delay_s = delay_s
                calls, versions = burst(api, stub, tenant, one_request)
                print_burst(f"burst of {BURST} items to one user, {label}", calls, BURST, versions, 0.2)
            stub.delay_s = 0.5
            calls = many_users(api, stub, tenant)
            label = f"{USERS} users x {PER_USER} concurrent requests of 1 item, 0.5 s LLM"
            print_burst(label, calls, USERS * PER_USER, None, 0.3)
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
