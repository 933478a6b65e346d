"""The HTTP transport (httpx2): unsigned as is, signed with SigV4 when given an `auth` (sigv4.py).

One `httpx2.Client` for the blocking calls (and the background writer's thread) and one
`httpx2.AsyncClient` for the async client, each made on first use. The whole call, connecting
and reading included, is bounded by the budget it is given (client/README.md, "Never raises").
"""

import threading
import time
from collections.abc import Mapping
from typing import Any

import httpx2

from ._version import __version__
from .calls import Call, Reply
from .errors import ConnectionFailedError, InvalidInputError, MalformedResponseError, RequestTimeoutError
from .transport import check_progress, decode_json, encode_json, read_within

USER_AGENT = f"hippocampus-client/{__version__}"


class HttpTransport:
    """Calls the HTTP API at `endpoint` (e.g. `http://127.0.0.1:3000`, or an `ApiUrl` with its stage).

    `transport` / `async_transport` replace httpx2's network layer (an `httpx2.MockTransport`
    serves as both); `auth` is any `httpx2.Auth`.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        auth: httpx2.Auth | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx2.BaseTransport | None = None,
        async_transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self._auth = auth
        self._headers = {"Accept": "application/json", "User-Agent": USER_AGENT, **(headers or {})}
        self._transport = transport
        if async_transport is None and isinstance(transport, httpx2.AsyncBaseTransport):
            async_transport = transport
        self._async_transport = async_transport
        self._client: httpx2.Client | None = None
        self._async_client: httpx2.AsyncClient | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.endpoint!r})"

    # --- clients, made on first use ------------------------------------------------------------

    def _sync(self) -> httpx2.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx2.Client(
                    auth=self._auth, transport=self._transport, follow_redirects=False
                )
            return self._client

    def _async(self) -> httpx2.AsyncClient:
        with self._lock:
            if self._async_client is None:
                self._async_client = httpx2.AsyncClient(
                    auth=self._auth, transport=self._async_transport, follow_redirects=False
                )
            return self._async_client

    def _request(
        self, client: httpx2.Client | httpx2.AsyncClient, call: Call, timeout: float
    ) -> httpx2.Request:
        headers = self._headers | call.headers
        content: bytes | None = None
        if call.body is not None:
            try:
                content = encode_json(call.body)
            except (TypeError, ValueError) as error:
                raise InvalidInputError(f"the request body is not JSON: {type(error).__name__}") from None
            headers["Content-Type"] = "application/json"
        return client.build_request(
            call.method,
            self.endpoint + call.path,
            params=call.params or None,
            content=content,
            headers=headers,
            timeout=httpx2.Timeout(timeout),
        )

    # --- the transport interface ---------------------------------------------------------------

    def send(self, call: Call, timeout: float) -> Reply:
        deadline = time.monotonic() + timeout
        client = self._sync()
        try:
            response = client.send(self._request(client, call, timeout), stream=True)
            try:
                content = read_within(response.iter_bytes(), deadline)
            finally:
                response.close()
        except httpx2.HTTPError as error:
            raise _transport_error(error) from None
        return _reply(response, content)

    async def asend(self, call: Call, timeout: float) -> Reply:
        deadline = time.monotonic() + timeout
        client = self._async()
        try:
            response = await client.send(self._request(client, call, timeout), stream=True)
            try:
                received = bytearray()
                async for chunk in response.aiter_bytes():
                    received += chunk
                    check_progress(len(received), deadline)
            finally:
                await response.aclose()
        except httpx2.HTTPError as error:
            raise _transport_error(error) from None
        return _reply(response, bytes(received))

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        with self._lock:
            client, self._async_client = self._async_client, None
        if client is not None:
            await client.aclose()
        self.close()


def _transport_error(error: httpx2.HTTPError) -> Exception:
    # The exception's type names what went wrong; its text may hold the URL, i.e. user ids only.
    name = type(error).__name__
    if isinstance(error, httpx2.TimeoutException):
        return RequestTimeoutError(f"no answer in time ({name})")
    if isinstance(error, httpx2.DecodingError):
        return MalformedResponseError(f"the answer could not be decoded ({name})")
    return ConnectionFailedError(f"the request failed ({name})")


def _reply(response: httpx2.Response, content: bytes) -> Reply:
    headers = {name.lower(): value for name, value in response.headers.items()}
    request_id = headers.get("x-amzn-requestid")
    try:
        data: Any = decode_json(content, response.status_code, request_id)
    except MalformedResponseError:
        if response.status_code < 400:
            raise
        data = None  # an error page that is no envelope (a proxy's HTML): its status decides
    return Reply(response.status_code, data, headers, request_id)
