"""The HTTP server of the local API: reads requests off the socket, hands them to `ApiGateway`.

Requests are read as API Gateway accepts them (Content-Length or chunked bodies up to 10 MB;
a larger one is answered 413, a malformed one 400, in the error envelope), whatever their
method, each on its own thread, with one access log line per request. At most
`MAX_IN_FLIGHT` requests are served at once; one more is answered 429 at once (the envelope of
API Gateway's THROTTLED), so a burst costs threads and memory bounded by that, not by its size.
`POST /2015-03-31/functions/{name}/invocations` goes to Lambda's Invoke API instead
(`lambda_invoke.py`), which answers those refusals in Lambda's error shape; a request of SQS's
JSON protocol (`X-Amz-Target: AmazonSQS.*`) goes to moto (`sqs_proxy.py`); `/ui/` serves the
memory browser's page (`hippocampus_client.ui_files`). What `http.server`
refuses itself (a request line over 64 KiB: 414; a header line over 64 KiB or over 100 headers:
431; a malformed request line: 400) is answered in the envelope too, never as its HTML page.
"""

import logging
import threading
import time
import uuid
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from hippocampus_client import ui_files
from local_stack import lambda_invoke, sqs_proxy
from local_stack.apigateway import (
    ApiGateway,
    HttpRequest,
    HttpResponse,
    gateway_error,
    request_too_large,
    throttled,
)
from local_stack.paths import LOOPBACK

# API Gateway accepts payloads up to 10 MB.
MAX_API_PAYLOAD_BYTES = 10 * 1024 * 1024
# A refused body is still read (up to this much) so the client gets the answer, not a reset.
MAX_DISCARDED_BYTES = 4 * MAX_API_PAYLOAD_BYTES
# Well over what the functions can serve at once (each waits a bounded time for an environment).
MAX_IN_FLIGHT = 64
# `http.server`'s own limits, which it checks before a handler runs.
MAX_REQUEST_LINE_BYTES = 65_536
_OWN_REFUSALS = {
    HTTPStatus.REQUEST_URI_TOO_LONG: (
        "uri_too_long",
        f"The request line (method, path and query) is over {MAX_REQUEST_LINE_BYTES:,} bytes.",
    ),
    HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE: (
        "headers_too_large",
        f"A header line is over {MAX_REQUEST_LINE_BYTES:,} bytes, or there are over 100 headers.",
    ),
}
_HOP_BY_HOP = frozenset({"content-length", "connection", "transfer-encoding"})

log = logging.getLogger("local_stack.http_server")
access_log = logging.getLogger("local_stack.access")


