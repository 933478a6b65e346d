"""A fast 127.0.0.1 server of `POST …/memory` for the background writer's tests: it keeps the items
of every request it accepts, per user, in the order they arrived, and can refuse requests."""

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from client_test_servers import envelope

Items = list[dict[str, Any]]
# (the request's number, from 1; its user; its items) -> (status, headers) to refuse it, or None to accept.
Refusal = Callable[[int, str, Items], tuple[int, dict[str, str]] | None]


def accept_all(number: int, user: str, items: Items) -> tuple[int, dict[str, str]] | None:
    return None


class IngestServer:
    def __init__(self, refuse: Refusal = accept_all) -> None:
        self.refuse = refuse
        self.accepted: dict[str, Items] = {}  # user -> items, in arrival order
        self.bodies: list[tuple[int, int, int]] = []  # (status, items, bytes) of every request
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as API Gateway
            wbufsize = 64 * 1024  # headers and body in one segment (no delayed-ACK wait)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, headers, answer = server.answer(self.path, body)
                content = json.dumps(answer).encode()
                self.send_response(status)
                for name, value in (headers | {"Content-Type": "application/json"}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, path: str, body: bytes) -> tuple[int, dict[str, str], Any]:
        user = path.split("/users/")[1].split("/")[0]
        items: Items = json.loads(body)["items"]
        with self._lock:
            refusal = self.refuse(len(self.bodies) + 1, user, items)
            status = refusal[0] if refusal else 202
            self.bodies.append((status, len(items), len(body)))
            if refusal:
                return status, refusal[1], envelope("refused", status)
            self.accepted.setdefault(user, []).extend(items)
        jobs = [
            {"job_id": f"job-{n}", "tenant_id": "acme", "user_id": user, "status": "queued"}
            for n, _ in enumerate(items)
        ]
        return 202, {}, {"jobs": jobs}

    def ids(self, user: str) -> list[str]:
        with self._lock:
            return [item.get("id", item.get("text", "")) for item in self.accepted.get(user, [])]

    def __enter__(self) -> "IngestServer":
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
