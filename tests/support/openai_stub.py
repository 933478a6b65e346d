"""A local OpenAI-compatible server (POST /v1/chat/completions, /v1/embeddings) for tests driving the SDK.

    with OpenAIStub(reply="Alice sells candles.") as stub:
        client = OpenAI(api_key="k", base_url=stub.base_url)
        stub.fail_with(500)      # every request fails until recover() (or `times` failures)
        stub.script("a", "b")    # the next replies, in order, then the default reply again
        stub.script_body({"choices": []})  # the next reply is exactly this JSON body (a 200)
        stub.delay_s = 2.0       # slow answers, to exercise client timeouts

A request with a JSON schema (structured outputs: `response_format` of type `json_schema`, as the
condenser sends) gets its reply as `{"summary": reply, "operations": []}`, unless the reply is JSON
already: tests script structured answers, with record operations, as JSON text.

Embeddings are deterministic vectors of the requested `dimensions` (1536 without), deliberately not
unit length, as some compatible servers answer (`OpenAIStub.embedding_vector`). They are recorded
(`embedding_requests`), failed (`fail_embeddings_with`) and delayed (`embedding_delay_s`) apart from
the chat completions, so the chat's counts, failures and delay mean what they always meant.

Thread-safe: the server runs in a background thread and serves each request on its own thread.
Run standalone with `python -m tests.support.openai_stub --port 8089`.
"""

import argparse
import base64
import contextlib
import functools
import json
import random
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ReplyFunction = Callable[[dict[str, Any]], str]
COMPLETIONS_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
DEFAULT_EMBEDDING_DIMENSIONS = 1536  # text-embedding-3-small's size when `dimensions` is not sent


@dataclass(frozen=True)
class StubRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def inputs(self) -> list[str]:
        """The texts of an embeddings request."""
        value = self.body.get("input", [])
        return [value] if isinstance(value, str) else list(value)


def structured(body: dict[str, Any], text: str) -> str:
    """A plain reply as the structured answer a request with a JSON schema (`response_format`) gets:
    `{"summary": reply, "operations": []}`; a reply that is JSON already is sent as it is."""
    response_format = body.get("response_format") or {}
    if response_format.get("type") != "json_schema" or text.lstrip().startswith("{"):
        return text
    return json.dumps({"summary": text, "operations": []})


def _words(text: str) -> int:
    return len(text.split())


def _embedding_inputs(value: Any) -> list[str] | None:
    """The texts of an embeddings body (a string or a list of them), or None when it holds none."""
    texts = [value] if isinstance(value, str) else value
    if isinstance(texts, list) and texts and all(isinstance(t, str) and t for t in texts):
        return texts
    return None


