"""API Gateway (REST, Lambda proxy integration) in front of the local functions.

Each HTTP request becomes the event API Gateway would send (`resource`, `path`,
`httpMethod`, single- and multi-value headers and query strings, `pathParameters`,
`requestContext` with a request id, stage and source IP, base64 for binary bodies), and the
function's proxy response is mapped back the way API Gateway maps it (status, merged
single- and multi-value headers, base64 bodies; 502 for an unhandled error or a malformed
response).

Routing follows `hippocampus.routes`: a route goes to its function; a known path with
another method, and an unknown path, go to get_memory, which answers 405 or 404 with the
error envelope (in AWS an ANY method and a `{proxy+}` resource do the same).
"""

import base64
import binascii
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from hippocampus.contracts import routes
from local_stack.runtime import ACCOUNT_ID, FunctionError

LOOPBACK = "127.0.0.1"

# API Gateway accepts payloads up to 10 MB; a Lambda request payload is limited to 6 MB.
MAX_API_PAYLOAD_BYTES = 10 * 1024 * 1024
MAX_LAMBDA_PAYLOAD_BYTES = 6 * 1024 * 1024
PROXY_RESOURCE = "/{proxy+}"
API_ID = "local"

log = logging.getLogger("local_stack.apigateway")
access_log = logging.getLogger("local_stack.access")

Invoke = Callable[[str, dict[str, Any]], Any]


@dataclass(frozen=True)
class HttpRequest:
    method: str
    target: str  # path and query, as received
    headers: list[tuple[str, str]]
    body: bytes
    source_ip: str
    protocol: str = "HTTP/1.1"
    host: str = "127.0.0.1"


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def route_for(method: str, path: str) -> tuple[str, str, dict[str, str] | None]:
    """(function, resource, pathParameters) of a request, as API Gateway resolves it."""
    route = routes.match(method, path)
    if route is not None:
        return route.function, route.path, _path_parameters(route.path, path) or None
    if routes.allowed_methods(path):
        # A known path with another method: the resource exists (an ANY method in AWS).
        template = next(r.path for r in routes.ROUTES if _path_parameters(r.path, path) is not None)
        return "get_memory", template, _path_parameters(template, path) or None
    return "get_memory", PROXY_RESOURCE, {"proxy": path.lstrip("/")}


def _path_parameters(template: str, path: str) -> dict[str, str] | None:
    """Values of the `{name}` segments of `template` in `path`; None when `path` does not match."""
    template_parts = template.strip("/").split("/")
    path_parts = path.strip("/").split("/")
    if len(template_parts) != len(path_parts):
        return None
    values: dict[str, str] = {}
    for expected, actual in zip(template_parts, path_parts, strict=True):
        if expected.startswith("{") and expected.endswith("}"):
            if not actual:
                return None
            values[expected[1:-1]] = unquote(actual)
        elif expected != actual:
            return None
    return values


def is_binary(content_type: str | None, binary_media_types: tuple[str, ...]) -> bool:
    """Whether API Gateway treats a request body as binary: its type matches `binaryMediaTypes`."""
    if not content_type:
        return False
    kind = content_type.split(";")[0].strip().lower()
    for pattern in binary_media_types:
        major, _, minor = pattern.lower().partition("/")
        kind_major, _, kind_minor = kind.partition("/")
        if major in {"*", kind_major} and minor in {"*", kind_minor}:
            return True
    return False


