"""Direct `lambda:Invoke` of the functions, without API Gateway (docs/api.md "Direct invocation").

The payload is `{"action": ..., "tenant_id": ..., ...}`; the result is the body the HTTP route
would return, or the error envelope `{"error": {...}}` with the status inside, mapped to the same
exceptions as over HTTP. The function names are given (`InvokeTarget`), or read from the stack's
CloudFormation outputs (`InvokeTarget.from_stack`).
"""

import asyncio
import math
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .aws import new_session, region_of
from .calls import Call, FunctionName, Reply
from .errors import (
    ConfigurationError,
    ConnectionFailedError,
    DependencyUnavailableError,
    HippocampusError,
    InvalidInputError,
    RequestTimeoutError,
    ThrottledError,
    TransportError,
    api_error,
)
from .transport import decode_json, encode_json

LOCAL_REGION = "us-east-1"  # the region the local stack's moto plays (README.md, "Try it locally")
_THROTTLE_CODES = frozenset({"TooManyRequestsException", "ThrottlingException", "EC2ThrottledException"})
# The stack outputs naming the functions (infra/stack.py).
OUTPUTS = {
    "get_memory": "GetMemoryFunctionName",
    "ingest": "IngestFunctionName",
    "recall": "RecallFunctionName",
}
# A function's name, partial or full ARN, with an optional qualifier (Lambda's own rule, a little
# wider): botocore puts it in the Invoke URL's path, where `..` or `/` would name another route.
FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.:$-]{0,169}")


@dataclass(frozen=True)
class InvokeTarget:
    """The names (or ARNs) of the three functions that serve direct invocations."""

    get_memory: str
    ingest: str
    recall: str

    def __post_init__(self) -> None:
        for function in OUTPUTS:
            name = getattr(self, function)
            if not isinstance(name, str) or not FUNCTION_NAME.fullmatch(name):
                raise ConfigurationError(f"{function} is not a Lambda function name or ARN")

    def name_for(self, function: FunctionName) -> str:
        name: str = getattr(self, function)
        return name

    @classmethod
    def local(cls, stage: str = "dev") -> "InvokeTarget":
        """The function names of the local stack (and of a deployment with the default prefix)."""
        return cls(
            f"hippocampus-{stage}-get-memory", f"hippocampus-{stage}-ingest", f"hippocampus-{stage}-recall"
        )

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, str]) -> "InvokeTarget":
        missing = [key for key in OUTPUTS.values() if not outputs.get(key)]
        if missing:
            raise ConfigurationError(f"the stack has no output {', '.join(missing)}")
        return cls(**{function: outputs[key] for function, key in OUTPUTS.items()})

    @classmethod
    def from_stack(cls, stack_name: str, *, region: str | None = None, session: Any = None) -> "InvokeTarget":
        return cls.from_outputs(stack_outputs(stack_name, region=region, session=session))


def stack_outputs(stack_name: str, *, region: str | None = None, session: Any = None) -> dict[str, str]:
    """The outputs of a CloudFormation stack, by key (e.g. `ApiUrl`, `IngestFunctionName`)."""
    session = session if session is not None else new_session()
    client = session.create_client("cloudformation", region_name=region_of(None, region, session))
    try:
        stacks = client.describe_stacks(StackName=stack_name)["Stacks"]
    except Exception as error:
        raise ConfigurationError(f"could not read the stack {stack_name} ({type(error).__name__})") from None
    outputs = stacks[0].get("Outputs", []) if stacks else []
    return {output["OutputKey"]: output["OutputValue"] for output in outputs}