class _BodyTooLarge(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hippocampus-local"
    sys_version = ""
    gateway: ApiGateway  # set on the subclass built by `ApiServer`
    invoke_api: lambda_invoke.LambdaInvokeApi | None  # likewise; None: API Gateway only
    sqs: sqs_proxy.SqsProxy | None  # likewise; None: no SQS on this port
    in_flight: threading.BoundedSemaphore  # likewise, shared by the server's threads

    def _serve(self) -> None:
        started = time.monotonic()
        response = self._respond()
        self._write(response)
        self._log_access(response, started)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """`http.server`'s own refusals, before any handler runs: in the envelope, not its HTML page."""
        started = time.monotonic()
        self.close_connection = True
        # A refused request line has no version to trust (http.server then takes it for HTTP/0.9 and
        # would send the body without a status line): answer as this server speaks.
        self.request_version = self.protocol_version
        status = HTTPStatus(code)
        if status == HTTPStatus.REQUEST_URI_TOO_LONG:
            self._discard_head()  # the rest of the request: so the client reads the answer, not a reset
        response = self._refusal(status, message or status.phrase)
        self._write(response)
        self._log_access(response, started)

    def _log_access(self, response: HttpResponse, started: float) -> None:
        access_log.info(
            '%s "%s %s" %d %d %.1fms',
            self.client_address[0],
            self.command,
            getattr(self, "path", "")[:200],  # unset when the request line was refused
            response.status,
            len(response.body),
            (time.monotonic() - started) * 1000,
        )

    def _discard_head(self) -> None:
        """Read the rest of the request line, then the headers up to their blank line (at most
        MAX_DISCARDED_BYTES in all)."""
        budget = MAX_DISCARDED_BYTES
        line: bytes = getattr(self, "raw_requestline", b"")  # typeshed does not declare it
        while line and not line.endswith(b"\n") and budget > 0:  # the request line
            line = self.rfile.readline(1 << 16)
            budget -= len(line)
        while line and budget > 0:  # the headers
            line = self.rfile.readline(1 << 16)
            budget -= len(line)
            if line in {b"\r\n", b"\n"}:
                return

    def _respond(self) -> HttpResponse:
        try:
            body = self._read_body()
        except _BodyTooLarge:
            self.close_connection = True
            return self._refusal(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "")
        except ValueError as exc:
            self.close_connection = True
            return self._refusal(HTTPStatus.BAD_REQUEST, str(exc))
        if not self.in_flight.acquire(blocking=False):
            return self._refusal(HTTPStatus.TOO_MANY_REQUESTS, "")
        try:
            return self._forward(body)
        finally:
            self.in_flight.release()

    def _invoking(self) -> bool:
        path = getattr(self, "path", None)  # unset when the request line was refused
        return self.invoke_api is not None and path is not None and self.invoke_api.serves(self.command, path)

    def _refusal(self, status: HTTPStatus, message: str) -> HttpResponse:
        """This server's own answer, in the API's envelope, or Lambda's shape on the Invoke API."""
        request_id = str(uuid.uuid4())
        if self._invoking():
            return lambda_invoke.refusal(status, message, request_id)
        if status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE:
            return request_too_large(request_id)
        if status == HTTPStatus.TOO_MANY_REQUESTS:
            return throttled(request_id)
        if status in _OWN_REFUSALS:
            code, explained = _OWN_REFUSALS[status]
            return gateway_error(status, code, explained, request_id)
        return gateway_error(HTTPStatus.BAD_REQUEST, "bad_request", message, request_id)

    def _forward(self, body: bytes) -> HttpResponse:
        request = HttpRequest(
            method=self.command,
            target=self.path,
            headers=list(self.headers.items()),
            body=body,
            source_ip=self.client_address[0],
            protocol=self.request_version,
            host=self.headers.get("Host") or LOOPBACK,
        )
        if self.invoke_api is not None and self._invoking():
            return self.invoke_api.handle(request)
        if self.sqs is not None and sqs_proxy.serves(request.method, request.headers):
            return self.sqs.handle(request)
        path = urlsplit(self.path).path
        if ui_files.serves(path):  # the memory browser's page, on the API's origin
            page = ui_files.answer(self.command, path)
            return HttpResponse(page.status, list(page.headers), page.body)
        return self.gateway.handle(request)

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked()
        length_header = self.headers.get("Content-Length")
        if not length_header:
            return b""
        try:
            length = int(length_header)
        except ValueError:
            raise ValueError("invalid Content-Length") from None
        if length < 0:
            raise ValueError("invalid Content-Length")
        if length > MAX_API_PAYLOAD_BYTES:
            self._discard(length)
            raise _BodyTooLarge
        return self.rfile.read(length)

    def _discard(self, length: int) -> None:
        remaining = min(length, MAX_DISCARDED_BYTES)
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 1 << 16))
            if not chunk:
                return
            remaining -= len(chunk)

    def _read_chunked(self) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            size_line = self.rfile.readline(1024).split(b";")[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise ValueError("invalid chunked encoding") from None
            if size == 0:
                while self.rfile.readline(1024).strip():  # trailers
                    pass
                return b"".join(chunks)
            total += size
            if total > MAX_API_PAYLOAD_BYTES:
                raise _BodyTooLarge
            chunks.append(self.rfile.read(size))
            self.rfile.readline(16)  # the CRLF after the chunk

    def _write(self, response: HttpResponse) -> None:
        self.send_response_only(response.status)
        self.send_header("Date", self.date_time_string())
        for name, value in response.headers:
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and response.body:
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug(format, *args)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _serve

    def __getattr__(self, name: str) -> Callable[[], None]:
        # Every other method too (TRACE, `FOO`): `ApiGateway` answers it as API Gateway does, in the
        # envelope, where the stdlib would answer an HTML 501.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default (5) resets connections of a burst of clients


class ApiServer:
    """A threading HTTP server on loopback serving the API Gateway emulation (and Lambda's Invoke API,
    and SQS's API forwarded to moto)."""

    def __init__(
        self,
        gateway: ApiGateway,
        host: str,
        port: int,
        invoke_api: lambda_invoke.LambdaInvokeApi | None = None,
        sqs: sqs_proxy.SqsProxy | None = None,
    ) -> None:
        attributes = {
            "gateway": gateway,
            "invoke_api": invoke_api,
            "sqs": sqs,
            "in_flight": threading.BoundedSemaphore(MAX_IN_FLIGHT),
        }
        handler = type("ApiHandler", (_Handler,), attributes)
        self._httpd = _Server((host, port), handler)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> None:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="api-server", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()  # waits for serve_forever: only once it was started
            self._thread.join(timeout=5)
        self._httpd.server_close()
