"""The memory read's fast lane: `GET …/users/{user_id}/memory` answered without the resolver
(docs/architecture.md "The memory read's fast lane").

The summary in one key lookup is the product's hottest read, and get_memory's cold start pays for
whatever its first request loads. Through the resolver that is pydantic, the route validation and
the models of every read route: about 120 ms over boto3's own floor, most of the function's cold
start (README "Performance"). The lane answers the plain case of that one route from the stored
items, with the body, `ETag`, 304 and metrics the route gives, and imports none of that.

Every other event goes to the full handler, built on first need: another route, an agent's read,
a direct invoke, a query string or a body, an id the route would refuse, two `If-None-Match`
headers, and a read that fails (the full handler reads again and answers in the error envelope).
So every error still leaves through one place, and a test holds the lane's answers to the route's.
"""

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError

from hippocampus.api.etags import matches_any, memory_tag
from hippocampus.api.observed import JSON, LambdaHandler, observed
from hippocampus.contracts.limits import IDENTIFIER_PATTERN
from hippocampus.contracts.memory_state import FactFields, StoredMemory
from hippocampus.contracts.routes import MEMORY_PATH, match_path
from hippocampus.observability import MetricName, record_metric

if TYPE_CHECKING:  # the ports' module loads the models, which the lane never does
    from hippocampus.contracts.ports import Tracing

_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)
_CONDITION = "if-none-match"


@dataclass(frozen=True)
class MemoryLane:
    read: Callable[[str, str], StoredMemory]  # (tenant_id, user_id): one Query of the memory's items
    tracing: "Tracing"
    full: Callable[[], LambdaHandler]  # the function's whole API, unobserved (entry.api_serving)


@dataclass(frozen=True)
class _PlainRead:
    tenant_id: str
    user_id: str
    if_none_match: str | None


def memory_lane_function(lane: MemoryLane) -> LambdaHandler:
    """get_memory's handler: the plain memory read by the lane, anything else by `lane.full()`."""

    def serve(event: Any, context: LambdaContext) -> JSON:
        request = plain_read(event)
        answer = None if request is None else _answer(lane, request)
        return answer if answer is not None else lane.full()(event, context)

    return observed(serve)


def plain_read(event: Any) -> _PlainRead | None:
    """The memory read `event` asks for when the lane can answer it as the route would; else None."""
    if not isinstance(event, Mapping) or event.get("httpMethod") != "GET" or event.get("body"):
        return None
    if event.get("queryStringParameters") or event.get("multiValueQueryStringParameters"):
        return None
    context, path = event.get("requestContext"), event.get("path")
    if not isinstance(context, Mapping) or not isinstance(context.get("requestId"), str):
        return None  # a proxy event sent by hand may be malformed: the full handler says how
    ids = match_path(MEMORY_PATH, path) if isinstance(path, str) else None
    if ids is None or not all(_IDENTIFIER.match(ids[name]) for name in ("tenant_id", "user_id")):
        return None
    try:
        condition = _condition(event)
    except _NotPlain:
        return None
    return _PlainRead(ids["tenant_id"], ids["user_id"], condition)


class _NotPlain(Exception):
    """The event is not the plain memory read: the full handler answers it."""


def _condition(event: Mapping[str, Any]) -> str | None:
    """The `If-None-Match` value of the event (None without one); _NotPlain unless it is one string,
    the same in each header map that has it (several values, another type: the route decides then)."""
    found: list[Any] = []
    for field, several in (("headers", False), ("multiValueHeaders", True)):
        headers = event.get(field) or {}
        if not isinstance(headers, Mapping):
            raise _NotPlain
        values = [value for name, value in headers.items() if str(name).lower() == _CONDITION]
        if several:
            values = [value[0] if isinstance(value, list) and len(value) == 1 else None for value in values]
        if len(values) > 1:
            raise _NotPlain
        found += values
    if not found:
        return None
    if not all(isinstance(value, str) and value == found[0] for value in found):
        raise _NotPlain
    return str(found[0])


def _answer(lane: MemoryLane, request: _PlainRead) -> JSON | None:
    try:
        with lane.tracing.span("dynamodb.read_memory", tenant_id=request.tenant_id):
            stored = lane.read(request.tenant_id, request.user_id)
    except (BotoCoreError, ClientError):
        return None  # read again by the full handler, which answers a lasting failure as the route does
    record_metric(MetricName.MEMORY_READS)
    if stored.state.memory is None and not stored.facts:
        record_metric(MetricName.MEMORY_MISSES)
    state = stored.state
    etag = memory_tag(
        state.version, state.generation, [(fact["id"], fact["updated_at"]) for fact in stored.facts]
    )
    if request.if_none_match is not None and matches_any(request.if_none_match, etag):
        return {
            "statusCode": 304,
            "body": None,
            "isBase64Encoded": False,
            "multiValueHeaders": {"ETag": [etag]},
        }
    body = {
        "tenant_id": request.tenant_id,
        "user_id": request.user_id,
        "memory": state.memory,
        "version": state.version,
        "word_count": state.word_count,
        "updated_at": _json_time(state.updated_at),
        "facts": [_fact_json(fact) for fact in stored.facts],
    }
    return {
        "statusCode": 200,
        "body": json.dumps(body, separators=(",", ":")),
        "isBase64Encoded": False,
        "multiValueHeaders": {"ETag": [etag], "Content-Type": ["application/json"]},
    }


def _fact_json(fact: FactFields) -> dict[str, Any]:
    return {**fact, "updated_at": _json_time(fact["updated_at"])}


def _json_time(value: datetime | None) -> str | None:
    """A time as the route's models write it (pydantic's JSON): ISO 8601, UTC as `Z`."""
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
