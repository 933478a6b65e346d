"""The one interface every transport implements, and what all of them share.

Three implementations (client/README.md, "Transports"): `HttpTransport` (unsigned, for http://
endpoints such as the local stack), `SigV4Transport` (HTTPS signed for `execute-api`) and
`InvokeTransport` (direct `lambda:Invoke`). A transport sends one `Call` within a time budget
and returns the `Reply`, or raises a `TransportError`; it does not judge the status
(`check` does, the same for all of them).
"""

import json
import time
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from .calls import Call, Reply
from .errors import MalformedResponseError, RequestTimeoutError, from_envelope

# No body of the API comes near this (an export page is at most 4 MiB, docs/api.md "Limits"):
# anything larger is not the API's answer and is not read into memory.
MAX_RESPONSE_BYTES = 8 * 1024 * 1024


@runtime_checkable
class Transport(Protocol):
    def send(self, call: Call, timeout: float) -> Reply:
        """Send `call`, blocking at most about `timeout` seconds."""
        ...

    async def asend(self, call: Call, timeout: float) -> Reply:
        """The same, without blocking the event loop."""
        ...

    def close(self) -> None: ...

    async def aclose(self) -> None: ...


def check(reply: Reply) -> Reply:
    """The reply of a success; an error status raises its `ApiError` (docs/api.md "Errors")."""
    if reply.status >= 400:
        raise from_envelope(reply.data, reply.status, reply.request_id)
    return reply


def decode_json(content: bytes, status: int, request_id: str | None) -> Any:
    """The JSON of a body (None when empty); anything else is a `MalformedResponseError`."""
    if not content.strip():
        return None
    try:
        return json.loads(content)
    except (ValueError, RecursionError):
        raise MalformedResponseError(
            f"the answer (HTTP {status}) is not JSON", status=status, request_id=request_id
        ) from None


def encode_json(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()


def read_within(chunks: Iterable[bytes], deadline: float) -> bytes:
    """The body, read chunk by chunk: a server that trickles bytes cannot outlast the budget."""
    received = bytearray()
    for chunk in chunks:
        received += chunk
        check_progress(len(received), deadline)
    return bytes(received)


def check_progress(size: int, deadline: float) -> None:
    if time.monotonic() > deadline:
        raise RequestTimeoutError("the answer did not arrive within the time budget")
    if size > MAX_RESPONSE_BYTES:
        raise MalformedResponseError(f"the answer is over {MAX_RESPONSE_BYTES} bytes")
