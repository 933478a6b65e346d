"""Lambda's Invoke API on the local stack's port: `POST /2015-03-31/functions/{name}/invocations`.

So `boto3.client("lambda", endpoint_url=...).invoke(...)` and `aws lambda invoke --endpoint-url ...`
run the real handlers in their workers, as a direct invocation does in AWS (docs/api.md
"Direct invocation"). The function is named as deployed (`hippocampus-dev-get-memory`), by ARN or partial
ARN, with `$LATEST` as the only qualifier. Answers are Lambda's: 200 with the result (and
`X-Amz-Function-Error: Unhandled` with `errorMessage`/`errorType`/`stackTrace` when the handler
fails), 202 for `Event` (run in the background, retried as Lambda retries), 204 for `DryRun`, and
Lambda's error shapes (`ResourceNotFoundException`, ...). No signature is checked, as on the routes.
"""

import base64
import json
import logging
import math
import re
import threading
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from local_stack.apigateway import MAX_LAMBDA_PAYLOAD_BYTES, HttpRequest, HttpResponse
from local_stack.lambda_context import function_arn
from local_stack.runtime import FunctionError, LocalFunction, Throttled

INVOKE_PATH = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations/?$")
# Lambda's own pattern for FunctionName: a name, a partial ARN or an ARN, with an optional qualifier.
FUNCTION_NAME = re.compile(
    r"^(arn:(aws[a-zA-Z-]*)?:lambda:)?(?P<region>[a-z]{2}((-gov)|(-iso([a-z]?)))?-[a-z]+-\d{1}:)?"
    r"(\d{12}:)?(function:)?(?P<name>[a-zA-Z0-9-_\.]+)(:(?P<qualifier>\$LATEST(\.PUBLISHED)?|[a-zA-Z0-9-_]+))?$"
)
_AWS_PATTERN = re.sub(r"\?P<\w+>", "", FUNCTION_NAME.pattern).strip("^$")  # as Lambda words it
LATEST = "$LATEST"
INVOCATION_TYPES = ("Event", "RequestResponse", "DryRun")
# Lambda's payload limits: 6 MB for a synchronous invocation, 1 MB for an asynchronous one.
MAX_ASYNC_PAYLOAD_BYTES = 1024 * 1024
MAX_RESPONSE_BYTES = 6_291_556  # the response limit Lambda reports, a little over 6 MiB
# Lambda's parser refuses a payload nested too deep (400 InvalidRequestContentException). Locally the
# bound is this depth: Python's parser gives up near 10,000 levels, and the pipe to a worker (pickle)
# near 5,000, where the connection would otherwise close without an answer.
MAX_PAYLOAD_DEPTH = 1000
# Lambda retries a failed asynchronous event twice, after about 1 and 2 minutes; seconds here, as the
# local SQS visibility timeout is (docs/architecture.md "Local stack").
ASYNC_RETRY_DELAYS_S = (1.0, 2.0)
# A throttled event waits in Lambda's queue (up to 6 hours); locally it is retried for a minute.
ASYNC_THROTTLE_RETRY_S = 1.0
ASYNC_MAX_AGE_S = 60.0
ASYNC_WORKERS = 16

log = logging.getLogger("local_stack.lambda_invoke")


def deployed_function_name(name_prefix: str, function: str) -> str:
    """`hippocampus-dev` and `get_memory` → `hippocampus-dev-get-memory`, as infra/functions.py names it."""
    return f"{name_prefix}-{function.replace('_', '-')}"


def parse_function_name(raw: str) -> tuple[str, str | None]:
    """The function's name and qualifier in a FunctionName; ValueError if Lambda would refuse it."""
    match = FUNCTION_NAME.match(raw)
    if match is None or (match["region"] is None and raw.startswith("arn:")):
        raise ValueError(raw)
    return match["name"], match["qualifier"]


class InvokeError(Exception):
    """An invocation Lambda refuses before running the function, in Lambda's error shape."""

    def __init__(self, status: HTTPStatus, code: str, message: str, **extra: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra

    def response(self, request_id: str) -> HttpResponse:
        # botocore reads the code from x-amzn-ErrorType and the message from the body's `message`.
        body = {"Type": "User", "message": self.message, **self.extra}
        headers = _json_headers(request_id, ("x-amzn-ErrorType", self.code))
        return HttpResponse(int(self.status), headers, json.dumps(body).encode())


def _json_headers(request_id: str, *extra: tuple[str, str]) -> list[tuple[str, str]]:
    return [("Content-Type", "application/json"), ("x-amzn-RequestId", request_id), *extra]


def too_large(limit: int) -> InvokeError:
    message = f"Request must be smaller than {limit} bytes for the InvokeFunction operation"
    return InvokeError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "RequestTooLargeException", message)


