"""The Lambda entry point of an API function: every request through the one resolver.

A direct invoke becomes the proxy event of the route it names (`direct.py`). Before the resolver
runs, what it cannot check is answered in the envelope (docs/api.md "Errors"; `request_checks.py`):
a malformed event, a body over 1 MiB (413, unread), a body that is not JSON by its Content-Type
(415) or not UTF-8 (400). A direct invoke's event is built well formed, so it goes straight to the
resolver. There the route parses its body, strictly, and validates its parameters: a path id
that is not an identifier is 422 naming it.
"""

import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any
from urllib.parse import quote, unquote

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.utilities.typing import LambdaContext

from hippocampus.api import direct
from hippocampus.api import request_checks as checks
from hippocampus.api.envelope import JSON, envelope, proxy_response
from hippocampus.api.observed import LambdaHandler, observed
from hippocampus.api.resolver import build_resolver
from hippocampus.contracts.errors import ServiceError

# The characters of an identifier (contracts/limits.py IDENTIFIER_PATTERN), all of which the
# resolver's path matcher matches.
_IDENTIFIER_CHARACTERS = re.compile(r"[A-Za-z0-9._@:-]*")
Providers = Mapping[Callable[..., Any], Callable[..., Any]]


def api_function(routers: Sequence[APIGatewayRouter], providers: Providers) -> LambdaHandler:
    """A handler serving `routers` (their dependency slots filled by `providers`), over HTTP and
    directly."""
    return observed(api_serving(routers, providers))


def api_serving(routers: Sequence[APIGatewayRouter], providers: Providers) -> LambdaHandler:
    """What `api_function` serves, without the handler's log context and metrics flush: for a
    handler that already has them (the memory read's fast lane, memory_lane.py)."""
    app = build_resolver()
    for router in routers:
        app.include_router(router)
    app.dependency_overrides.update(providers)
    return partial(handle, app)


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
    app.append_context(**{direct.PAYLOAD_SPELLING: request.spelling})
    return direct.result(_resolve(app, request.event, context))


def _resolve(app: APIGatewayRestResolver, event: JSON, context: LambdaContext) -> JSON:
    path = "/".join(_routable(segment) for segment in event["path"].split("/"))
    return app.resolve({**event, "path": path}, context)


def _problem(event: JSON) -> ServiceError | None:
    """The first pre-check the event fails: its shape, then steps 1-3 of docs/api.md "Errors"."""
    if (problem := checks.event_problem(event)) is not None:
        return problem
    raw = checks.body_bytes(event)
    if isinstance(raw, ServiceError):
        return raw
    return (
        checks.size_problem(raw)
        or checks.media_type_problem(event, raw)
        or checks.encoding_problem(event, raw)
    )


def _routable(segment: str) -> str:
    """A path segment as the resolver matches it: decoded when it decodes to characters of an
    identifier (API Gateway REST keeps `alice%40example.com` encoded), else percent-encoded whole.

    The resolver's matcher cannot match `/`, NUL, CR, LF, `#` or `?` in a segment, and ends at a
    trailing newline: encoded, such an id still reaches its route, whose parameter pattern refuses
    it (422 naming it), and an encoded slash cannot split an id into more segments."""
    decoded = unquote(segment)
    return decoded if _IDENTIFIER_CHARACTERS.fullmatch(decoded) else quote(decoded, safe="")