class InvokeTransport:
    """`lambda:Invoke` of `target`'s functions.

    `client` is a ready botocore lambda client (or any object with its `invoke`); otherwise one
    is made from `session` (default: the environment's), `region` and `endpoint_url`, with
    botocore's own retries off (the client retries 429 and 503 itself within its time budget).
    `InvokeTransport.local("http://127.0.0.1:3000")` targets the local stack.
    """

    def __init__(
        self,
        target: InvokeTarget,
        *,
        region: str | None = None,
        endpoint_url: str | None = None,
        session: Any = None,
        client: Any = None,
    ) -> None:
        self.target = target
        self._given = client
        self._endpoint_url = endpoint_url
        local = bool(endpoint_url) and str(endpoint_url).startswith("http://")
        if client is not None:
            self._session, self._region = session, region
        elif local and session is None:
            # A plain-http endpoint is never AWS (the local stack): it checks no signature, so any
            # credentials do, and looking for real ones (which may query an instance role) is skipped.
            self._session = new_session()
            self._session.set_credentials("local", "local")
            self._region = region or LOCAL_REGION
        else:
            self._session = session if session is not None else new_session()
            self._region = region_of(None, region, self._session)
        self._clients: dict[int, Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def local(cls, endpoint_url: str = "http://127.0.0.1:3000", stage: str = "dev") -> "InvokeTransport":
        """The local stack's Invoke API (`POST /2015-03-31/functions/{name}/invocations`); any credentials."""
        return cls(InvokeTarget.local(stage), endpoint_url=endpoint_url)

    def __repr__(self) -> str:
        return f"InvokeTransport({self.target!r})"

    def _lambda(self, timeout: float) -> Any:
        if self._given is not None:
            return self._given
        seconds = max(1, math.ceil(timeout))  # whole seconds: a few clients, not one per budget
        with self._lock:
            if seconds not in self._clients:
                from botocore.config import Config

                config = Config(
                    connect_timeout=seconds, read_timeout=seconds, retries={"total_max_attempts": 1}
                )
                self._clients[seconds] = self._session.create_client(
                    "lambda", region_name=self._region, endpoint_url=self._endpoint_url, config=config
                )
            return self._clients[seconds]

    def send(self, call: Call, timeout: float) -> Reply:
        try:
            payload = encode_json({"action": call.action, **call.fields})
        except (TypeError, ValueError) as error:
            raise InvalidInputError(f"the payload is not JSON: {type(error).__name__}") from None
        try:
            response = self._lambda(timeout).invoke(
                FunctionName=self.target.name_for(call.function), Payload=payload
            )
            raw = response["Payload"].read()
        except Exception as error:
            raise _invoke_error(error) from None
        return _reply(response, raw)

    async def asend(self, call: Call, timeout: float) -> Reply:
        # botocore blocks: a worker thread keeps the event loop free.
        return await asyncio.to_thread(self.send, call, timeout)

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()

    async def aclose(self) -> None:
        self.close()


def _reply(response: Mapping[str, Any], raw: bytes) -> Reply:
    request_id = (response.get("ResponseMetadata") or {}).get("RequestId")
    if response.get("FunctionError"):
        # As API Gateway answers a failed function: 502 `dependency_unavailable` (docs/api.md "Errors").
        raise DependencyUnavailableError("the function failed", status=502, request_id=request_id)
    data = decode_json(raw, 200, request_id)
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        status = error.get("status")
        if isinstance(status, int) and not isinstance(status, bool) and status >= 400:
            return Reply(status, data, {}, request_id)
        return Reply(500, data, {}, request_id)
    return Reply(200, data, {}, request_id)


def _invoke_error(error: Exception) -> HippocampusError:
    if isinstance(error, HippocampusError):
        return error
    try:
        from botocore import exceptions as aws
    except ImportError:  # a hand-made client without botocore installed
        return TransportError(f"lambda:Invoke failed ({type(error).__name__})")
    name = type(error).__name__
    if isinstance(error, aws.ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        metadata = error.response.get("ResponseMetadata", {})
        status, request_id = int(metadata.get("HTTPStatusCode") or 500), metadata.get("RequestId")
        if code in _THROTTLE_CODES or status == 429:
            return ThrottledError(f"lambda:Invoke throttled ({code})", request_id=request_id)
        return api_error(code or None, status, f"lambda:Invoke failed ({code})", request_id)
    if isinstance(error, aws.ConnectTimeoutError | aws.ReadTimeoutError):
        return RequestTimeoutError(f"no answer in time ({name})")
    if isinstance(error, aws.EndpointConnectionError | aws.ConnectionClosedError):
        return ConnectionFailedError(f"lambda:Invoke failed ({name})")
    return TransportError(f"lambda:Invoke failed ({name})")
