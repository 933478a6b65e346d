"""The local stack's Lambda Invoke API (local_stack/lambda_invoke.py): names, payloads, answers.

Against a real local function (a worker process running a small handler), without the HTTP server.
"""

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local_stack.apigateway import HttpRequest
from local_stack.lambda_invoke import (
    MAX_PAYLOAD_DEPTH,
    InvokeError,
    LambdaInvokeApi,
    deployed_function_name,
    parse_function_name,
    parse_payload,
)
from local_stack.runtime import LocalFunction, LocalFunctionSpec, Throttled

NAME = "hippocampus-dev-probe"
HANDLER = """
def lambda_handler(event, context):
    if event.get("fail"):
        raise ValueError("boom")
    if event.get("unserialisable"):
        return {1, 2}
    return {"event": event, "function": context.function_name, "request_id": context.aws_request_id}
"""


def request(function: str, payload: bytes = b"{}", query: str = "", **headers: str) -> HttpRequest:
    target = f"/2015-03-31/functions/{function}/invocations" + (f"?{query}" if query else "")
    return HttpRequest(
        "POST", target, [(k.replace("_", "-"), v) for k, v in headers.items()], payload, "127.0.0.1"
    )


def error_of(response: Any) -> tuple[int, str, dict[str, Any]]:
    code = dict(response.headers)["x-amzn-ErrorType"]
    return response.status, code, json.loads(response.body)


@pytest.fixture(scope="module")
def invoke_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LambdaInvokeApi]:
    handler = tmp_path_factory.mktemp("probe") / "handler.py"
    handler.write_text(HANDLER)
    spec = LocalFunctionSpec(
        "probe", handler, timeout_s=10, memory_mb=128, region="us-east-1", deployed_name=NAME
    )
    function = LocalFunction(spec, 1)
    api = LambdaInvokeApi({"probe": function}, "us-east-1")
    try:
        yield api
    finally:
        api.stop()
        function.stop()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("hippocampus-dev-get-memory", ("hippocampus-dev-get-memory", None)),
        ("hippocampus-dev-get-memory:$LATEST", ("hippocampus-dev-get-memory", "$LATEST")),
        ("123456789012:function:hippocampus-dev-ingest", ("hippocampus-dev-ingest", None)),
        (
            "arn:aws:lambda:us-east-1:123456789012:function:hippocampus-dev-recall",
            ("hippocampus-dev-recall", None),
        ),
        (
            "arn:aws:lambda:eu-west-1:123456789012:function:hippocampus-dev-recall:live",
            ("hippocampus-dev-recall", "live"),
        ),
    ],
)
def test_function_names_as_lambda_accepts_them(raw: str, expected: tuple[str, str | None]) -> None:
    assert parse_function_name(raw) == expected


@pytest.mark.parametrize("raw", ["", "bad name", "a/b", "arn:aws:lambda:function:x", "x:y:z:w"])
def test_names_lambda_refuses(raw: str) -> None:
    with pytest.raises(ValueError):
        parse_function_name(raw)


def test_deployed_names_follow_the_cdk_app() -> None:
    assert deployed_function_name("hippocampus-dev", "get_memory") == "hippocampus-dev-get-memory"


def test_payloads() -> None:
    assert parse_payload(b"") == {} and parse_payload(b'[1, "a"]') == [1, "a"]
    for bad in (b"{nope", b"NaN", b"\xff\xfe"):
        with pytest.raises(InvokeError) as refused:
            parse_payload(bad)
        assert refused.value.code == "InvalidRequestContentException"


def _nested(depth: int) -> bytes:
    return b'{"a": ' * depth + b"1" + b"}" * depth


@pytest.mark.parametrize("depth", [MAX_PAYLOAD_DEPTH + 1, 6_000, 100_000])
def test_a_payload_nested_too_deep_is_refused_as_lambda_refuses_it(
    invoke_api: LambdaInvokeApi, depth: int
) -> None:
    # Deep enough for Python's parser (100,000) or the pipe to the worker (6,000) to give up.
    for invocation_type in ("RequestResponse", "Event"):
        response = invoke_api.handle(request(NAME, _nested(depth), X_Amz_Invocation_Type=invocation_type))
        status, code, body = error_of(response)
        assert (status, code) == (400, "InvalidRequestContentException")
        assert f"nested deeper than {MAX_PAYLOAD_DEPTH} levels" in body["message"]


