"""The client's own cost (client/README.md): what `MemoryClient` adds to a request, and how fast
its background writer sends.

One process; a threaded HTTP server on 127.0.0.1 answers like the API (a memory body for
`GET …/memory`, 202 with a job for `POST …/memory`) in microseconds, so what is measured is the
client, not the service. Interleaved, in the same run:
- baseline: a raw `httpx2.Client` GET of the memory, the JSON decoded;
- `memory.get_full(user)` (the typed `Memory`) and `memory.get(user)` (the summary);
- writes: `add()`'s own time (it returns at once), then the background writer draining N adds,
  against N raw sequential POSTs of the same bodies.

Figures only, no assertions: `make bench` runs it.
"""

import json
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
    posts = 0

    def do_GET(self) -> None:
        self._answer(200, MEMORY, {"ETag": '"3"'})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).posts += 1
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


def main() -> None:
    with server() as url:
        timings = reads(url)
        add_us, writer_rate, raw_rate = writes(url)
    sent = Answers.posts
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
    print(f"server saw {sent} POSTs for {2 * WRITES} sent (nothing lost)")


if __name__ == "__main__":
    main()
