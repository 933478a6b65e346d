"""The memory read's fast lane: `GET …/users/{user_id}/memory` answered without the resolver
(docs/architecture.md "The memory read's fast lane").

The summary in one key lookup is the product's hottest read, and get_memory's cold start pays for
whatever its first request loads. Through the resolver that is pydantic, the route validation and
the models of every read route: about 120 ms over boto3's own floor, most of the function's cold
start (README "Performance"). The lane answers the plain case of that one route from the stored
items, with the body, `ETag`, 304 and metrics the route gives, and imports none of that.

Every other event goes to the full handler, built on first need: another route, an agent's read,
a direct invoke, a query string or a body, an id the route would refuse, several `If-None-Match`
values, an event the resolver's pre-check would refuse, a stored value the models would coerce or
refuse, and a read that fails (the full handler reads again and answers in the error envelope).
So every error still leaves through one place; tests/integration/test_memory_lane_moto.py holds
the lane's answers and metrics to the route's.
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.typing import LambdaContext

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
    if not _well_formed(event) or event["httpMethod"] != "GET" or event.get("body"):
        return None
    if event.get("queryStringParameters") or event.get("multiValueQueryStringParameters"):
        return None
    ids = match_path(MEMORY_PATH, event["path"])
    if ids is None or not all(_IDENTIFIER.fullmatch(ids[name]) for name in ("tenant_id", "user_id")):
        return None
    # Powertools reads the multi-value map when the event has one, else the single-value map.
    headers = event.get("multiValueHeaders") or event.get("headers") or {}
    conditions = [value for name, value in headers.items() if name.lower() == _CONDITION]
    if not conditions:
        return _PlainRead(ids["tenant_id"], ids["user_id"], None)
    condition = conditions[0]
    if isinstance(condition, list):
        condition = condition[0] if len(condition) == 1 else None
    if len(conditions) > 1 or condition is None:
        return None  # several values: the route decides what they mean
    return _PlainRead(ids["tenant_id"], ids["user_id"], condition)


def _well_formed(event: Any) -> bool:
    """The event has the shape the resolver's pre-check requires (api/request_checks.py `ProxyEvent`,
    strict, and a string body); a malformed one is answered there, in the envelope."""
    if not isinstance(event, dict):
        return False
    context = event.get("requestContext")
    return (
        isinstance(event.get("httpMethod"), str)
        and isinstance(event.get("path"), str)
        and isinstance(context, dict)
        and isinstance(context.get("requestId"), str)
        and isinstance(event.get("body"), str | None)
        and isinstance(event.get("isBase64Encoded"), bool | None)
        and all(_texts(event.get(field), several=False) for field in ("headers", "queryStringParameters"))
        and all(_texts(event.get(field), several=True) for field in _MULTI_VALUE_FIELDS)
    )


_MULTI_VALUE_FIELDS = ("multiValueHeaders", "multiValueQueryStringParameters")


def _texts(values: Any, *, several: bool) -> bool:
    """None, or a map of strings to strings (to lists of strings when `several`)."""
    if values is None:
        return True
    if not isinstance(values, dict):
        return False
    for name, value in values.items():
        if not isinstance(name, str) or (several and not isinstance(value, list)):
            return False
        if not all(isinstance(item, str) for item in (value if several else [value])):
            return False
    return True


def _answer(lane: MemoryLane, request: _PlainRead) -> JSON | None:
    try:
        with lane.tracing.span("dynamodb.read_memory", tenant_id=request.tenant_id):
            stored = lane.read(request.tenant_id, request.user_id)
    except Exception:
        return None  # it reads again: a throttled read gets a second round of botocore's retries
    if not _as_the_models_take(stored):
        return None
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


def _as_the_models_take(stored: StoredMemory) -> bool:
    """The stored values have the types the route's models hold as they are; anything else (an item
    written by hand) is the models' to coerce or refuse."""
    state = stored.state
    return (
        isinstance(state.memory, str | None)
        and type(state.version) is int
        and type(state.word_count) is int
        and all(
            isinstance(fact["id"], str)
            and isinstance(fact["text"], str)
            and isinstance(fact["title"], str | None)
            and isinstance(fact["metadata"], dict)
            and isinstance(fact["additional_metadata"], dict)
            for fact in stored.facts
        )
    )


def _fact_json(fact: FactFields) -> dict[str, Any]:
    return {**fact, "updated_at": _json_time(fact["updated_at"])}


def _json_time(value: datetime | None) -> str | None:
    """A time as the route's models write it (pydantic's JSON): ISO 8601, UTC as `Z`."""
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
