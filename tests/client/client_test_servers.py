"""Helpers of the client's tests: fake answers (httpx2.MockTransport) and tiny 127.0.0.1 servers."""

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
import pytest

from hippocampus_client import AsyncMemoryClient, HttpTransport, MemoryClient, programs, sync_client

Handler = Callable[[httpx2.Request], httpx2.Response]


def envelope(code: str, status: int, message: str = "refused") -> dict[str, Any]:
    """The error envelope of docs/api.md "Errors"."""
    return {"error": {"code": code, "message": message, "status": status, "details": []}}


def memory_body(memory: str | None = "Alice sells candles.", version: int = 1) -> dict[str, Any]:
    return {"tenant_id": "acme", "user_id": "alice", "memory": memory, "version": version, "facts": []}


def job_body(job_id: str = "job-1", status: str = "queued") -> dict[str, Any]:
    return {"job_id": job_id, "tenant_id": "acme", "user_id": "alice", "item_id": "i", "status": status}


class FakeClock:
    """The clock of `wait` without waiting: its deadline reads `monotonic()`, and its pauses between
    polls (`MemoryClient`'s) move the clock on at once, so a test of a long wait takes no time."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """A `FakeClock` in place of the `time` of programs.py (deadlines) and sync_client.py (pauses)."""
    clock = FakeClock()
    monkeypatch.setattr(programs, "time", clock)
    monkeypatch.setattr(sync_client, "time", clock)
    return clock


# The error of a `deferred` job (docs/api.md "Jobs").
BUDGET_SPENT = {
    "code": "token_budget_exhausted",
    "message": "the tenant's daily token budget is spent: condensed after it resets (00:00 UTC)",
}


def deferred_job_body(job_id: str = "job-1") -> dict[str, Any]:
    """A job its tenant's spent token budget holds."""
    return job_body(job_id, "deferred") | {"error": BUDGET_SPENT}


def usage_body(tenant: str = "acme", budget: int | None = None, **counts: int) -> dict[str, Any]:
    """`GET /v1/tenants/{tenant}/usage` (docs/api.md "Usage") on 2026-12-05."""
    numbers = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "deferred_jobs": 0} | counts
    tokens = numbers["prompt_tokens"] + numbers["completion_tokens"]
    return {
        "tenant_id": tenant, "day": "2026-12-05", **numbers, "tokens": tokens, "budget": budget,
        "remaining": None if budget is None else max(0, budget - tokens), "resets_at": "2026-12-06T00:00:00Z",
    }  # fmt: skip


class Recorder:
    """Answers from a list (the last one repeats) and records each request."""

    def __init__(self, *answers: httpx2.Response) -> None:
        self.answers = list(answers)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def bodies(self) -> list[Any]:
        return [json.loads(request.content) if request.content else None for request in self.requests]

    def queries(self) -> list[dict[str, str]]:
        return [dict(request.url.params) for request in self.requests]


def mocked(handler: Handler, **options: Any) -> MemoryClient:
    transport = HttpTransport("http://hippocampus.test", transport=httpx2.MockTransport(handler))
    return MemoryClient(tenant="acme", transport=transport, **options)


def mocked_async(handler: Handler, **options: Any) -> AsyncMemoryClient:
    transport = HttpTransport("http://hippocampus.test", transport=httpx2.MockTransport(handler))
    return AsyncMemoryClient(tenant="acme", transport=transport, **options)


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class HangingServer:
    """Accepts connections and never answers (a stuck load balancer, a frozen process)."""

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._connections: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self._connections.append(connection)

    def __enter__(self) -> "HangingServer":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._socket.close()
        for connection in self._connections:
            connection.close()


Answer = tuple[int, dict[str, str], bytes]


class RecordingServer:
    """A threaded HTTP server on 127.0.0.1: `answer(method, path, body)` gives each answer."""

    def __init__(self, answer: Callable[[str, str, bytes], Answer]) -> None:
        self.requests: list[tuple[str, str, bytes]] = []
        server = self

        class _Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.requests.append((self.command, self.path, body))
                status, headers, content = answer(self.command, self.path, body)
                self.send_response(status)
                for name, value in (headers | {"Content-Length": str(len(content))}).items():
                    self.send_header(name, value)
                self.end_headers()
                # A client that gave up (a timeout test) has closed its end: nothing to answer.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(content)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "RecordingServer":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def json_answer(status: int, body: Any) -> Answer:
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()
