"""`strict=True`: every error code of the envelope (docs/api.md "Errors") raises its own exception,
transport failures raise theirs, and all carry code, status and request id."""

import asyncio

import httpx2
import pytest
from client_test_servers import HangingServer, closed_port, envelope, job_body, mocked, mocked_async

import hippocampus_client as hc
from hippocampus_client import HippocampusError, MemoryClient

# The two tables of docs/api.md "Errors": the service's codes, then API Gateway's.
CODES = [
    ("malformed_json", 400, hc.MalformedJsonError),
    ("not_found", 404, hc.NotFoundError),
    ("method_not_allowed", 405, hc.MethodNotAllowedError),
    ("version_conflict", 409, hc.VersionConflictError),
    ("idempotency_conflict", 409, hc.IdempotencyConflictError),
    ("write_conflict", 409, hc.WriteConflictError),
    ("payload_too_large", 413, hc.PayloadTooLargeError),
    ("unsupported_media_type", 415, hc.UnsupportedMediaTypeError),
    ("validation_error", 422, hc.RequestValidationError),
    ("limit_exceeded", 422, hc.LimitExceededError),
    ("internal_error", 500, hc.InternalServerError),
    ("dependency_unavailable", 503, hc.DependencyUnavailableError),
    ("access_denied", 403, hc.AccessDeniedError),
    ("invalid_signature", 403, hc.InvalidSignatureError),
    ("expired_token", 403, hc.ExpiredTokenError),
    ("throttled", 429, hc.ThrottledError),
    ("bad_request", 400, hc.BadRequestError),
    ("dependency_unavailable", 502, hc.DependencyUnavailableError),
    ("timeout", 504, hc.GatewayTimeoutError),
    ("unauthorized", 401, hc.UnauthorizedError),
    ("invalid_api_key", 403, hc.InvalidApiKeyError),
    ("request_blocked", 403, hc.RequestBlockedError),
]


@pytest.mark.parametrize(("code", "status", "error"), CODES, ids=[f"{c}-{s}" for c, s, _ in CODES])
def test_each_error_code_raises_its_own_exception(
    code: str, status: int, error: type[HippocampusError]
) -> None:
    body = envelope(code, status)
    body["error"]["details"] = [{"field": "memory", "message": "too long", "type": "limit"}]
    answer = httpx2.Response(status, json=body, headers={"x-amzn-RequestId": "req-7"})
    memory = mocked(lambda request: answer, strict=True, max_retries=0)
    with pytest.raises(error) as raised:
        memory.put("alice", "Alice sells candles.", 1)
    assert (raised.value.code, raised.value.status, raised.value.request_id) == (code, status, "req-7")
    assert raised.value.details == [{"field": "memory", "message": "too long", "type": "limit"}]
    assert isinstance(raised.value, hc.ApiError)


def test_a_code_this_client_does_not_know_is_an_api_error_with_that_code() -> None:
    memory = mocked(lambda request: httpx2.Response(418, json=envelope("teapot_mode", 418)), strict=True)
    with pytest.raises(hc.ApiError) as raised:
        memory.get("alice")
    assert type(raised.value) is hc.ApiError
    assert (raised.value.code, raised.value.status) == ("teapot_mode", 418)


def test_an_error_page_that_is_no_envelope_is_judged_by_its_status() -> None:
    page = httpx2.Response(502, content=b"<html>Bad Gateway</html>", headers={"Content-Type": "text/html"})
    memory = mocked(lambda request: page, strict=True)
    with pytest.raises(hc.DependencyUnavailableError) as raised:
        memory.get("alice")
    assert raised.value.status == 502


def test_transport_failures_raise_their_own_exceptions() -> None:
    refused = MemoryClient(endpoint=f"http://127.0.0.1:{closed_port()}", tenant="acme", strict=True)
    with pytest.raises(hc.ConnectionFailedError):
        refused.get("alice")
    with HangingServer() as server:
        hanging = MemoryClient(endpoint=server.url, tenant="acme", strict=True, timeout=0.2)
        with pytest.raises(hc.RequestTimeoutError):
            hanging.get("alice")
    garbage = mocked(lambda request: httpx2.Response(200, content=b"<html>"), strict=True)
    with pytest.raises(hc.MalformedResponseError):
        garbage.get("alice")
    for error in (hc.ConnectionFailedError, hc.RequestTimeoutError, hc.MalformedResponseError):
        assert issubclass(error, hc.TransportError) and issubclass(error, HippocampusError)


def test_an_answer_of_the_wrong_shape_names_fields_but_not_their_values() -> None:
    wrong = {"tenant_id": "acme", "user_id": "alice", "memory": {"secret": "the recipe"}, "version": "x"}
    memory = mocked(lambda request: httpx2.Response(200, json=wrong), strict=True)
    with pytest.raises(hc.MalformedResponseError) as raised:
        memory.get_full("alice")
    assert "memory" in str(raised.value) and "version" in str(raised.value)
    assert "recipe" not in str(raised.value)


def test_strict_wait_raises_when_a_job_stays_queued() -> None:
    memory = mocked(lambda request: httpx2.Response(200, json=job_body()), strict=True)
    with pytest.raises(hc.WaitTimeoutError):
        memory.wait("job-1", timeout=0.3, interval=0.05)


def test_strict_add_with_nothing_to_store_raises_invalid_input() -> None:
    memory = mocked(lambda request: httpx2.Response(202, json={"jobs": []}), strict=True)
    with pytest.raises(hc.InvalidInputError):
        memory.add("alice", [])


def test_the_async_client_raises_the_same_exceptions_in_strict_mode() -> None:
    conflict = httpx2.Response(409, json=envelope("version_conflict", 409))
    memory = mocked_async(lambda request: conflict, strict=True)
    with pytest.raises(hc.VersionConflictError):
        asyncio.run(memory.put("alice", "Alice sells candles.", 1))
