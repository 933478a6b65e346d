"""The local stack's HTTP server (local_stack/http_server.py): what it refuses itself is answered in
the error envelope, as API Gateway's gateway responses answer (docs/api.md "Errors"), never as the
standard library's HTML page.

In-process: the server in front of the real API functions on the in-memory fakes.
"""

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from local_stack.apigateway import ApiGateway
from local_stack.http_server import MAX_REQUEST_LINE_BYTES, ApiServer
from tests.support.fakes import Ports
from tests.support.lambda_harness import Context

EXPORT = "/v1/tenants/acme/users/alice/memory/export"


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    functions = Ports().api_functions()

    def invoke(function: str, event: dict[str, Any]) -> Any:
        return functions[function](event, Context())

    server = ApiServer(ApiGateway(invoke, "local"), "127.0.0.1", 0)
    server.start()
    try:
        yield server.port
    finally:
        server.stop()


def exchange(port: int, head: bytes) -> tuple[int, dict[str, str], dict[str, Any]]:
    """Send `head` as is, read the answer to the end (the server closes the connection after it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(head)
        answer = b""
        while chunk := connection.recv(1 << 16):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    header_block, _, body = rest.partition(b"\r\n\r\n")
    headers = dict(line.split(": ", 1) for line in header_block.decode().split("\r\n"))
    return int(status_line.split()[1]), headers, json.loads(body)


def get(target: str, *headers: str) -> bytes:
    lines = [f"GET {target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def assert_envelope(answer: tuple[int, dict[str, str], dict[str, Any]], status: int, code: str) -> None:
    answered, headers, body = answer
    assert answered == status and headers["Content-Type"] == "application/json"
    assert body["error"]["status"] == status and body["error"]["code"] == code, body
    assert set(body["error"]) == {"code", "message", "status", "details"}


def test_an_over_long_url_is_414_in_the_envelope(port: int) -> None:
    answer = exchange(port, get(f"{EXPORT}?cursor={'A' * 100_000}"))
    assert_envelope(answer, 414, "uri_too_long")
    assert f"{MAX_REQUEST_LINE_BYTES:,} bytes" in answer[2]["error"]["message"]


def test_a_long_cursor_within_the_url_limit_is_422_naming_cursor(port: int) -> None:
    answer = exchange(port, get(f"{EXPORT}?cursor={'A' * 60_000}"))
    assert_envelope(answer, 422, "validation_error")
    assert [detail["field"] for detail in answer[2]["error"]["details"]] == ["cursor"]


def test_an_over_long_header_is_431_in_the_envelope(port: int) -> None:
    answer = exchange(port, get("/v1/health", f"X-Padding: {'p' * 70_000}"))
    assert_envelope(answer, 431, "headers_too_large")


def test_a_malformed_request_line_is_400_in_the_envelope(port: int) -> None:
    assert_envelope(exchange(port, b"GET /v1/health HTTP/9\r\n\r\n"), 400, "bad_request")
