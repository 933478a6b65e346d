"""The Lambda entry point of an API function: proxy events through the resolver, direct invokes aside.

Before the resolver runs, a body over 1 MiB is refused unread (413) and one that is not UTF-8
JSON, or breaks the parser itself (deep nesting, huge integers), is 400 rather than a 5xx from
deeper down (docs/api.md "Errors").
"""

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hippocampus.api.direct import DirectHandler, invoke_direct, is_direct
from hippocampus.api.envelope import JSON, proxy_response
from hippocampus.api.resolver import build_resolver
from hippocampus.contracts.errors import MalformedJson, PayloadTooLarge
from hippocampus.contracts.limits import MAX_BODY_BYTES
from hippocampus.observability import logger, metrics

LambdaHandler = Callable[[JSON, LambdaContext], JSON]
Providers = Mapping[Callable[..., Any], Callable[..., Any]]


def api_function(
    routers: Sequence[APIGatewayRouter], actions: Mapping[str, DirectHandler], providers: Providers
) -> LambdaHandler:
    """A handler serving `routers` (their dependency slots filled by `providers`) and `actions`."""
    app = build_resolver()
    for router in routers:
        app.include_router(router)
    app.dependency_overrides.update(providers)

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
    @metrics.log_metrics
    def lambda_handler(event: JSON, context: LambdaContext) -> JSON:
        return handle(app, event, context, actions)

    return lambda_handler


def handle(
    app: APIGatewayRestResolver, event: JSON, context: LambdaContext, actions: Mapping[str, DirectHandler]
) -> JSON:
    """Serve an API Gateway proxy event, or a direct `lambda:Invoke` payload with an `action`."""
    if is_direct(event):
        return invoke_direct(event, context, actions)
    if body_size(event) > MAX_BODY_BYTES:
        return proxy_response(PayloadTooLarge(f"the request body is over {MAX_BODY_BYTES} bytes (1 MiB)"))
    if not _parses_as_json(event):
        return proxy_response(MalformedJson("the request body is not valid JSON"))
    # API Gateway REST keeps `path` percent-encoded (`alice%40example.com`); ids are matched decoded.
    decoded = {
        **event,
        "path": "/".join(_decode_segment(part) for part in str(event.get("path", "")).split("/")),
    }
    return app.resolve(decoded, context)


def body_size(event: Mapping[str, Any]) -> int:
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        return len(base64.b64decode(body))
    return len(body.encode())


def _decode_segment(segment: str) -> str:
    # An encoded slash stays encoded: it must not split an id into more path segments.
    decoded = unquote(segment)
    return segment if "/" in decoded else decoded


def _parses_as_json(event: Mapping[str, Any]) -> bool:
    body = event.get("body")
    if not body:
        return True
    try:
        json.loads(base64.b64decode(body).decode() if event.get("isBase64Encoded") else body)
    except (ValueError, RecursionError):  # UnicodeDecodeError and binascii.Error are ValueErrors
        return False
    return True
