"""The client's own cost (client/README.md): what `MemoryClient` adds to a request, and how fast
its background writer sends.

One process; a threaded HTTP server on 127.0.0.1 answers like the API (a memory body for
`GET …/memory`, 202 with a job for `POST …/memory`) in microseconds, so what is measured is the
client, not the service. Interleaved, in the same run:
- baseline: a raw `httpx2.Client` GET of the memory, the JSON decoded;
- `memory.get_full(user)` (the typed `Memory`) and `memory.get(user)` (the summary);
- writes: `add()`'s own time (it returns at once), then the background writer draining N adds
  of one user (merged into requests of 100 items), against N raw sequential POSTs of the bodies;
- the burst: 5,000 `add()`s across 50 users in a fresh interpreter that then exits normally,
  timed from the last `add` to the end of the process (the exit flush; client/README.md,
  "The background writer"). With `--endpoint URL` (e.g. `make dev`'s http://127.0.0.1:3000) only
  the burst runs, against that service, as facts of a new tenant.

Figures only, no assertions: `make bench` runs it.
"""

import argparse
import json
import secrets
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2

from bench.moto_server import percentile
from hippocampus_client import MemoryClient
from tests.support.client_burst import run_burst

ROUNDS, WARMUP, WRITES = 400, 40, 1_000
MEMORY = {
    "tenant_id": "acme",
    "user_id": "alice",
    "memory": "Alice sells handmade candles on Shopify and ships to Canada.",
    "version": 3,
    "word_count": 10,
    "facts": [
        {
            "id": f"fact_{n}",
            "text": f"Fact {n} about the shop.",
            "metadata": {},
            "updated_at": "2026-01-01T00:00:00Z",
        }
        for n in range(20)
    ],
}
JOBS = {
    "jobs": [{"job_id": "job-1", "tenant_id": "acme", "user_id": "alice", "item_id": "i", "status": "queued"}]
}


class Answers(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as API Gateway
    # Headers and body in one segment, as API Gateway sends them: unbuffered, the body would wait
    # for the client's delayed ACK of the headers (Nagle), 40 ms a response.
    wbufsize = 64 * 1024
    posts = items = 0

    def do_GET(self) -> None:
        self._answer(200, MEMORY, {"ETag": '"3"'})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        type(self).posts += 1
        type(self).items += len(body["items"])
        self._answer(202, JOBS, {})

    def _answer(self, status: int, body: Any, headers: dict[str, str]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: Any) -> None:
        pass


@contextmanager
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def timed(run: Callable[[], Any]) -> float:
    started = time.perf_counter()
    run()
    return (time.perf_counter() - started) * 1000


def reads(url: str) -> dict[str, list[float]]:
    path = url + "/v1/tenants/acme/users/alice/memory"
    with httpx2.Client(timeout=3.0) as raw, MemoryClient(endpoint=url, tenant="acme") as memory:
        cases: dict[str, Callable[[], Any]] = {
            "baseline: raw httpx2 GET + json": lambda: raw.get(path).json(),
            "memory.get_full(user)": lambda: memory.get_full("alice"),
            "memory.get(user)": lambda: memory.get("alice"),
        }
        timings: dict[str, list[float]] = {label: [] for label in cases}
        for round_ in range(WARMUP + ROUNDS):
            for label, run in cases.items():
                elapsed = timed(run)
                if round_ >= WARMUP:
                    timings[label].append(elapsed)
    return timings


def writes(url: str) -> tuple[float, float, float]:
    """add()'s own µs, the writer's items/s, raw sequential POSTs' items/s."""
    texts = [f"User: turn {n} about candles.\nAssistant: Noted." for n in range(WRITES)]
    memory = MemoryClient(endpoint=url, tenant="acme", max_queue=WRITES)
    started = time.perf_counter()
    for text in texts:
        memory.add("alice", text)
    submitted = time.perf_counter()
    memory.flush(60)
    drained = time.perf_counter()
    memory.close()
    path = url + "/v1/tenants/acme/users/alice/memory"
    with httpx2.Client(timeout=10.0) as raw:
        raw_started = time.perf_counter()
        for text in texts:
            raw.post(path, json={"items": [{"text": text}]})
        raw_done = time.perf_counter()
    return (
        (submitted - started) / WRITES * 1e6,
        WRITES / (drained - started),
        WRITES / (raw_done - raw_started),
    )


BURST_USERS, BURST_PER_USER = 50, 100


def burst(url: str, exit_timeout: float) -> tuple[float, str]:
    """The exit flush's seconds after 5,000 adds, and what the process logged (unsent, failed)."""
    tenant = f"bench-{secrets.token_hex(4)}"
    done = run_burst(url, tenant, BURST_USERS, BURST_PER_USER, exit_timeout)
    warnings = [line for line in done.stderr.splitlines() if "unsent" in line or "failed" in line]
    return done.exit_s, "; ".join(warnings) or "nothing unsent or failed"


def print_burst(url: str, exit_timeout: float, against: str) -> None:
    posts_before, items_before = Answers.posts, Answers.items
    seconds, outcome = burst(url, exit_timeout)
    total = BURST_USERS * BURST_PER_USER
    print(f"burst: {total:,} adds across {BURST_USERS} users, then exit, against {against}:")
    print(f"  exit flush {seconds:.2f} s (exit_timeout {exit_timeout:.0f} s); {outcome}")
    if Answers.posts > posts_before:
        print(
            f"  server saw {Answers.items - items_before:,} items in {Answers.posts - posts_before} requests"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", help="run the burst only, against this service")
    parser.add_argument("--exit-timeout", type=float, default=10.0)
    options = parser.parse_args()
    if options.endpoint:
        print_burst(options.endpoint, options.exit_timeout, options.endpoint)
        return
    with server() as url:
        timings = reads(url)
        add_us, writer_rate, raw_rate = writes(url)
        sent, received = Answers.posts, Answers.items
        print_figures(timings, add_us, writer_rate, raw_rate, (sent, received))
        print_burst(url, options.exit_timeout, "a server answering in microseconds")


def print_figures(
    timings: dict[str, list[float]], add_us: float, writer_rate: float, raw_rate: float, seen: tuple[int, int]
) -> None:
    base = timings["baseline: raw httpx2 GET + json"]
    base_p50, base_p95 = statistics.median(base), percentile(base, 0.95)
    print(f"client overhead, {ROUNDS} rounds interleaved, a 127.0.0.1 server answering in microseconds")
    print(f"{'':34s} {'p50':>8s} {'p95':>8s}   ratio p50 / p95")
    for label, values in timings.items():
        p50, p95 = statistics.median(values), percentile(values, 0.95)
        print(f"{label:34s} {p50:6.2f}ms {p95:6.2f}ms   {p50 / base_p50:5.2f}x / {p95 / base_p95:5.2f}x")
    print(f"add() returns in {add_us:.0f} µs; {WRITES} adds drained by the background writer at")
    print(
        f"{writer_rate:,.0f} items/s vs {raw_rate:,.0f} raw sequential POSTs/s ({writer_rate / raw_rate:.2f}x);"
    )
    posts, items = seen
    print(f"server saw {items} items in {posts} POSTs for {2 * WRITES} sent (nothing lost)")


if __name__ == "__main__":
    main()