def build_event(
    request: HttpRequest,
    stage: str,
    now: float | None = None,
    binary_media_types: tuple[str, ...] = (),
) -> tuple[str, dict[str, Any]]:
    """The function to call and the API Gateway REST proxy event for `request`.

    Bodies are text (UTF-8, invalid bytes replaced) unless their Content-Type matches one of
    `binary_media_types`, then base64 with `isBase64Encoded` — API Gateway's rule. The deployed
    API declares no binary media types, so neither does the local stack by default.
    """
    now = time.time() if now is None else now
    split = urlsplit(request.target)
    path = split.path or "/"
    function, resource, path_parameters = route_for(request.method, path)

    headers: dict[str, str] = {}
    multi_headers: dict[str, list[str]] = {}
    trace_id = f"Root=1-{int(now):08x}-{uuid.uuid4().hex[:24]}"
    forwarded = [
        ("X-Forwarded-For", request.source_ip),
        ("X-Forwarded-Port", request.host.rpartition(":")[2] if ":" in request.host else "80"),
        ("X-Forwarded-Proto", "http"),
        ("X-Amzn-Trace-Id", trace_id),
    ]
    for name, value in [*request.headers, *forwarded]:
        if name.lower() in {"connection", "transfer-encoding", "keep-alive"}:
            continue
        existing = next((key for key in multi_headers if key.lower() == name.lower()), name)
        multi_headers.setdefault(existing, []).append(value)
        headers[existing] = value  # API Gateway keeps the last value in `headers`

    query: dict[str, str] = {}
    multi_query: dict[str, list[str]] = {}
    for name, value in parse_qsl(split.query, keep_blank_values=True):
        multi_query.setdefault(name, []).append(value)
        query[name] = value

    content_type = next((v for k, v in request.headers if k.lower() == "content-type"), None)
    body: str | None
    if not request.body:
        body, is_base64 = None, False
    elif is_binary(content_type, binary_media_types):
        body, is_base64 = base64.b64encode(request.body).decode("ascii"), True
    else:
        body, is_base64 = request.body.decode("utf-8", errors="replace"), False

    request_id = str(uuid.uuid4())
    user_agent = headers.get(next((k for k in headers if k.lower() == "user-agent"), ""))
    event = {
        "resource": resource,
        "path": path,
        "httpMethod": request.method,
        "headers": headers or None,
        "multiValueHeaders": multi_headers or None,
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "requestContext": {
            "resourceId": uuid.uuid5(uuid.NAMESPACE_URL, resource).hex[:6],
            "resourcePath": resource,
            "httpMethod": request.method,
            "extendedRequestId": base64.b32encode(uuid.uuid4().bytes[:10]).decode("ascii")[:16],
            "requestTime": formatdate(now, usegmt=True),
            "path": f"/{stage}{path}",
            "accountId": ACCOUNT_ID,
            "protocol": request.protocol,
            "stage": stage,
            "domainPrefix": API_ID,
            "requestTimeEpoch": int(now * 1000),
            "requestId": request_id,
            "identity": {
                "cognitoIdentityPoolId": None,
                "accountId": None,
                "cognitoIdentityId": None,
                "caller": None,
                "sourceIp": request.source_ip,
                "principalOrgId": None,
                "accessKey": None,
                "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None,
                "userArn": None,
                "userAgent": user_agent,
                "user": None,
            },
            "domainName": request.host,
            "apiId": API_ID,
        },
        "body": body,
        "isBase64Encoded": is_base64,
    }
    return function, event


def map_response(result: Any, request_id: str) -> HttpResponse:
    """API Gateway's mapping of a Lambda proxy response (502 when it is malformed)."""
    if not isinstance(result, Mapping):
        log.error("malformed Lambda proxy response (not an object): %r", type(result).__name__)
        return _integration_failure(request_id)
    try:
        status = int(result.get("statusCode", 200))
    except (TypeError, ValueError):
        log.error("malformed Lambda proxy response: statusCode %r", result.get("statusCode"))
        return _integration_failure(request_id)
    raw_body = result.get("body")
    if raw_body is None:
        body = b""
    elif not isinstance(raw_body, str):
        log.error("malformed Lambda proxy response: body is %s, not a string", type(raw_body).__name__)
        return _integration_failure(request_id)
    elif result.get("isBase64Encoded"):
        try:
            body = base64.b64decode(raw_body, validate=True)
        except (binascii.Error, ValueError):
            log.error("malformed Lambda proxy response: invalid base64 body")
            return _integration_failure(request_id)
    else:
        body = raw_body.encode("utf-8")

    merged: list[tuple[str, str]] = []
    multi = result.get("multiValueHeaders") or {}
    single = result.get("headers") or {}
    for name, values in multi.items():
        merged.extend((str(name), str(value)) for value in (values or []))
    multi_names = {str(name).lower() for name in multi}
    merged.extend(
        (str(name), str(value)) for name, value in single.items() if str(name).lower() not in multi_names
    )
    names = {name.lower() for name, _ in merged}
    if "content-type" not in names:
        merged.append(("Content-Type", "application/json"))
    merged.append(("x-amzn-RequestId", request_id))
    return HttpResponse(status=status, headers=merged, body=body)