class OpenAIStub:
    def __init__(
        self,
        reply: str | ReplyFunction = "stub summary",
        *,
        delay_s: float = 0.0,
        retry_after_ms: int | None = 10,
        port: int = 0,
        context_chars: int | None = None,
    ) -> None:
        # A prompt (every message's content) longer than this is refused as OpenAI refuses a prompt
        # over the model's context: 400 `context_length_exceeded`.
        self.context_chars = context_chars
        self._lock = threading.Lock()
        self._reply: str | ReplyFunction = reply
        self._script: deque[str | dict[str, Any]] = deque()
        self._requests: list[StubRequest] = []
        self._fail_status: int | None = None
        # False: a request with `response_format` gets OpenAI's 400 for a model without structured outputs.
        self.structured_outputs = True
        self._fail_times: int | None = None
        self._stopping = threading.Event()
        self.delay_s = delay_s
        # Failures carry `retry-after-ms`, which the SDK honours: retries stay fast in tests.
        self.retry_after_ms = retry_after_ms
        # Embeddings: recorded, failed and delayed apart from the chat completions.
        self._embedding_requests: list[StubRequest] = []
        self._embedding_fail: tuple[int, int | None] | None = None  # (status, times left or None)
        self.embedding_delay_s = 0.0
        self.embedding_dimensions: int | None = None  # set: ignore the requested size, as odd servers do
        self.reverse_embeddings = False  # answer the vectors last first: clients must sort by `index`
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "OpenAIStub":
        if self._thread is None:
            # A short poll interval keeps stop() fast (the default is 0.5 s per test).
            serve = functools.partial(self._server.serve_forever, poll_interval=0.02)
            self._thread = threading.Thread(target=serve, name="openai-stub")
            self._thread.daemon = True
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping on `delay_s`
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "OpenAIStub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- behaviour ---------------------------------------------------------------------------

    def set_reply(self, reply: str | ReplyFunction) -> None:
        """The default answer: fixed text, or a function of the request body."""
        with self._lock:
            self._reply = reply

    def script(self, *replies: str) -> None:
        """Answer the next requests with these texts, in order, before the default reply."""
        with self._lock:
            self._script.extend(replies)

    def script_body(self, *bodies: dict[str, Any]) -> None:
        """Answer the next requests with these exact JSON bodies (status 200), as odd servers do."""
        with self._lock:
            self._script.extend(bodies)

    def fail_with(self, status: int = 500, times: int | None = None) -> None:
        """Fail requests with `status`: the next `times` ones, or all until `recover()`."""
        with self._lock:
            self._fail_status, self._fail_times = status, times

    def fail_embeddings_with(self, status: int = 500, times: int | None = None) -> None:
        """Fail embeddings requests with `status`: the next `times` ones, or all until `recover()`."""
        with self._lock:
            self._embedding_fail = (status, times)

    def recover(self) -> None:
        with self._lock:
            self._fail_status, self._fail_times = None, None
            self._embedding_fail = None

    def reset(self) -> None:
        """Forget requests, scripts and failures (the default reply and delay stay)."""
        with self._lock:
            self._requests.clear()
            self._script.clear()
            self._fail_status, self._fail_times = None, None
            self._embedding_requests.clear()
            self._embedding_fail = None

    # --- observation -------------------------------------------------------------------------

    @property
    def requests(self) -> list[StubRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def call_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def last_request(self) -> StubRequest:
        with self._lock:
            return self._requests[-1]

    @property
    def embedding_requests(self) -> list[StubRequest]:
        with self._lock:
            return list(self._embedding_requests)

    @property
    def embedding_call_count(self) -> int:
        with self._lock:
            return len(self._embedding_requests)

    # --- serving -----------------------------------------------------------------------------

    def _record(self, request: StubRequest) -> tuple[int | None, str | dict[str, Any]]:
        """Register one request; return (failure status or None, answer text or exact body)."""
        with self._lock:
            self._requests.append(request)
            if self._fail_status is not None:
                status = self._fail_status
                if self._fail_times is not None:
                    self._fail_times -= 1
                    if self._fail_times <= 0:
                        self._fail_status, self._fail_times = None, None
                return status, ""
            if self._script:
                return None, self._script.popleft()
            reply = self._reply
        return None, reply if isinstance(reply, str) else reply(request.body)

    def _record_embedding(self, request: StubRequest) -> int | None:
        """Register one embeddings request; return its failure status, or None."""
        with self._lock:
            self._embedding_requests.append(request)
            if self._embedding_fail is None:
                return None
            status, times = self._embedding_fail
            if times is not None:
                self._embedding_fail = (status, times - 1) if times > 1 else None
            return status

    @staticmethod
    def embedding_vector(text: str, dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS) -> list[float]:
        """The stub's vector of `text`: the same in every run and process (seeded by the text)."""
        rng = random.Random(text)
        return [rng.uniform(-1.0, 1.0) for _ in range(dimensions)]

    def _embeddings(self, body: dict[str, Any], inputs: list[str]) -> dict[str, Any]:
        dimensions = self.embedding_dimensions or int(body.get("dimensions") or DEFAULT_EMBEDDING_DIMENSIONS)
        data: list[dict[str, Any]] = []
        for index, text in enumerate(inputs):
            vector: list[float] | str = self.embedding_vector(text, dimensions)
            if body.get("encoding_format") == "base64":  # the SDK's default: little-endian float32
                vector = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": vector})
        tokens = sum(_words(text) for text in inputs)
        return {
            "object": "list",
            "data": data[::-1] if self.reverse_embeddings else data,
            "model": body.get("model", "stub"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _completion(self, body: dict[str, Any], text: str, number: int) -> dict[str, Any]:
        text = structured(body, text)
        prompt_words = sum(_words(str(m.get("content", ""))) for m in body.get("messages", []))
        return {
            "id": f"chatcmpl-stub-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "stub"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt_words,
                "completion_tokens": _words(text),
                "total_tokens": prompt_words + _words(text),
            },
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path.rstrip("/") not in (COMPLETIONS_PATH, EMBEDDINGS_PATH):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "malformed JSON", "type": "invalid_request_error"}})
                    return
                if self.path.rstrip("/") == EMBEDDINGS_PATH:
                    self._embed(body)
                    return
                prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
                if stub.context_chars is not None and prompt_chars > stub.context_chars:
                    error = {
                        "message": f"This model's maximum context length is exceeded ({prompt_chars} chars)",
                        "type": "invalid_request_error",
                        "code": "context_length_exceeded",
                    }
                    self._send(400, {"error": error})
                    return
                request = StubRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                if not stub.structured_outputs and "response_format" in body:
                    stub._record(request)  # counted as a request, answered as an older model does
                    error = {
                        "message": "Invalid parameter: 'response_format' of type 'json_schema' is not "
                        "supported with this model.",
                        "type": "invalid_request_error",
                        "param": "response_format",
                    }
                    self._send(400, {"error": error})
                    return
                status, text = stub._record(request)
                if stub.delay_s and stub._stopping.wait(stub.delay_s):
                    return  # shutting down
                if status is not None:
                    error = {"error": {"message": f"stub failure {status}", "type": "server_error"}}
                    self._send(status, error, retry=True)
                    return
                completion = text if isinstance(text, dict) else stub._completion(body, text, stub.call_count)
                self._send(200, completion)

            def _embed(self, body: dict[str, Any]) -> None:
                inputs = _embedding_inputs(body.get("input"))
                if inputs is None:
                    message = "'input' must be a non-empty string or list of strings"
                    self._send(400, {"error": {"message": message, "type": "invalid_request_error"}})
                    return
                request = StubRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                status = stub._record_embedding(request)
                if stub.embedding_delay_s and stub._stopping.wait(stub.embedding_delay_s):
                    return  # shutting down
                if status is not None:
                    failure = {"error": {"message": f"stub failure {status}", "type": "server_error"}}
                    self._send(status, failure, retry=True)
                    return
                self._send(200, stub._embeddings(body, inputs))

            def _send(self, status: int, payload: dict[str, Any], retry: bool = False) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    if retry and stub.retry_after_ms is not None:
                        self.send_header("retry-after-ms", str(stub.retry_after_ms))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client gave up (timeout): nothing to answer

        return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reply", default="stub summary")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with OpenAIStub(args.reply, delay_s=args.delay, port=args.port) as stub:
        print(f"OPENAI_BASE_URL={stub.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
