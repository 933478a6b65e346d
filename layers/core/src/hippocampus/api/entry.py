"""The Lambda entry point of an API function: every request through the one resolver.

A direct invoke becomes the proxy event of the route it names (`direct.py`). Before the resolver
runs, a malformed event, a body over 1 MiB (413, unread), a body that is not
JSON by its Content-Type (415), not UTF-8 or not strict JSON (400), and a path id that is not an
identifier (422) are answered in the envelope rather than as a 5xx from deeper down
(docs/api.md "Errors"; the checks are `request_checks.py`). A direct invoke's event is built
well formed, its body serialised as JSON: of these, only its path ids are checked.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hippocampus.api import direct
from hippocampus.api import request_checks as checks
from hippocampus.api.envelope import JSON, envelope, proxy_response
from hippocampus.api.resolver import build_resolver
from hippocampus.contracts.errors import ServiceError
from hippocampus.observability import logger, metrics

LambdaHandler = Callable[[Any, LambdaContext], JSON]
Providers = Mapping[Callable[..., Any], Callable[..., Any]]


def api_function(routers: Sequence[APIGatewayRouter], providers: Providers) -> LambdaHandler:
    """A handler serving `routers` (their dependency slots filled by `providers`), over HTTP and
    directly."""
    app = build_resolver()
    for router in routers:
        app.include_router(router)
    app.dependency_overrides.update(providers)

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
    @metrics.log_metrics
    def lambda_handler(event: Any, context: LambdaContext) -> JSON:
        return handle(app, event, context)

    return lambda_handler


def handle(app: APIGatewayRestResolver, event: Any, context: LambdaContext) -> JSON:
    """Serve an API Gateway proxy event; any other payload is a direct `lambda:Invoke`."""
    if direct.is_direct(event):
        return _direct(app, event, context)
    problem = _problem(event)
    if problem is not None:
        return proxy_response(problem)
    return _resolve(app, checks.normalised(event), context)


def _direct(app: APIGatewayRestResolver, event: Any, context: LambdaContext) -> JSON:
    try:
        request = direct.proxy_request(app, event, context)
    except ServiceError as error:
        return envelope(error)
    problem = checks.path_problem(request.event["httpMethod"], request.event["path"])
    if problem is not None:
        return envelope(problem)
    app.append_context(**{direct.PAYLOAD_SPELLING: request.spelling})
    return direct.result(_resolve(app, request.event, context))


def _resolve(app: APIGatewayRestResolver, event: JSON, context: LambdaContext) -> JSON:
    # API Gateway REST keeps `path` percent-encoded (`alice%40example.com`); ids are matched decoded.
    decoded = "/".join(_decode_segment(part) for part in event["path"].split("/"))
    return app.resolve({**event, "path": decoded}, context)


def _problem(event: JSON) -> ServiceError | None:
    """The first check of docs/api.md "Errors" the event fails, in their order."""
    if (problem := checks.event_problem(event)) is not None:
        return problem
    raw = checks.body_bytes(event)
    if isinstance(raw, ServiceError):
        return raw
    return (
        checks.size_problem(raw)
        or checks.media_type_problem(event, raw)
        or checks.json_problem(event, raw)
        or checks.path_problem(event["httpMethod"], event["path"])
    )


def _decode_segment(segment: str) -> str:
    # An encoded slash stays encoded: it must not split an id into more path segments.
    decoded = unquote(segment)
    return segment if "/" in decoded else decoded
