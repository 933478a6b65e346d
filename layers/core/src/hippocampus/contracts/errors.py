"""Errors. Each `ServiceError` maps to the error envelope of docs/api.md "Errors" with its HTTP status."""

from typing import Any, ClassVar


class ServiceError(Exception):
    """Base of every error a caller may see; `code` and `status` go into the envelope."""

    code: ClassVar[str] = "internal_error"
    status: ClassVar[int] = 500

    def __init__(self, message: str, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []


class MalformedJson(ServiceError):
    code, status = "malformed_json", 400


class NotFound(ServiceError):
    code, status = "not_found", 404


class MethodNotAllowed(ServiceError):
    code, status = "method_not_allowed", 405


class VersionConflict(ServiceError):
    code, status = "version_conflict", 409


class IdempotencyConflict(ServiceError):
    code, status = "idempotency_conflict", 409


class PayloadTooLarge(ServiceError):
    code, status = "payload_too_large", 413


class UnsupportedMediaType(ServiceError):
    code, status = "unsupported_media_type", 415


class ValidationFailed(ServiceError):
    code, status = "validation_error", 422


class LimitExceeded(ServiceError):
    code, status = "limit_exceeded", 422


class DependencyUnavailable(ServiceError):
    code, status = "dependency_unavailable", 503


class WriteConflict(ServiceError):
    """Another request holds the user's facts for writing (docs/api.md "Limits")."""

    code, status = "write_conflict", 409


class ConditionFailed(Exception):
    """A conditional write lost against a concurrent writer (internal; callers retry).

    `failed` holds the positions, in a transaction, of the items whose condition failed (empty when
    the store does not say)."""

    def __init__(self, message: str, failed: frozenset[int] = frozenset()) -> None:
        super().__init__(message)
        self.failed = failed


class UserDeleted(ConditionFailed):
    """The user was deleted (a new generation) after the request read it: nothing was written."""


class ConfigurationError(RuntimeError):
    """The environment holds an invalid setting; the message names the variable."""
