"""HTTP glue shared by the API functions: one resolver setup, one error envelope, direct invocation.

Every error a caller sees, from Powertools validation to a failing dependency, leaves through
`error_response` in the envelope of DESIGN §2; no stack trace ever reaches a client.
"""

import base64
import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from hippocampus import routes
from hippocampus.errors import (
    DependencyUnavailable,
    MalformedJson,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    ServiceError,
    ValidationFailed,
)
from hippocampus.models import IDENTIFIER_PATTERN, MAX_BODY_BYTES, DirectInvocation, ErrorEnvelope
from hippocampus.observability import logger, metrics
from hippocampus.settings import get_settings

JSON = dict[str, Any]
DirectAction = Callable[[DirectInvocation, LambdaContext], JSON | None]

TenantId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="Tenant identifier")]
UserId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="User identifier")]

ERROR_RESPONSES: dict[int, OpenAPIResponse] = {
    status: {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}},
    }
    for status, description in {
        400: "Malformed JSON",
        404: "Unknown route, job or fact",
        409: "Version or idempotency conflict",
        413: "Body over 1 MiB",
        422: "Schema or limit violation",
        429: "Throttled",
        503: "A dependency is unavailable",
    }.items()
}


def envelope(error: ServiceError) -> JSON:
    body = {"code": error.code, "message": error.message, "status": error.status, "details": error.details}
    return ErrorEnvelope.model_validate({"error": body}).model_dump(mode="json")


def error_response(error: ServiceError, headers: Mapping[str, str] | None = None) -> Response[str]:
    return Response(
        status_code=error.status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(envelope(error), separators=(",", ":")),
        headers=dict(headers or {}),
    )


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    """`("body", "items", 0, "text")` → `items[0].text`; `("path", "user_id")` → `user_id`."""
    parts = list(loc)
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
    if any(error.get("type") == "json_invalid" for error in errors):
        return MalformedJson("the request body is not valid JSON")
    details = [
        {
            "field": _field(error.get("loc", ())),
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


def build_resolver() -> APIGatewayRestResolver:
    app = APIGatewayRestResolver(enable_validation=True)

    @app.exception_handler(RequestValidationError)
    def _invalid(error: RequestValidationError) -> Response[str]:
        return error_response(validation_error(list(error.errors())))

    @app.exception_handler(ValidationError)
    def _invalid_model(error: ValidationError) -> Response[str]:
        return error_response(validation_error(list(error.errors())))

    @app.exception_handler(ServiceError)
    def _service(error: ServiceError) -> Response[str]:
        return error_response(error)

    @app.exception_handler([BotoCoreError, ClientError])
    def _dependency(error: Exception) -> Response[str]:
        return error_response(dependency_error(error))

    @app.not_found
    def _not_found(_: NotFoundError) -> Response[str]:
        event = app.current_event
        allowed = routes.allowed_methods(event.path)
        if allowed:
            message = f"{event.http_method} is not allowed on this path; use {', '.join(allowed)}"
            return error_response(MethodNotAllowed(message), {"Allow": ", ".join(allowed)})
        return error_response(NotFound(f"no route for {event.http_method} {event.path}"))

    @app.exception_handler(Exception)
    def _unexpected(error: Exception) -> Response[str]:
        logger.exception("unhandled error", extra={"error_type": type(error).__name__})
        return error_response(ServiceError("an internal error occurred"))

    return app


def body_size(event: Mapping[str, Any]) -> int:
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        return len(base64.b64decode(body))
    return len(body.encode())


def handle(
    app: APIGatewayRestResolver,
    event: JSON,
    context: LambdaContext,
    actions: Mapping[str, DirectAction],
) -> JSON:
    """Serve an API Gateway proxy event, or a direct `lambda:Invoke` payload with an `action`."""
    if "httpMethod" not in event and "action" in event:
        return invoke_direct(event, context, actions)
    if body_size(event) > MAX_BODY_BYTES:
        # Checked before parsing: an oversized body is refused without being read.
        return _proxy_response(PayloadTooLarge(f"the request body is over {MAX_BODY_BYTES} bytes (1 MiB)"))
    if not _parses_as_json(event):
        return _proxy_response(MalformedJson("the request body is not valid JSON"))
    # API Gateway REST keeps `path` percent-encoded (`alice%40example.com`); ids are matched decoded.
    decoded = {
        **event,
        "path": "/".join(_decode_segment(part) for part in str(event.get("path", "")).split("/")),
    }
    return app.resolve(decoded, context)


def _decode_segment(segment: str) -> str:
    # An encoded slash stays encoded: it must not split an id into more path segments.
    decoded = unquote(segment)
    return segment if "/" in decoded else decoded


def _parses_as_json(event: Mapping[str, Any]) -> bool:
    """Bodies that are not UTF-8 JSON, or break the parser itself (deep nesting, huge integers),
    are malformed: 400 here rather than a 5xx from deeper down."""
    body = event.get("body")
    if not body:
        return True
    try:
        json.loads(base64.b64decode(body).decode() if event.get("isBase64Encoded") else body)
    except (ValueError, RecursionError):  # UnicodeDecodeError and binascii.Error are ValueErrors
        return False
    return True


def _proxy_response(error: ServiceError) -> JSON:
    return {
        "statusCode": error.status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": json.dumps(envelope(error), separators=(",", ":")),
        "isBase64Encoded": False,
    }


def api_function(
    router: APIGatewayRouter, actions: Mapping[str, DirectAction]
) -> Callable[[JSON, LambdaContext], JSON]:
    """The Lambda entry point of an API function: its routes, its direct actions, logs and metrics."""
    get_settings()  # a bad configuration fails the cold start, naming the variable
    app = build_resolver()
    app.include_router(router)

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
    @metrics.log_metrics
    def lambda_handler(event: JSON, context: LambdaContext) -> JSON:
        return handle(app, event, context, actions)

    return lambda_handler


def invoke_direct(event: JSON, context: LambdaContext, actions: Mapping[str, DirectAction]) -> JSON:
    """Direct invocation: the same bodies as the HTTP routes, errors in the same envelope."""
    try:
        request = DirectInvocation.model_validate(event)
        action = actions.get(request.action)
        if action is None:
            allowed = ", ".join(sorted(actions))
            raise ValidationFailed(
                f"action '{request.action}' is served by the other function; this one serves: {allowed}",
                [{"field": "action", "message": f"one of: {allowed}", "type": "literal_error"}],
            )
        return action(request, context) or {}
    except ValidationError as error:
        return envelope(validation_error(list(error.errors())))
    except ServiceError as error:
        return envelope(error)
    except (BotoCoreError, ClientError) as error:
        return envelope(dependency_error(error))
    except Exception as error:
        logger.exception("unhandled error", extra={"error_type": type(error).__name__})
        return envelope(ServiceError("an internal error occurred"))


def require(value: str | None, field: str) -> str:
    if not value:
        raise ValidationFailed(
            f"'{field}' is required for this action",
            [{"field": field, "message": "field required", "type": "missing"}],
        )
    return value


__all__ = ["ERROR_RESPONSES", "NotFound", "build_resolver", "envelope", "error_response", "handle", "require"]