def _gateway_error(status: HTTPStatus, code: str, message: str, request_id: str) -> HttpResponse:
    """An error API Gateway answers itself, rewritten into the error envelope as the deployed API's
    gateway responses do (infra/api.py GATEWAY_ERRORS)."""
    body = {"error": {"code": code, "message": message, "status": int(status), "details": []}}
    return HttpResponse(
        status=int(status),
        headers=[("Content-Type", "application/json"), ("x-amzn-RequestId", request_id)],
        body=json.dumps(body).encode(),
    )


def _integration_failure(request_id: str) -> HttpResponse:
    # A function error or a malformed proxy response: API Gateway's INTEGRATION_FAILURE (502).
    return _gateway_error(
        HTTPStatus.BAD_GATEWAY, "dependency_unavailable", "Internal server error", request_id
    )


def _request_too_large(request_id: str) -> HttpResponse:
    return _gateway_error(
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "payload_too_large", "The request body is too large.", request_id
    )


class ApiGateway:
    """Turns HTTP requests into proxy events, invokes the function, maps the response back."""

    def __init__(self, invoke: Invoke, stage: str, binary_media_types: tuple[str, ...] = ()) -> None:
        self._invoke = invoke
        self.stage = stage
        self.binary_media_types = binary_media_types

    def handle(self, request: HttpRequest) -> HttpResponse:
        if len(request.body) > MAX_LAMBDA_PAYLOAD_BYTES:
            # Lambda refuses a request payload over 6 MB before the function runs.
            return _request_too_large(str(uuid.uuid4()))
        function, event = build_event(request, self.stage, binary_media_types=self.binary_media_types)
        request_id = event["requestContext"]["requestId"]
        try:
            result = self._invoke(function, event)
        except FunctionError:
            # The traceback is already logged; API Gateway answers an unhandled error with 502.
            return _integration_failure(request_id)
        return map_response(result, request_id)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hippocampus-local"
    sys_version = ""
    gateway: ApiGateway  # set on the subclass built by `serve`

    def _serve(self) -> None:
        started = time.monotonic()
        try:
            body = self._read_body()
        except _BodyTooLarge:
            response = _request_too_large(str(uuid.uuid4()))
            self.close_connection = True
        except ValueError as exc:
            response = _gateway_error(HTTPStatus.BAD_REQUEST, "bad_request", str(exc), str(uuid.uuid4()))
            self.close_connection = True
        else:
            request = HttpRequest(
                method=self.command,
                target=self.path,
                headers=list(self.headers.items()),
                body=body,
                source_ip=self.client_address[0],
                protocol=self.request_version,
                host=self.headers.get("Host") or LOOPBACK,
            )
            response = self.gateway.handle(request)
        self._write(response)
        access_log.info(
            '%s "%s %s" %d %d %.1fms',
            self.client_address[0],
            self.command,
            self.path,
            response.status,
            len(response.body),
            (time.monotonic() - started) * 1000,
        )

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
        """Read and drop a refused body (up to a bound), so the client gets the answer, not a reset."""
        remaining = min(length, 4 * MAX_API_PAYLOAD_BYTES)
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
            self.rfile.readline(16)

    def _write(self, response: HttpResponse) -> None:
        self.send_response_only(response.status)
        self.send_header("Date", self.date_time_string())
        for name, value in response.headers:
            if name.lower() not in {"content-length", "connection", "transfer-encoding"}:
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


class _BodyTooLarge(Exception):
    pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default (5) resets connections of a burst of clients


class ApiServer:
    """A threading HTTP server on loopback serving the API Gateway emulation."""

    def __init__(self, gateway: ApiGateway, host: str, port: int) -> None:
        handler = type("ApiHandler", (_Handler,), {"gateway": gateway})
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
