"""Twenty writers of one user at once, on the local stack, through the shipped client (issue 17).

Several agents or services writing one user's facts and turns at the same time must not wait for
each other (docs/architecture.md "Fact limits"). Each writer is its own strict `MemoryClient`
(429 and 503 retried as the client does; its circuit breaker off, so that every request is
measured on its own) and sends REQUESTS requests of FACTS facts and TURNS turns, one after the
other. Prints:
- requests acknowledged (202), refused (an API error after the client's retries) and unanswered
  (a transport error or the client's 10 s write budget), and the 429s the stack answered;
- what was applied: facts stored, fact jobs completed, turn jobs completed (waited for, 60 s at
  most); lost = acknowledged and not applied, applied without an answer = stored and never
  acknowledged;
- the latency of a request, p50 and p95, the p95 as a ratio to one writer's alone and to twenty
  writers at once each of its own user (both measured in the same run on the same stack: the
  second is the same load without a shared user), and the absolute p95.

Figures only, no assertions: `make bench` runs it. Bounded: 20 x REQUESTS requests, 127.0.0.1 only.
"""

import re
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocampus_client import MemoryClient
from hippocampus_client.errors import ApiError, HippocampusError
from tests.e2e.e2e_support import Api, LocalStackProcess, stub_reply, stub_stack_environment, unique
from tests.support.openai_stub import OpenAIStub

WRITERS = 20
REQUESTS, FACTS, TURNS = 4, 2, 1
CONCURRENCY = 4  # the ingest function's executions, as `make dev` runs it
TURN_WAIT_S = 60.0
# The local API's access log: `127.0.0.1 "POST /v1/tenants/t/users/u/memory" 202 431 35.2ms`.
INGEST_ANSWER = re.compile(r'"POST /v1/tenants/[^"]+/users/([^"/]+)/memory" (\d{3}) \d+ ([\d.]+)ms')


@dataclass
class Writer:
    """What one writer sent and what it was told."""

    latencies_ms: list[float] = field(default_factory=list)
    facts: set[str] = field(default_factory=set)  # acknowledged
    turn_jobs: list[str] = field(default_factory=list)  # acknowledged
    refused: list[str] = field(default_factory=list)  # the error codes
    unanswered: int = 0


def items_of(writer: int, request: int) -> list[dict[str, Any]]:
    facts = [
        {"id": f"w{writer}-r{request}-f{k}", "text": f"Writer {writer} fact {request}.{k}.", "infer": False}
        for k in range(FACTS)
    ]
    turns = [
        {"id": f"w{writer}-r{request}-t{k}", "text": f"Writer {writer} turn {request}.{k}."}
        for k in range(TURNS)
    ]
    return facts + turns


def write(url: str, tenant: str, user: str, writer: int) -> Writer:
    seen = Writer()
    with MemoryClient(url, tenant, strict=True, breaker_cooldown=0) as client:
        for request in range(REQUESTS):
            started = time.perf_counter()
            try:
                jobs = client.add(user, items_of(writer, request))
            except ApiError as error:
                seen.refused.append(error.code)
                continue
            except HippocampusError:
                seen.unanswered += 1
                continue
            finally:
                seen.latencies_ms.append((time.perf_counter() - started) * 1000)
            assert jobs is not None  # strict: the jobs, or an error
            seen.facts |= {job.item_id or "" for job in jobs if job.status == "completed"}
            seen.turn_jobs += [job.job_id for job in jobs if job.status == "queued"]
    return seen


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def turns_completed(api: Api, tenant: str, job_ids: list[str]) -> int:
    """How many of the turn jobs are completed once none is still queued (or TURN_WAIT_S passed)."""
    deadline = time.monotonic() + TURN_WAIT_S
    statuses: dict[str, str] = {}
    while True:
        for job_id in job_ids:
            if statuses.get(job_id) not in ("completed", "failed", "skipped"):
                response = api.request("GET", f"/v1/tenants/{tenant}/jobs/{job_id}")
                if response.status_code == 200:
                    statuses[job_id] = response.json()["status"]
        done = sum(1 for status in statuses.values() if status == "completed")
        if done == len(job_ids) or time.monotonic() > deadline:
            return done
        time.sleep(0.2)


