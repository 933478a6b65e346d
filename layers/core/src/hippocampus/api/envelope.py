"""The error envelope of docs/api.md "Errors": every error a caller sees leaves through here.

`{"error": {"code", "message", "status", "details"}}`, as an HTTP response (resolver), a proxy
response built before the resolver runs, or a direct-invoke result. No stack trace ever reaches
a client.
"""

import json
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types

from hippocampus.contracts.errors import DependencyUnavailable, ServiceError, ValidationFailed
from hippocampus.contracts.models import ErrorEnvelope
from hippocampus.observability import logger

JSON = dict[str, Any]


def envelope(error: ServiceError) -> JSON:
    body = {"code": error.code, "message": error.message, "status": error.status, "details": error.details}
    return ErrorEnvelope.model_validate({"error": body}).model_dump(mode="json")


def envelope_text(error: ServiceError) -> str:
    return json.dumps(envelope(error), separators=(",", ":"))


def error_response(error: ServiceError, headers: Mapping[str, str] | None = None) -> Response[str]:
    return Response(
        status_code=error.status,
        content_type=content_types.APPLICATION_JSON,
        body=envelope_text(error),
        headers=dict(headers or {}),
    )


def proxy_response(error: ServiceError) -> JSON:
    """The Lambda proxy response of an error found before the resolver runs."""
    return {
        "statusCode": error.status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": envelope_text(error),
        "isBase64Encoded": False,
    }


def field_name(loc: tuple[Any, ...] | list[Any]) -> str:
    """`("body", "items", 0, "text")` → `items[0].text`; `("path", "user_id")` → `user_id`;
    `("header", "idempotency-key")` → `Idempotency-Key`, as the header is spelled in docs/api.md "Headers"."""
    parts = list(loc)
    if len(parts) == 2 and parts[0] == "header":
        parts = ["header", "-".join(word.capitalize() for word in str(parts[1]).split("-"))]
    if parts and parts[0] in {"body", "path", "query", "header"}:
        parts = parts[1:]
    name = ""
    for part in parts:
        if isinstance(part, int):
            name += f"[{part}]"
        elif not str(part).startswith(("function-after", "function-wrap")):
            name += ("." if name else "") + str(part)
    return name or "body"


def validation_error(errors: list[Any]) -> ServiceError:
    """pydantic's (or the resolver's) errors → 422 naming each field (a body that is not JSON never
    gets here: the resolver's parser raises its 400, request_checks.strict_json)."""
    details = [
        {
            "field": field_name(error.get("loc", ())),
            "message": str(error.get("msg", "")),
            "type": str(error.get("type")),
        }
        for error in errors
    ]
    fields = ", ".join(dict.fromkeys(detail["field"] for detail in details))
    return ValidationFailed(f"invalid request: {fields}", details)


def dependency_error(error: Exception) -> ServiceError:
    logger.exception("dependency failure", extra={"error_type": type(error).__name__})
    return DependencyUnavailable("a dependency is unavailable; retry later")


def internal_error(error: Exception) -> ServiceError:
    logger.exception("unhandled error", extra={"error_type": type(error).__name__})
    return ServiceError("an internal error occurred")