def throttled() -> InvokeError:
    return InvokeError(
        HTTPStatus.TOO_MANY_REQUESTS,
        "TooManyRequestsException",
        "Rate Exceeded.",
        Reason="ReservedFunctionConcurrentInvocationLimitExceeded",
    )


def _invalid(field: str, value: str, constraint: str) -> InvokeError:
    message = f"Value '{value}' at '{field}' failed to satisfy constraint: Member must satisfy {constraint}"
    return InvokeError(
        HTTPStatus.BAD_REQUEST, "ValidationException", f"1 validation error detected: {message}"
    )


def refusal(status: HTTPStatus, message: str, request_id: str) -> HttpResponse:
    """The HTTP server's own refusals (body over its limit, malformed, too many in flight), as Lambda's."""
    if status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE:
        return too_large(MAX_LAMBDA_PAYLOAD_BYTES).response(request_id)
    if status == HTTPStatus.TOO_MANY_REQUESTS:
        return throttled().response(request_id)
    return InvokeError(HTTPStatus.BAD_REQUEST, "InvalidRequestContentException", message).response(request_id)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _not_parsed(reason: object) -> InvokeError:
    return InvokeError(
        HTTPStatus.BAD_REQUEST,
        "InvalidRequestContentException",
        f"Could not parse request body into json: Could not parse payload into json: {reason}",
    )


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays and objects in `value` nest more than `limit` levels. Iterative, as the value
    may be nested as deep as the parser allows."""
    pending = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def parse_payload(body: bytes) -> Any:
    """The event a payload holds (an empty one is `{}`, as in Lambda); InvokeError if it is not JSON
    or nests deeper than MAX_PAYLOAD_DEPTH."""
    if not body.strip():
        return {}
    try:
        event = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError included
        raise _not_parsed(exc) from None
    except RecursionError:
        raise _not_parsed(f"nested deeper than {MAX_PAYLOAD_DEPTH} levels") from None
    if nested_deeper_than(event, MAX_PAYLOAD_DEPTH):
        raise _not_parsed(f"nested deeper than {MAX_PAYLOAD_DEPTH} levels")
    return event


@dataclass(frozen=True)
class _Call:
    function: LocalFunction
    invocation_type: str
    event: Any
    tail: bool


class LambdaInvokeApi:
    """The Invoke API over the stack's functions (`functions`, filled before the server starts)."""

    def __init__(self, functions: Mapping[str, LocalFunction], region: str) -> None:
        self._functions = functions
        self.region = region
        self._events = ThreadPoolExecutor(max_workers=ASYNC_WORKERS, thread_name_prefix="lambda-event")
        self._stopping = threading.Event()

    @property
    def function_names(self) -> list[str]:
        return [function.spec.function_name for function in self._functions.values()]

    @staticmethod
    def serves(method: str, target: str) -> bool:
        return method == "POST" and INVOKE_PATH.match(urlsplit(target).path) is not None

    def handle(self, request: HttpRequest) -> HttpResponse:
        request_id = str(uuid.uuid4())
        try:
            call = self._call(request)
            if call.invocation_type == "DryRun":
                return HttpResponse(HTTPStatus.NO_CONTENT, [("x-amzn-RequestId", request_id)], b"")
            if call.invocation_type == "Event":
                return self._queue(call, request_id)
            return self._run(call, request_id)
        except InvokeError as error:
            return error.response(request_id)

    def stop(self) -> None:
        """Events still queued are dropped; running ones end with their function."""
        self._stopping.set()
        self._events.shutdown(wait=False, cancel_futures=True)

    # --- the request ------------------------------------------------------------------------------

    def _call(self, request: HttpRequest) -> _Call:
        split = urlsplit(request.target)
        match = INVOKE_PATH.match(split.path)
        assert match is not None, "serves() first"
        invocation_type = request.header("x-amz-invocation-type") or "RequestResponse"
        if invocation_type not in INVOCATION_TYPES:
            allowed = ", ".join(INVOCATION_TYPES)
            raise _invalid("invocationType", invocation_type, f"enum value set: [{allowed}]")
        function = self._function(unquote(match["name"]), parse_qs(split.query).get("Qualifier", [None])[0])
        limit = MAX_ASYNC_PAYLOAD_BYTES if invocation_type == "Event" else MAX_LAMBDA_PAYLOAD_BYTES
        if len(request.body) > limit:
            raise too_large(limit)
        tail = (request.header("x-amz-log-type") or "None") == "Tail" and invocation_type != "Event"
        return _Call(function, invocation_type, parse_payload(request.body), tail)

    def _function(self, raw: str, qualifier: str | None) -> LocalFunction:
        try:
            name, named_qualifier = parse_function_name(raw)
        except ValueError:
            raise _invalid("functionName", raw, f"regular expression pattern: {_AWS_PATTERN}") from None
        if qualifier and named_qualifier and qualifier != named_qualifier:
            raise InvokeError(
                HTTPStatus.BAD_REQUEST,
                "InvalidParameterValueException",
                "The derived qualifier from the function name does not match the specified qualifier.",
            )
        qualifier = qualifier or named_qualifier
        found = next((f for f in self._functions.values() if f.spec.function_name == name), None)
        # The local functions have no published versions nor aliases: `$LATEST` is all there is.
        if found is None or qualifier not in {None, LATEST}:
            arn = function_arn(self.region, name) + (f":{qualifier}" if qualifier else "")
            raise InvokeError(HTTPStatus.NOT_FOUND, "ResourceNotFoundException", f"Function not found: {arn}")
        return found

    # --- running it -------------------------------------------------------------------------------

    def _run(self, call: _Call, request_id: str) -> HttpResponse:
        started = time.monotonic()
        try:
            outcome = _payload(call.function.invoke(call.event, request_id))
        except Throttled:
            raise throttled() from None
        except FunctionError as exc:
            outcome = _error(exc.error_type, exc.error_message)
        return self._answer(call, request_id, started, outcome)

    def _answer(
        self, call: _Call, request_id: str, started: float, outcome: tuple[bytes, bool]
    ) -> HttpResponse:
        payload, failed = outcome
        headers = _json_headers(request_id, ("X-Amz-Executed-Version", LATEST))
        if failed:
            headers.append(("X-Amz-Function-Error", "Unhandled"))
        if call.tail:
            elapsed_ms = (time.monotonic() - started) * 1000
            headers.append(("X-Amz-Log-Result", _log_tail(call.function, request_id, elapsed_ms)))
        return HttpResponse(HTTPStatus.OK, headers, payload)

    def _queue(self, call: _Call, request_id: str) -> HttpResponse:
        try:
            self._events.submit(self._run_event, call.function, call.event, request_id)
        except RuntimeError:  # the stack is stopping
            raise InvokeError(
                HTTPStatus.SERVICE_UNAVAILABLE, "ServiceException", "The local stack is stopping."
            ) from None
        return HttpResponse(HTTPStatus.ACCEPTED, [("x-amzn-RequestId", request_id)], b"")

    def _run_event(self, function: LocalFunction, event: Any, request_id: str) -> None:
        """An `Event` invocation, retried as Lambda retries one: throttles until the event is too
        old, function errors twice."""
        name = function.spec.function_name
        deadline = time.monotonic() + ASYNC_MAX_AGE_S
        failures = 0
        while not self._stopping.is_set():
            try:
                function.invoke(event, request_id)
                return
            except Throttled:
                if time.monotonic() > deadline:
                    log.error("%s: event %s dropped: throttled for %.0f s", name, request_id, ASYNC_MAX_AGE_S)
                    return
                self._stopping.wait(ASYNC_THROTTLE_RETRY_S)
            except FunctionError as exc:
                if self._stopping.is_set() or failures == len(ASYNC_RETRY_DELAYS_S):
                    log.error("%s: event %s failed (%s), not retried", name, request_id, exc.error_type)
                    return
                log.warning("%s: event %s failed (%s), retried", name, request_id, exc.error_type)
                self._stopping.wait(ASYNC_RETRY_DELAYS_S[failures])
                failures += 1


