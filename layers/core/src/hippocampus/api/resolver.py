"""The Powertools REST resolver with the service's error handling: every failure in the envelope.

A route that takes a body parses it with `strict_json` (400 `malformed_json`, docs/api.md
"Errors"), once; a route that takes none never reads it."""

from collections.abc import Sequence
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from hippocampus.api.direct import PAYLOAD_SPELLING
from hippocampus.api.envelope import dependency_error, error_response, internal_error, validation_error
from hippocampus.api.request_checks import strict_json
from hippocampus.contracts import routes
from hippocampus.contracts.errors import MethodNotAllowed, NotFound, ServiceError, UnsupportedMediaType


def build_resolver() -> APIGatewayRestResolver:
    app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=strict_json)

    def invalid(errors: Sequence[Any]) -> Response[str]:
        # A direct invoke names each field as its payload spells it (api/direct.py).
        spelling = app.context.get(PAYLOAD_SPELLING)
        if spelling is not None:
            errors = [{**error, "loc": spelling(tuple(error.get("loc", ())))} for error in errors]
        return error_response(validation_error(list(errors)))

    @app.exception_handler(RequestValidationError)
    def _invalid(error: RequestValidationError) -> Response[str]:
        return invalid(error.errors())

    @app.exception_handler(RequestUnsupportedContentType)
    def _media_type(_: RequestUnsupportedContentType) -> Response[str]:
        # The entry answers 415 first (request_checks.py): this keeps Powertools' own check enveloped.
        return error_response(
            UnsupportedMediaType("the request body must be JSON (Content-Type: application/json)")
        )

    @app.exception_handler(ValidationError)
    def _invalid_model(error: ValidationError) -> Response[str]:
        return invalid(error.errors())

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
        return error_response(internal_error(error))

    return app
