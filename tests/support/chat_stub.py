"""A small OpenAI-compatible chat server on 127.0.0.1 that also streams (`"stream": true` as SSE).

tests/support/openai_stub.py answers JSON only; `with_memory` (client/README.md) must also be
tested with the SDK's streams, so this one answers both, recording every request body:

    with ChatStub(reply="Hello there, Alice!") as model:
        client = OpenAI(api_key="k", base_url=model.base_url, max_retries=0)
        model.fail_with(500)          # every request fails, until fail_with(None)
        model.requests[-1]["messages"]

A streamed answer is `reply` in `pieces` chunks (a role chunk first, a finish chunk last, then
`[DONE]`), as the OpenAI API sends it; `reply` may also be a function of the request body.
"""

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = str | Callable[[dict[str, Any]], str]


def split(text: str, pieces: int) -> list[str]:
    """`text` in `pieces` consecutive parts (fewer for a short text), joined back to `text`."""
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class ChatStub:
    def __init__(self, reply: Reply = "Hello from the stub model.", *, pieces: int = 4) -> None:
        self.reply = reply
        self.pieces = pieces
        self.fail_status: int | None = None
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "ChatStub":
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail_with(self, status: int | None) -> None:
        self.fail_status = status

    @property
    def last_messages(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.requests[-1]["messages"])

    def answer_for(self, body: dict[str, Any]) -> str:
        return self.reply if isinstance(self.reply, str) else self.reply(body)

    def _record(self, body: dict[str, Any]) -> int:
        with self._lock:
            self.requests.append(body)
            return len(self.requests)

    @staticmethod
    def completion(body: dict[str, Any], text: str, number: int) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "stub"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
        }

    @staticmethod
    def chunk(body: dict[str, Any], number: int, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def events(self, body: dict[str, Any], text: str, number: int) -> list[dict[str, Any]]:
        deltas = [{"role": "assistant", "content": ""}] + [
            {"content": part} for part in split(text, self.pieces)
        ]
        chunks = [self.chunk(body, number, delta, None) for delta in deltas]
        return [*chunks, self.chunk(body, number, {}, "stop")]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0: a streamed answer ends when the connection closes, as SSE allows.
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": "no route", "type": "not_found"}})
                    return
                number = stub._record(body)
                if stub.fail_status is not None:
                    self._json(
                        stub.fail_status, {"error": {"message": "stub failure", "type": "server_error"}}
                    )
                    return
                text = stub.answer_for(body)
                if body.get("stream"):
                    self._stream(stub.events(body, text, number))
                else:
                    self._json(200, stub.completion(body, text, number))

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, events: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    for event in events:
                        self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client closed the stream early

            def log_message(self, *args: object) -> None:
                pass

        return Handler