def _payload(result: Any) -> tuple[bytes, bool]:
    """The result as the Python runtime serialises it, or the error Lambda reports instead."""
    try:
        payload = json.dumps(result).encode()
    except (TypeError, ValueError) as exc:
        return _error("Runtime.MarshalError", f"Unable to marshal response: {exc}")
    if len(payload) > MAX_RESPONSE_BYTES:
        message = f"Response payload size ({len(payload)} bytes) exceeded maximum allowed payload size"
        return _error("Function.ResponseSizeTooLarge", f"{message} ({MAX_RESPONSE_BYTES} bytes).")
    return payload, False


def _error(error_type: str, message: str) -> tuple[bytes, bool]:
    """Lambda's error payload for an unhandled error. The worker reports no traceback, so
    `stackTrace` is empty; the traceback is in the stack's output."""
    body = {"errorMessage": message, "errorType": error_type, "stackTrace": []}
    return json.dumps(body).encode(), True


def _log_tail(function: LocalFunction, request_id: str, elapsed_ms: float) -> str:
    """`X-Amz-Log-Result`: Lambda's own START/END/REPORT lines, base64; the function's log lines are
    in the stack's output (the workers write there), not here."""
    report = (
        f"REPORT RequestId: {request_id}\tDuration: {elapsed_ms:.2f} ms\t"
        f"Billed Duration: {math.ceil(elapsed_ms)} ms\tMemory Size: {function.spec.memory_mb} MB\t"
    )
    lines = [f"START RequestId: {request_id} Version: {LATEST}", f"END RequestId: {request_id}", report]
    return base64.b64encode(("\n".join(lines) + "\n").encode()).decode("ascii")
