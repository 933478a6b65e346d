"""Load on the local stack: many users and clients at once, with an instant OpenAI-compatible LLM stub.

Each client takes users from a shared list and, for each, sends its items (`--batch` per request);
after every 202 it polls the memory until the request's last item is readable (freshness). A 429 or
503 is retried after a short backoff (counted as throttled); any other answer is counted and not
retried. Prints, each against a baseline measured in the same run (one client, `--baseline-users`):
- throughput (accepted items per second, until every item is readable);
- lost items: accepted jobs that did not end `completed` (must be 0), and with `--facts N` (N facts
  for every user, sent in one request each before any turn) acknowledged facts missing at the end
  (must be 0);
- 5xx answers and throttled answers;
- freshness p50/p95 (202 -> memory readable);
- peak RSS of the stack's process tree (moto, the API, every execution environment), from /proc,
  against its RSS once started.

Figures only, no assertions: `make bench` runs it. Load goes to 127.0.0.1 only and is bounded in
count (the options) and time (`--max-seconds`). Defaults finish in well under a minute; bigger runs:

    .venv/bin/python -m bench.bench_load --users 500 --items 100 --facts 20 --clients 50 --batch 10 \
        --max-seconds 1800 --durable

`--durable` keeps the stack's state in a data directory (journaled and fsynced, as `make dev`
does by default) instead of in memory.
"""

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import requests

from tests.e2e.e2e_support import Api, LocalStackProcess, marker, stub_reply, stub_stack_environment, unique
from tests.support.openai_stub import OpenAIStub

POLL_S = 0.02
THROTTLE_BACKOFF_S = 0.1
MAX_SEND_ATTEMPTS = 30
VISIBLE_DEADLINE_S = 60.0