def run(count: int, work: Callable[[int], Writer]) -> list[Writer]:
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(work, range(count)))


def main() -> None:
    with OpenAIStub(stub_reply) as stub, tempfile.TemporaryDirectory() as tmp:
        environment = stub_stack_environment(stub.base_url)
        stack = LocalStackProcess(Path(tmp) / "stack.log", environment, concurrency=CONCURRENCY).start()
        try:
            api, tenant = Api(stack.url), unique("bench")
            # Not measured: the first invocations of the function (cold starts).
            run(CONCURRENCY, lambda n: write(stack.url, tenant, unique("warm"), n))
            alone = write(stack.url, tenant, unique("alone"), 0)
            for _ in range(4):  # one writer's p95 over 5 x REQUESTS requests
                alone.latencies_ms += write(stack.url, tenant, unique("alone"), 0).latencies_ms
            # The same load on twenty users: what sharing one user costs beyond the load itself.
            apart = run(WRITERS, lambda n: write(stack.url, tenant, unique("apart"), n))
            user = unique("shared")
            writers = run(WRITERS, lambda n: write(stack.url, tenant, user, n))
            log = stack.log_text()
            answers = [(status, float(ms)) for who, status, ms in INGEST_ANSWER.findall(log) if who == user]
            report(api, tenant, user, writers, Baselines(alone, apart), answers)
        finally:
            stack.stop()


@dataclass(frozen=True)
class Baselines:
    alone: Writer  # one writer, nothing else running
    apart: list[Writer]  # twenty writers at once, each of its own user


def report(
    api: Api,
    tenant: str,
    user: str,
    writers: list[Writer],
    baselines: Baselines,
    answers: list[tuple[str, float]],
) -> None:
    """`answers`: the stack's answers to the shared user's POSTs (status, ms), retries included."""
    sent = WRITERS * REQUESTS
    codes = [code for w in writers for code in w.refused]
    refused = len(codes)
    unanswered = sum(w.unanswered for w in writers)
    acknowledged_facts = set().union(*(w.facts for w in writers))
    turn_jobs = [job for w in writers for job in w.turn_jobs]
    stored = {fact["id"] for fact in api.memory(tenant, user)["facts"]}
    completed_turns = turns_completed(api, tenant, turn_jobs)
    latencies = [ms for w in writers for ms in w.latencies_ms]
    alone = baselines.alone
    p95, alone_p95 = percentile(latencies, 0.95), percentile(alone.latencies_ms, 0.95)
    apart_p95 = percentile([ms for w in baselines.apart for ms in w.latencies_ms], 0.95)
    print(
        f"local stack, ingest concurrency {CONCURRENCY}; {WRITERS} writers of one user at once, each "
        f"{REQUESTS} requests of {FACTS} facts and {TURNS} turn through a strict MemoryClient"
    )
    statuses = Counter(status for status, _ in answers)
    served = [ms for status, ms in answers if status == "202"]
    print(
        f"requests: {sent - refused - unanswered} of {sent} acknowledged, {refused} refused "
        f"{dict(Counter(codes))}, {unanswered} unanswered; the stack answered {dict(statuses)} "
        f"(429s retried by the client); a 202 took the stack p50 {statistics.median(served):.0f} ms, "
        f"p95 {percentile(served, 0.95):.0f} ms"
    )
    print(
        f"applied: {len(stored)} facts stored for {len(acknowledged_facts)} acknowledged, "
        f"{completed_turns} of {len(turn_jobs)} acknowledged turns completed; "
        f"lost {len(acknowledged_facts - stored) + len(turn_jobs) - completed_turns}, "
        f"applied without an answer {len(stored - acknowledged_facts)}"
    )
    print(
        f"latency of a request: p50 {statistics.median(latencies):.0f} ms, p95 {p95:.0f} ms "
        f"(target < 1000 ms) = {p95 / alone_p95:.1f}x one writer alone (p95 {alone_p95:.0f} ms, "
        f"p50 {statistics.median(alone.latencies_ms):.0f} ms); {p95 / apart_p95:.2f}x {WRITERS} writers "
        f"at once each of its own user (p95 {apart_p95:.0f} ms): what sharing the user adds"
    )


if __name__ == "__main__":
    main()
