"""The exceptions of the client, raised only with `strict=True` (client/README.md, "Strict mode").

Every error of the API comes in one envelope, `{"error": {"code", "message", "status", "details"}}`
(docs/api.md "Errors"): each code of that table, the service's and API Gateway's, has its own
class here, so a caller can `except VersionConflictError`. Transport failures (timeout, refused
connection, an answer that is not the API's) have their own classes. All derive from
`HippocampusError`, which carries `.code`, `.status` and `.request_id`.
"""

from typing import Any, ClassVar


class HippocampusError(Exception):
    """Base of every error of the client. `status` is the HTTP status (None for transport errors)."""

    code: ClassVar[str] = "error"
    default_status: ClassVar[int | None] = None
    # Seconds the server asked to wait before retrying (the `Retry-After` header), if it did.
    retry_after: float | None = None

    def __init__(
        self,
        message: str = "",
        *,
        status: int | None = None,
        request_id: str | None = None,
        details: list[dict[str, Any]] | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message or self.code)
        self.message = message
        self.status = status if status is not None else self.default_status
        self.request_id = request_id
        self.details = details or []
        if code is not None:
            # An instance may carry a code its class does not name (a newer server's code).
            self.code = code  # type: ignore[misc]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, status={self.status}, request_id={self.request_id!r})"
        )


class ConfigurationError(HippocampusError, ValueError):
    """The client was set up wrongly (no endpoint, no tenant, no region to sign for, ...)."""

    code = "configuration_error"


class MissingDependencyError(HippocampusError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""

    code = "missing_dependency"


class InvalidInputError(HippocampusError, ValueError):
    """What the caller handed to a method cannot be sent (e.g. `add` with nothing to store)."""

    code = "invalid_input"


class WaitTimeoutError(HippocampusError):
    """`wait` gave up: some jobs were not final within its timeout."""

    code = "wait_timeout"


# --- transport -------------------------------------------------------------------------------


class TransportError(HippocampusError):
    """The request did not get an answer of the API."""

    code = "transport_error"


class ConnectionFailedError(TransportError):
    code = "connection_error"


class RequestTimeoutError(TransportError):
    """No complete answer within the call's time budget (3 s for reads by default)."""

    code = "client_timeout"


class MalformedResponseError(TransportError):
    """The answer is not JSON, or not the shape the API documents."""

    code = "malformed_response"


class CircuitOpenError(TransportError):
    """Not sent: the service timed out or refused a connection less than `breaker_cooldown`
    seconds ago (client/README.md, "Circuit breaker")."""

    code = "circuit_open"


# --- the API's envelope (docs/api.md "Errors") -----------------------------------------------


class ApiError(HippocampusError):
    """An error envelope. A code this client does not know comes as `ApiError` with that code."""

    code = "api_error"


class MalformedJsonError(ApiError):
    code, default_status = "malformed_json", 400


class BadRequestError(ApiError):
    code, default_status = "bad_request", 400


class UnauthorizedError(ApiError):
    code, default_status = "unauthorized", 401


class AccessDeniedError(ApiError):
    code, default_status = "access_denied", 403


class InvalidSignatureError(ApiError):
    code, default_status = "invalid_signature", 403


class ExpiredTokenError(ApiError):
    code, default_status = "expired_token", 403


class InvalidApiKeyError(ApiError):
    code, default_status = "invalid_api_key", 403


class RequestBlockedError(ApiError):
    code, default_status = "request_blocked", 403


class NotFoundError(ApiError):
    code, default_status = "not_found", 404


class MethodNotAllowedError(ApiError):
    code, default_status = "method_not_allowed", 405


class ConflictError(ApiError):
    """Base of the 409s: read again (or wait) and send again."""

    code, default_status = "conflict", 409


class VersionConflictError(ConflictError):
    code = "version_conflict"


class IdempotencyConflictError(ConflictError):
    code = "idempotency_conflict"


class WriteConflictError(ConflictError):
    code = "write_conflict"


class PayloadTooLargeError(ApiError):
    code, default_status = "payload_too_large", 413


class UnsupportedMediaTypeError(ApiError):
    code, default_status = "unsupported_media_type", 415


class RequestValidationError(ApiError):
    """422 `validation_error`; `details` name each offending field."""

    code, default_status = "validation_error", 422


class LimitExceededError(ApiError):
    code, default_status = "limit_exceeded", 422


class ThrottledError(ApiError):
    code, default_status = "throttled", 429


class InternalServerError(ApiError):
    code, default_status = "internal_error", 500


class DependencyUnavailableError(ApiError):
    code, default_status = "dependency_unavailable", 503


class GatewayTimeoutError(ApiError):
    """504 `timeout`: the function did not answer API Gateway in time."""

    code, default_status = "timeout", 504


def _codes() -> dict[str, type[ApiError]]:
    found: dict[str, type[ApiError]] = {}
    pending: list[type[ApiError]] = [ApiError]
    while pending:
        cls = pending.pop()
        found[cls.code] = cls
        pending.extend(cls.__subclasses__())
    return found


ERRORS_BY_CODE: dict[str, type[ApiError]] = _codes()

# When the body is no envelope (a proxy's HTML page), the status alone decides.
_BY_STATUS: dict[int, type[ApiError]] = {
    429: ThrottledError,
    500: InternalServerError,
    502: DependencyUnavailableError,
    503: DependencyUnavailableError,
    504: GatewayTimeoutError,
}


def api_error(
    code: str | None, status: int, message: str = "", request_id: str | None = None, details: Any = None
) -> ApiError:
    """The exception of one error: by its code, else by its status, else a plain `ApiError`."""
    cls = ERRORS_BY_CODE.get(code or "") or _BY_STATUS.get(status) or ApiError
    detail_list = [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []
    own_code = code if code and cls.code != code else None
    return cls(message, status=status, request_id=request_id, details=detail_list, code=own_code)


def from_envelope(body: Any, status: int, request_id: str | None = None) -> ApiError:
    """The exception for an error answer; `body` is the parsed JSON (any shape) or None."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return api_error(None, status, f"HTTP {status}", request_id)
    code = error.get("code") if isinstance(error.get("code"), str) else None
    inner_status = error.get("status")
    if isinstance(inner_status, int) and not isinstance(inner_status, bool) and status < 400:
        status = inner_status  # a direct invocation's result repeats the status inside only
    message = error.get("message") if isinstance(error.get("message"), str) else ""
    own_id = error.get("request_id") if isinstance(error.get("request_id"), str) else None
    return api_error(code, status, message or "", request_id or own_id, error.get("details"))