@dataclass
class Run:
    accepted_jobs: list[str] = field(default_factory=list)
    freshness_ms: list[float] = field(default_factory=list)
    throttled: int = 0
    server_errors: int = 0
    other_errors: int = 0
    not_visible: int = 0
    lost: int = 0
    facts: dict[str, int] = field(default_factory=dict)  # user → facts acknowledged
    lost_facts: int = 0
    seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def items(self) -> int:
        return len(self.accepted_jobs)


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def tree_rss_bytes(root: int) -> int:
    """RSS of `root` and all its descendants, from /proc (0 where /proc is missing)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir() if Path("/proc").exists() else []:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        pending.extend(children.get(pid, []))
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


class RssSampler:
    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, tree_rss_bytes(self.pid))

    def __enter__(self) -> "RssSampler":
        self.peak = tree_rss_bytes(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def send_facts(url: str, tenant: str, user: str, facts: int, run: Run) -> None:
    """One request of `facts` facts for `user` (the state the turns then run against)."""
    body: dict[str, object] = {
        "items": [{"id": f"f{i}", "text": f"Fact {i}.", "infer": False} for i in range(facts)]
    }
    if send(requests.Session(), url + Api.memory_path(tenant, user), body, run) is not None:
        with run.lock:
            run.facts[user] = facts


def client_loop(
    url: str, tenant: str, users: list[str], shape: tuple[int, int], run: Run, deadline: float
) -> None:
    items, batch = shape
    session, api = requests.Session(), Api(url)
    while time.monotonic() < deadline:
        with run.lock:
            if not users:
                return
            user = users.pop()
        path = Api.memory_path(tenant, user)
        for start in range(0, items, batch):
            words = [marker() for _ in range(min(batch, items - start))]
            body: dict[str, object] = {
                "items": [{"text": f"Turn {start + i}: {word}."} for i, word in enumerate(words)]
            }
            response = send(session, url + path, body, run)
            if response is None or time.monotonic() > deadline:
                continue
            accepted = time.perf_counter()
            with run.lock:
                run.accepted_jobs.extend(job["job_id"] for job in response.json()["jobs"])
            visible = wait_visible(api, tenant, user, words[-1], accepted + VISIBLE_DEADLINE_S)
            with run.lock:
                if visible:
                    run.freshness_ms.append((time.perf_counter() - accepted) * 1000)
                else:
                    run.not_visible += 1


def send(session: requests.Session, url: str, body: dict[str, object], run: Run) -> requests.Response | None:
    for attempt in range(MAX_SEND_ATTEMPTS):
        try:
            response = session.post(url, json=body, timeout=60)
        except requests.RequestException:
            with run.lock:
                run.other_errors += 1
            return None
        if response.status_code == 202:
            return response
        with run.lock:
            if response.status_code in (429, 503):
                run.throttled += 1
            elif response.status_code >= 500:
                run.server_errors += 1
            else:
                run.other_errors += 1
        if response.status_code not in (429, 503):
            return None
        time.sleep(THROTTLE_BACKOFF_S * (1 + attempt % 5))
    return None


def wait_visible(api: Api, tenant: str, user: str, word: str, deadline: float) -> bool:
    while time.perf_counter() < deadline:
        response = api.request("GET", Api.memory_path(tenant, user))
        if response.status_code == 200 and word in (response.json()["memory"] or ""):
            return True
        time.sleep(POLL_S)
    return False


def load(url: str, users: int, shape: tuple[int, int, int], clients: int, max_seconds: float) -> Run:
    """`shape`: items per user, items per request, facts per user (sent to every user first)."""
    items, batch, facts = shape
    run, tenant = Run(), unique("load")
    pending = [unique("user") for _ in range(users)]
    with ThreadPoolExecutor(max_workers=clients) as pool:
        if facts:
            list(pool.map(lambda user: send_facts(url, tenant, user, facts, run), pending))
        deadline = time.monotonic() + max_seconds
        started = time.perf_counter()
        for future in [
            pool.submit(client_loop, url, tenant, pending, (items, batch), run, deadline)
            for _ in range(clients)
        ]:
            future.result()
    run.seconds = time.perf_counter() - started
    print(
        f"  ({users} users: {run.items} items accepted in {run.seconds:.0f} s; checking every job)",
        flush=True,
    )
    run.lost = lost_jobs(Api(url), tenant, run.accepted_jobs)
    api = Api(url)
    run.lost_facts = sum(count - len(api.memory(tenant, user)["facts"]) for user, count in run.facts.items())
    return run


def lost_jobs(api: Api, tenant: str, jobs: list[str]) -> int:
    """Accepted jobs that did not end completed (each given up to VISIBLE_DEADLINE_S more)."""

    def completed(job_id: str) -> bool:
        deadline = time.monotonic() + VISIBLE_DEADLINE_S
        while time.monotonic() < deadline:
            status = api.job(tenant, job_id)["status"]
            if status in {"completed", "failed", "skipped"}:
                return bool(status == "completed")
            time.sleep(0.1)
        return False

    with ThreadPoolExecutor(max_workers=16) as pool:
        return sum(not done for done in pool.map(completed, jobs))


def ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}x" if baseline else "n/a"


def report(label: str, run: Run, base: Run, rss: int, base_rss: int) -> None:
    throughput = run.items / run.seconds if run.seconds else 0.0
    base_throughput = base.items / base.seconds if base.seconds else 0.0
    p50, p95 = statistics.median(run.freshness_ms or [float("nan")]), percentile(run.freshness_ms, 0.95)
    b50, b95 = statistics.median(base.freshness_ms or [float("nan")]), percentile(base.freshness_ms, 0.95)
    lost = run.lost
    print(f"{label}: {run.items} items accepted in {run.seconds:.1f} s")
    print(f"  throughput {throughput:.1f} items/s ({ratio(throughput, base_throughput)} the baseline)")
    print(
        f"  lost items (accepted, not completed): {lost}; not readable within {VISIBLE_DEADLINE_S:.0f} s: "
        f"{run.not_visible}"
    )
    if run.facts:
        print(f"  facts acknowledged: {sum(run.facts.values())}; lost: {run.lost_facts}")
    print(
        f"  5xx answers: {run.server_errors}; throttled (429/503, retried): {run.throttled}; "
        f"other failures: {run.other_errors}"
    )
    print(f"  freshness p50 {p50:.0f} ms ({ratio(p50, b50)}), p95 {p95:.0f} ms ({ratio(p95, b95)})")
    print(f"  peak RSS of the stack {rss / 2**20:.0f} MiB ({ratio(rss, base_rss)} its RSS once started)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_load", description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=40, help="users of the load run (default 40)")
    parser.add_argument("--items", type=int, default=5, help="items per user (default 5)")
    parser.add_argument("--clients", type=int, default=20, help="concurrent clients (default 20)")
    parser.add_argument("--batch", type=int, default=1, help="items per request (default 1)")
    parser.add_argument("--concurrency", type=int, default=4, help="the stack's --concurrency (default 4)")
    parser.add_argument("--baseline-users", type=int, default=4, help="users of the one-client baseline")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="bound of each run (default 60)")
    parser.add_argument("--facts", type=int, default=0, help="facts per user, before its turns (default 0)")
    parser.add_argument("--durable", action="store_true", help="state in a data directory, not in memory")
    args = parser.parse_args(argv)
    with OpenAIStub(stub_reply) as stub, tempfile.TemporaryDirectory() as tmp:
        data_dir = {"MEMORY_LOCAL_DATA_DIR": str(Path(tmp) / "state")} if args.durable else {}
        # The stub LLM keeps every marker it is shown: the summary must have room for all of a user's.
        max_words = {"MEMORY_MAX_WORDS": str(min(2000, max(50, args.items + 20)))}
        environment = stub_stack_environment(stub.base_url, **data_dir, **max_words)
        stack = LocalStackProcess(Path(tmp) / "stack.log", environment, concurrency=args.concurrency).start()
        try:
            pid = stack.pid
            started_rss = tree_rss_bytes(pid)
            shape = (args.items, args.batch, args.facts)
            run: Callable[[int, int], Run] = lambda users, clients: load(  # noqa: E731
                stack.url, users, shape, clients, args.max_seconds
            )
            with RssSampler(pid) as base_rss:
                base = run(args.baseline_users, 1)
            with RssSampler(pid) as load_rss:
                heavy = run(args.users, args.clients)
            print(
                f"local stack (--concurrency {args.concurrency}, state {'on disk' if args.durable else 'in memory'}), "
                f"instant LLM stub; {args.facts} facts and {args.items} items per user in requests of {args.batch}"
            )
            report(
                f"baseline, 1 client x {args.baseline_users} users", base, base, base_rss.peak, started_rss
            )
            report(
                f"load, {args.clients} clients x {args.users} users", heavy, base, load_rss.peak, started_rss
            )
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
