"""API Gateway (REST, Lambda proxy integration) in front of the local functions.

An HTTP request becomes the event API Gateway would send (`events.api_gateway_event`: route,
headers, query strings, `requestContext`), its body text or base64 by API Gateway's binary
media type rule; the function's proxy response is mapped back as API Gateway maps it (status,
merged single- and multi-value headers, base64 bodies; 502 for an unhandled error or a
malformed response). A method API Gateway does not route (TRACE, ...) is answered 404 in the
envelope, without a function. A request naming a principal (`X-Hippocampus-Principal`) is checked
against that principal's grants as IAM checks a signed one, and with `require_principal` every
request but health and the OpenAPI document must name one (docs/operations.md "Principals"). The
HTTP server itself is `http_server.py`.
"""

import base64
import binascii
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from hippocampus.contracts.access import PRINCIPAL_HEADER, allows, principal_grants
from hippocampus.contracts.routes import HEALTH_PATH, OPENAPI_PATH
from local_stack.events import ApiRequest, api_gateway_event
from local_stack.paths import LOOPBACK
from local_stack.runtime import FunctionError, Throttled

# A Lambda request payload is limited to 6 MB (API Gateway itself accepts 10 MB).
MAX_LAMBDA_PAYLOAD_BYTES = 6 * 1024 * 1024
# The methods an API Gateway REST `ANY` method covers; any other (TRACE, CONNECT, `FOO`) matches no
# method, which API Gateway answers as MISSING_AUTHENTICATION_TOKEN: 404 in the deployed API's envelope.
ROUTED_METHODS = frozenset({"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"})
NO_ROUTE_MESSAGE = "No route matches this method and path (or the request is not signed with SigV4)."
THROTTLED_MESSAGE = "Too many requests: slow down and retry."  # infra/api.py GATEWAY_ERRORS, THROTTLED
# What a principal header may say: a tenant (infra `grant_tenant_access`) or an agent of a tenant
# (`grant_agent_access`), as `hippocampus.contracts.access.principal_grants` reads it.
PRINCIPAL_FORMS = "tenant/<tenant_id> or tenant/<tenant_id>/agent/<agent_id>"
# Paths no principal is checked on: liveness and the API's description stay open.
OPEN_PATHS = frozenset({HEALTH_PATH, OPENAPI_PATH})

log = logging.getLogger("local_stack.apigateway")

Invoke = Callable[[str, dict[str, Any]], Any]


@dataclass(frozen=True)
class HttpRequest:
    method: str
    target: str  # path and query, as received
    headers: list[tuple[str, str]]
    body: bytes
    source_ip: str
    protocol: str = "HTTP/1.1"
    host: str = LOOPBACK

    def header_values(self, name: str) -> list[str]:
        """The values of every header of this name (names compare case-insensitively)."""
        return [value for key, value in self.headers if key.lower() == name.lower()]

    def header(self, name: str) -> str | None:
        """The first value of the header of this name, if any."""
        return next(iter(self.header_values(name)), None)


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def is_binary(content_type: str | None, binary_media_types: tuple[str, ...]) -> bool:
    """Whether API Gateway treats a request body as binary: its type matches `binaryMediaTypes`."""
    if not content_type:
        return False
    kind_major, _, kind_minor = content_type.split(";")[0].strip().lower().partition("/")
    for pattern in binary_media_types:
        major, _, minor = pattern.lower().partition("/")
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

    Bodies are text (UTF-8, invalid bytes replaced by U+FFFD) unless their Content-Type matches one
    of `binary_media_types`, then base64 with `isBase64Encoded` — API Gateway's rule. The deployed
    API declares no binary media types, so neither does the local stack by default. The replacement
    is where a body that is not UTF-8 loses its bytes, here as in AWS: the function refuses a text
    body holding U+FFFD (docs/api.md "Errors").
    """
    split = urlsplit(request.target)
    content_type = next((v for k, v in request.headers if k.lower() == "content-type"), None)
    body: str | None = None
    is_base64 = bool(request.body) and is_binary(content_type, binary_media_types)
    if is_base64:
        body = base64.b64encode(request.body).decode("ascii")
    elif request.body:
        body = request.body.decode("utf-8", errors="replace")
    parsed = ApiRequest(
        method=request.method,
        path=split.path or "/",
        query=parse_qsl(split.query, keep_blank_values=True),
        headers=request.headers,
        body=body,
        is_base64=is_base64,
        source_ip=request.source_ip,
        host=request.host,
        protocol=request.protocol,
    )
    return api_gateway_event(parsed, stage, now)


def map_response(result: Any, request_id: str) -> HttpResponse:
    """API Gateway's mapping of a Lambda proxy response (502 when it is malformed)."""
    if not isinstance(result, Mapping):
        log.error("malformed Lambda proxy response (not an object): %r", type(result).__name__)
        return integration_failure(request_id)
    try:
        status = int(result.get("statusCode", 200))
    except (TypeError, ValueError):
        log.error("malformed Lambda proxy response: statusCode %r", result.get("statusCode"))
        return integration_failure(request_id)
    body = _response_body(result)
    if body is None:
        return integration_failure(request_id)
    headers = _response_headers(result)
    if "content-type" not in {name.lower() for name, _ in headers}:
        headers.append(("Content-Type", "application/json"))
    headers.append(("x-amzn-RequestId", request_id))
    return HttpResponse(status=status, headers=headers, body=body)


