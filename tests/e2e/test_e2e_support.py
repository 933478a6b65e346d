"""The suite's HTTP helper sends a request again on 429 and 503, as the API asks a client to, so a
loaded machine's throttling never fails a test; a test of throttling gets the first answer itself."""

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from e2e_support import Api


class _Flaky(BaseHTTPRequestHandler):
    """Answers 429 (with Retry-After: 0), then 503, then 202, and counts the requests."""

    answers = (429, 503, 202)
    served = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status = _Flaky.answers[min(_Flaky.served, len(_Flaky.answers) - 1)]
        _Flaky.served += 1
        body = b'{"error": {"code": "throttled", "message": "slow down", "status": 429, "details": []}}'
        self.send_response(status)
        if status == 429:
            self.send_header("Retry-After", "0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def flaky() -> Iterator[str]:
    _Flaky.served = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_throttling_and_unavailability_are_sent_again(flaky: str) -> None:
    assert Api(flaky).request("POST", "/v1/x", json={}).status_code == 202
    assert _Flaky.served == 3


def test_a_test_of_throttling_gets_the_first_answer(flaky: str) -> None:
    assert Api(flaky).request("POST", "/v1/x", json={}, raw=True).status_code == 429
    assert _Flaky.served == 1
