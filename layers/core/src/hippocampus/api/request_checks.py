"""What a proxy event must pass before the resolver sees it (docs/api.md "Errors"), and the one
parser of a request body, which the resolver runs.

The pre-checks are what the resolver cannot do; each returns the error to answer, or None. In
order: the event's shape (a direct invoke may send any JSON), the body's size (413, unread), its
media type (415) and its encoding (400). The resolver only ever gets a body in valid UTF-8, with a
Content-Type Powertools parses as JSON; a route that takes a body parses it with `strict_json`.
"""

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from hippocampus.api.envelope import JSON, validation_error
from hippocampus.contracts.errors import MalformedJson, PayloadTooLarge, ServiceError, UnsupportedMediaType
from hippocampus.contracts.limits import MAX_BODY_BYTES

# Once the text encodes as UTF-8, a lone surrogate can only come from a `\uD800`-`\uDFFF` escape:
# only a body holding one is walked for it.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# What API Gateway puts in place of bytes that are not UTF-8 in a text body (docs/api.md "Errors").
REPLACEMENT_CHARACTER = "\ufffd"


class _EventModel(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


class RequestContext(_EventModel):
    requestId: str


class ProxyEvent(_EventModel):
    """The fields of an API Gateway REST proxy event the resolver reads; the rest is not looked at."""

    httpMethod: str
    path: str
    headers: dict[str, str] | None = None
    multiValueHeaders: dict[str, list[str]] | None = None
    queryStringParameters: dict[str, str] | None = None
    multiValueQueryStringParameters: dict[str, list[str]] | None = None
    requestContext: RequestContext
    isBase64Encoded: bool | None = None


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return result


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def strict_json(text: str) -> Any:
    """The body's JSON, or MalformedJson (400, docs/api.md "Errors"): `json.loads` without Python's
    leniencies (a repeated key, NaN or Infinity is not JSON), and no string that cannot be stored
    as UTF-8. The resolver's `json_body_deserializer`: a body is parsed once, by its route."""
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_not_json)
    except _DuplicateKey as error:
        detail = {"field": error.key, "message": str(error), "type": "duplicate_key"}
        raise MalformedJson(f"the request body is not valid JSON: {error}", [detail]) from None
    except (ValueError, RecursionError):  # a syntax error or a huge integer; deep nesting recurses
        raise MalformedJson("the request body is not valid JSON") from None
    if _SURROGATE_ESCAPE.search(text) and has_lone_surrogate(value):
        raise MalformedJson("the request body is not valid UTF-8: it escapes a lone surrogate")
    return value


def has_lone_surrogate(value: Any) -> bool:
    """Whether a string anywhere in `value` (keys too) cannot be encoded as UTF-8. Iterative: the
    value may be nested as deep as the parser allows."""
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(node, Mapping):
            pending.extend(node.keys())
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return False


def event_problem(event: Mapping[str, Any]) -> ServiceError | None:
    """A proxy event sent by hand (a direct invoke with `httpMethod`) may be malformed."""
    body = event.get("body")
    if body is not None and not isinstance(body, str):
        return MalformedJson("the request body is not valid JSON: a proxy event's body is a string")
    try:
        ProxyEvent.model_validate(event)
    except ValidationError as error:
        # Named as the event spells them (`headers.Host`); the "body" prefix is what field_name drops.
        return validation_error([{**detail, "loc": ("body", *detail["loc"])} for detail in error.errors()])
    return None


def body_bytes(event: Mapping[str, Any]) -> bytes | MalformedJson:
    """The body as sent by the client: base64-decoded when API Gateway encoded it."""
    body = event.get("body") or ""
    if not event.get("isBase64Encoded"):
        try:
            return str(body).encode("utf-8")
        except UnicodeEncodeError:
            return MalformedJson("the request body is not valid UTF-8")
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return MalformedJson("the request body is not valid base64 (isBase64Encoded is true)")


def size_problem(raw: bytes) -> ServiceError | None:
    if len(raw) > MAX_BODY_BYTES:
        return PayloadTooLarge(f"the request body is over {MAX_BODY_BYTES} bytes (1 MiB)")
    return None


def content_types(event: Mapping[str, Any]) -> list[str]:
    """Every Content-Type value of the event (header names are case-insensitive)."""
    single = [v for k, v in (event.get("headers") or {}).items() if k.lower() == "content-type"]
    multi = [
        v
        for k, vs in (event.get("multiValueHeaders") or {}).items()
        if k.lower() == "content-type"
        for v in vs
    ]
    return single + multi


def is_json_media_type(value: str) -> bool:
    """`application/json` or any `application/*+json`, in any case, with any parameters (RFC 6838)."""
    major, _, minor = value.split(";", 1)[0].strip().lower().partition("/")
    return major == "application" and (minor == "json" or minor.endswith("+json"))


def media_type_problem(event: Mapping[str, Any], raw: bytes) -> ServiceError | None:
    """A body must be JSON; one without a Content-Type is read as JSON (requests without a body need none)."""
    refused = [value for value in content_types(event) if not is_json_media_type(value)]
    if raw and refused:
        return UnsupportedMediaType(
            f"Content-Type {refused[0]!r} is not supported: send JSON with Content-Type: application/json"
        )
    return None


def encoding_problem(event: Mapping[str, Any], raw: bytes) -> ServiceError | None:
    """400 unless the body is valid UTF-8 (docs/api.md "Errors")."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return MalformedJson("the request body is not valid UTF-8")
    if not event.get("isBase64Encoded") and REPLACEMENT_CHARACTER in text:
        # API Gateway replaced bytes that were not UTF-8: the body as sent is lost (docs/api.md "Errors").
        return MalformedJson("the request body is not valid UTF-8 (send U+FFFD itself escaped, as \\ufffd)")
    return None


def normalised(event: JSON) -> JSON:
    """The event with every Content-Type `application/json`, the one spelling Powertools parses as
    JSON (a body's media type is JSON by now; without a body it means nothing)."""

    def header(name: str, value: Any) -> Any:
        if name.lower() != "content-type":
            return value
        return ["application/json"] * len(value) if isinstance(value, list) else "application/json"

    normalised_event = dict(event)
    for field in ("headers", "multiValueHeaders"):
        if event.get(field):
            normalised_event[field] = {name: header(name, value) for name, value in event[field].items()}
    return normalised_event