def test_a_payload_at_the_nesting_bound_reaches_the_function(invoke_api: LambdaInvokeApi) -> None:
    response = invoke_api.handle(request(NAME, _nested(MAX_PAYLOAD_DEPTH)))
    assert response.status == 200 and "X-Amz-Function-Error" not in dict(response.headers)
    assert json.loads(response.body)["event"] == json.loads(_nested(MAX_PAYLOAD_DEPTH))


def test_a_result_and_its_log_tail(invoke_api: LambdaInvokeApi) -> None:
    response = invoke_api.handle(request(NAME, b'{"a": 1}', X_Amz_Log_Type="Tail"))
    headers = dict(response.headers)
    body = json.loads(response.body)
    assert response.status == 200 and "X-Amz-Function-Error" not in headers
    assert body == {"event": {"a": 1}, "function": NAME, "request_id": headers["x-amzn-RequestId"]}
    tail = base64.b64decode(headers["X-Amz-Log-Result"]).decode()
    assert tail.startswith(f"START RequestId: {body['request_id']} Version: $LATEST") and "REPORT" in tail


@pytest.mark.parametrize(
    ("payload", "error_type", "message"),
    [(b'{"fail": true}', "ValueError", "boom"), (b'{"unserialisable": true}', "Runtime.MarshalError", None)],
)
def test_a_handler_error_is_unhandled(
    invoke_api: LambdaInvokeApi, payload: bytes, error_type: str, message: str | None
) -> None:
    response = invoke_api.handle(request(f"arn:aws:lambda:us-east-1:123456789012:function:{NAME}", payload))
    assert response.status == 200 and dict(response.headers)["X-Amz-Function-Error"] == "Unhandled"
    body = json.loads(response.body)
    assert body["errorType"] == error_type and body["stackTrace"] == []
    assert message is None or body["errorMessage"] == message


def test_unknown_functions_and_qualifiers_are_not_found(invoke_api: LambdaInvokeApi) -> None:
    status, code, body = error_of(invoke_api.handle(request("hippocampus-dev-nope")))
    assert (status, code) == (404, "ResourceNotFoundException")
    assert body == {
        "Type": "User",
        "message": "Function not found: arn:aws:lambda:us-east-1:123456789012:function:hippocampus-dev-nope",
    }
    assert invoke_api.handle(request(NAME, query="Qualifier=%24LATEST")).status == 200
    assert error_of(invoke_api.handle(request(f"{NAME}:live")))[:2] == (404, "ResourceNotFoundException")
    assert error_of(invoke_api.handle(request(NAME, query="Qualifier=live")))[0] == 404


def test_refusals_before_the_function_runs(invoke_api: LambdaInvokeApi) -> None:
    assert error_of(invoke_api.handle(request(NAME, b"{x")))[:2] == (400, "InvalidRequestContentException")
    big = b'"' + b"x" * (6 * 1024 * 1024) + b'"'
    assert error_of(invoke_api.handle(request(NAME, big)))[:2] == (413, "RequestTooLargeException")
    event_too_big = request(NAME, big[: 2 * 1024 * 1024], X_Amz_Invocation_Type="Event")
    assert error_of(invoke_api.handle(event_too_big))[:2] == (413, "RequestTooLargeException")
    assert (
        error_of(invoke_api.handle(request(NAME, X_Amz_Invocation_Type="Sync")))[1] == "ValidationException"
    )
    dry_run = invoke_api.handle(request(NAME, X_Amz_Invocation_Type="DryRun"))
    assert (dry_run.status, dry_run.body) == (204, b"")


def test_an_event_is_accepted_at_once_and_runs(invoke_api: LambdaInvokeApi) -> None:
    function = next(iter(invoke_api._functions.values()))
    before = function.invocations
    response = invoke_api.handle(request(NAME, b'{"a": 2}', X_Amz_Invocation_Type="Event"))
    assert (response.status, response.body) == (202, b"")
    deadline = time.monotonic() + 10
    while function.invocations == before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert function.invocations == before + 1


class _Saturated:
    """A function whose every environment is busy."""

    spec = LocalFunctionSpec(
        "busy", Path("unused.py"), 10, 128, "us-east-1", deployed_name="hippocampus-dev-busy"
    )

    def invoke(self, event: Any, request_id: str | None = None) -> Any:
        raise Throttled("busy: Rate Exceeded")


def test_a_saturated_function_is_throttled() -> None:
    api = LambdaInvokeApi({"busy": _Saturated()}, "us-east-1")  # type: ignore[dict-item]
    try:
        status, code, body = error_of(api.handle(request("hippocampus-dev-busy")))
    finally:
        api.stop()
    assert (status, code) == (429, "TooManyRequestsException")
    assert body["Reason"] == "ReservedFunctionConcurrentInvocationLimitExceeded"