def _response_body(result: Mapping[str, Any]) -> bytes | None:
    """The body's bytes; None (logged) when it is not a string or not valid base64."""
    raw_body = result.get("body")
    if raw_body is None:
        return b""
    if not isinstance(raw_body, str):
        log.error("malformed Lambda proxy response: body is %s, not a string", type(raw_body).__name__)
        return None
    if not result.get("isBase64Encoded"):
        return raw_body.encode("utf-8")
    try:
        return base64.b64decode(raw_body, validate=True)
    except (binascii.Error, ValueError):
        log.error("malformed Lambda proxy response: invalid base64 body")
        return None


def _response_headers(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    """`multiValueHeaders` and `headers` merged; for a name in both, the multi-value one wins."""
    multi = result.get("multiValueHeaders") or {}
    single = result.get("headers") or {}
    merged = [(str(name), str(value)) for name, values in multi.items() for value in (values or [])]
    multi_names = {str(name).lower() for name in multi}
    merged.extend((str(k), str(v)) for k, v in single.items() if str(k).lower() not in multi_names)
    return merged


def gateway_error(status: HTTPStatus, code: str, message: str, request_id: str) -> HttpResponse:
    """An error API Gateway answers itself, rewritten into the error envelope as the deployed API's
    gateway responses do (infra/api.py GATEWAY_ERRORS)."""
    body = {"error": {"code": code, "message": message, "status": int(status), "details": []}}
    return HttpResponse(
        status=int(status),
        headers=[("Content-Type", "application/json"), ("x-amzn-RequestId", request_id)],
        body=json.dumps(body).encode(),
    )


def access_denied(message: str, request_id: str) -> HttpResponse:
    """A principal the route is not granted to: ACCESS_DENIED, 403 (infra/api.py GATEWAY_ERRORS)."""
    return gateway_error(HTTPStatus.FORBIDDEN, "access_denied", message, request_id)


def principal_refusal(request: HttpRequest, stage: str, require_principal: bool) -> str | None:
    """Why the principal `request` names may not make it, as ACCESS_DENIED's message; None when it
    may (or names none, and none is required). The raw path is matched, as IAM matches the request's
    resource; health and the OpenAPI document are never checked."""
    path = urlsplit(request.target).path or "/"
    if path in OPEN_PATHS:
        return None
    named = request.header_values(PRINCIPAL_HEADER)
    if not named:
        if not require_principal:
            return None
        return (
            f"This request names no principal: the local stack requires an {PRINCIPAL_HEADER} header "
            f"({PRINCIPAL_FORMS}) on every route but {HEALTH_PATH} and {OPENAPI_PATH} "
            "(MEMORY_LOCAL_REQUIRE_PRINCIPAL)."
        )
    grants = principal_grants(named[0]) if len(named) == 1 else None
    if grants is None:
        return f"{PRINCIPAL_HEADER} must be one header, {PRINCIPAL_FORMS}; got {', '.join(repr(value[:200]) for value in named)}."
    if allows(grants, request.method, path):
        return None
    granted = ", ".join(_resource(stage, grant.method, grant.path) for grant in grants)
    return (
        f"User: {named[0].strip()} is not authorized to perform: execute-api:Invoke on resource: "
        f"{_resource(stage, request.method, path)} (its grants: {granted})"
    )


def _resource(stage: str, method: str, path: str) -> str:
    """The tail of an `execute-api` resource ARN: `stage/METHOD/path`, as grants and IAM's messages spell it."""
    return f"{stage}/{method.upper()}{path}"


def integration_failure(request_id: str) -> HttpResponse:
    """A function error or a malformed proxy response: API Gateway's INTEGRATION_FAILURE (502)."""
    return gateway_error(
        HTTPStatus.BAD_GATEWAY, "dependency_unavailable", "Internal server error", request_id
    )


def no_route(request_id: str) -> HttpResponse:
    """A method API Gateway routes nowhere: MISSING_AUTHENTICATION_TOKEN (infra/api.py GATEWAY_ERRORS)."""
    return gateway_error(HTTPStatus.NOT_FOUND, "not_found", NO_ROUTE_MESSAGE, request_id)


def throttled(request_id: str) -> HttpResponse:
    """A burst over the functions' concurrency (or the server's in-flight bound): THROTTLED, 429."""
    return gateway_error(HTTPStatus.TOO_MANY_REQUESTS, "throttled", THROTTLED_MESSAGE, request_id)


def request_too_large(request_id: str) -> HttpResponse:
    return gateway_error(
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "payload_too_large", "The request body is too large.", request_id
    )


class ApiGateway:
    """Turns HTTP requests into proxy events, invokes the function, maps the response back."""

    def __init__(
        self,
        invoke: Invoke,
        stage: str,
        binary_media_types: tuple[str, ...] = (),
        require_principal: bool = False,
    ) -> None:
        self._invoke = invoke
        self.stage = stage
        self.binary_media_types = binary_media_types
        # Every request but health and the OpenAPI document must name a principal.
        self.require_principal = require_principal

    def handle(self, request: HttpRequest) -> HttpResponse:
        if request.method not in ROUTED_METHODS:
            return no_route(str(uuid.uuid4()))
        refusal = principal_refusal(request, self.stage, self.require_principal)
        if refusal is not None:
            # IAM decides before the integration: no function runs.
            return access_denied(refusal, str(uuid.uuid4()))
        if len(request.body) > MAX_LAMBDA_PAYLOAD_BYTES:
            # Lambda refuses a request payload over 6 MB before the function runs.
            return request_too_large(str(uuid.uuid4()))
        function, event = build_event(request, self.stage, binary_media_types=self.binary_media_types)
        request_id = event["requestContext"]["requestId"]
        try:
            result = self._invoke(function, event)
        except Throttled:
            return throttled(request_id)
        except FunctionError:
            # The traceback is already logged; API Gateway answers an unhandled error with 502.
            return integration_failure(request_id)
        return map_response(result, request_id)
