"""`hippocampus ui` (client/README.md "Memory browser"): the page on 127.0.0.1, its API calls sent on
to the endpoint as they came, signed with SigV4 from the environment's credentials, and refused to
anything but the page itself."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest
from aws_credentials import KEY, environment_credentials

from hippocampus_client.ui_server import UiServer


class Upstream:
    """A stand-in API: records each request and answers a memory body with an ETag."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                upstream.seen.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers.items()),
                        "body": self.rfile.read(length).decode(),
                    }
                )
                body = json.dumps({"memory": "Alice sells candles.", "version": 3}).encode()
                self.send_response(200 if self.command != "DELETE" else 204)
                self.send_header("Content-Type", "application/json")
                self.send_header("ETag", '"3"')
                if self.command == "DELETE":
                    self.send_header("Deletion-Receipt", "del_1")
                self.send_header("Set-Cookie", "tracking=1")
                self.send_header("Content-Length", str(len(body) if self.command != "DELETE" else 0))
                self.end_headers()
                if self.command != "DELETE":
                    self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/dev/"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    yield server
    server.stop()


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    environment_credentials(monkeypatch, tmp_path, token=None)


@pytest.fixture
def ui(upstream: Upstream) -> Iterator[UiServer]:
    server = UiServer(upstream.url).start()
    yield server
    server.stop()


@pytest.fixture
def page(ui: UiServer) -> Iterator[httpx2.Client]:
    """A browser that opened the URL `hippocampus ui` printed: it holds the run's cookie."""
    with httpx2.Client(base_url=ui.url) as browser:
        assert browser.get(ui.page_url("acme")).status_code == 200
        yield browser


def test_the_page_and_its_files_are_served_with_a_policy_that_keeps_them_to_this_origin(ui: UiServer) -> None:
    page = httpx2.get(ui.url + "/ui/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "Hippocampus memory browser" in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert httpx2.get(ui.url + "/ui/app.js").headers["content-type"].startswith("text/javascript")
    assert httpx2.get(ui.url + "/ui/style.css").headers["content-type"].startswith("text/css")
    assert httpx2.get(ui.url + "/ui").headers["location"] == "/ui/"
    assert httpx2.get(ui.url + "/").headers["location"] == "/ui/"
    for other in ("/ui/../pyproject.toml", "/ui/ui_files.py", "/ui/%2e%2e/cli.py", "/favicon.ico"):
        assert httpx2.get(ui.url + other).status_code == 404, other
    assert httpx2.post(ui.url + "/ui/", content=b"x").status_code == 405


def test_api_calls_go_to_the_endpoint_as_they_came_and_come_back_with_their_etag(
    page: httpx2.Client, upstream: Upstream
) -> None:
    path = "/v1/tenants/acme/users/alice/memory/query?limit=5"
    body = {"query": "candles"}
    page.cookies.set("session", "secret")
    answer = page.post(path, json=body, headers={"Idempotency-Key": "k1"})
    assert (answer.status_code, answer.json()["version"], answer.headers["etag"]) == (200, 3, '"3"')
    assert "set-cookie" not in answer.headers  # only the API's own headers come back
    sent = upstream.seen[-1]
    assert (sent["method"], sent["path"], json.loads(sent["body"])) == ("POST", "/dev" + path, body)
    assert (
        sent["headers"]["Idempotency-Key"] == "k1" and sent["headers"]["Content-Type"] == "application/json"
    )
    assert "Cookie" not in sent["headers"] and "Authorization" not in sent["headers"]  # http://: unsigned
    forgotten = page.delete("/v1/tenants/acme/users/alice/memory")
    assert forgotten.status_code == 204 and forgotten.headers["deletion-receipt"] == "del_1"
    assert upstream.seen[-1]["method"] == "DELETE"


def test_calls_to_a_deployment_are_signed_with_the_environments_credentials(
    upstream: Upstream, credentials: None
) -> None:
    server = UiServer(upstream.url, sign=True, region="eu-west-1").start()
    try:
        with httpx2.Client(base_url=server.url) as browser:
            browser.get(server.page_url())
            assert browser.get("/v1/tenants/acme/users").status_code == 200
    finally:
        server.stop()
    authorization = upstream.seen[-1]["headers"]["Authorization"]
    assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential={KEY}/")
    assert "/eu-west-1/execute-api/aws4_request" in authorization
    assert "X-Amz-Date" in upstream.seen[-1]["headers"]


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "evil.example:8765"},  # DNS rebinding: another name for 127.0.0.1
        {"Origin": "https://evil.example"},
        {"Sec-Fetch-Site": "cross-site"},
    ],
    ids=["another host", "another origin", "cross-site fetch"],
)
def test_only_the_page_itself_may_use_the_proxy(
    page: httpx2.Client, upstream: Upstream, headers: dict[str, str]
) -> None:
    answer = page.get("/v1/tenants/acme/users", headers=headers)
    assert answer.status_code == 403
    assert upstream.seen == []


def test_a_program_without_the_printed_key_cannot_borrow_the_credentials(
    ui: UiServer, upstream: Upstream
) -> None:
    assert httpx2.delete(ui.url + "/v1/tenants/acme/users/alice/memory").status_code == 403
    with httpx2.Client(base_url=ui.url) as browser:
        browser.get("/ui/?key=guessed")  # the page loads, without the cookie
        assert browser.get("/v1/tenants/acme/users").status_code == 403
        browser.cookies.set("hippocampus_ui", "guessed")
        assert browser.get("/v1/tenants/acme/users").status_code == 403
    assert upstream.seen == []


@pytest.mark.parametrize(
    "target",
    [
        "/v1/../../other",
        "/v1/tenants/%2e%2e/%2E%2E/x",
        "/v1/./health",
        "http://evil.example/v1/health",
        "a.b://evil/v1/x",
        "//evil.example/v1/health",
        "/v2/health",
    ],
)
def test_only_paths_under_v1_reach_the_endpoint(
    page: httpx2.Client, ui: UiServer, upstream: Upstream, target: str
) -> None:
    with socket.create_connection(("127.0.0.1", int(ui.url.rsplit(":", 1)[1]))) as raw:
        cookie = f"hippocampus_ui={ui.key}"
        raw.sendall(f"GET {target} HTTP/1.1\r\nHost: {ui.url[7:]}\r\nCookie: {cookie}\r\n\r\n".encode())
        status_line = raw.makefile("rb").readline().decode()
    assert status_line.split()[1] == "404", status_line
    assert upstream.seen == []


def test_a_body_the_proxy_cannot_size_is_refused_before_the_endpoint(
    ui: UiServer, upstream: Upstream
) -> None:
    for header in ("Content-Length: abc", "Content-Length: -1", "Transfer-Encoding: chunked"):
        with socket.create_connection(("127.0.0.1", int(ui.url.rsplit(":", 1)[1]))) as raw:
            head = f"POST /v1/health HTTP/1.1\r\nHost: {ui.url[7:]}\r\nCookie: hippocampus_ui={ui.key}\r\n"
            raw.sendall(f"{head}{header}\r\n\r\n".encode())
            status = raw.makefile("rb").readline().decode().split()[1]
        assert status in ("400", "411"), (header, status)
    assert upstream.seen == []


def test_an_endpoint_that_does_not_answer_is_a_502_naming_it() -> None:
    server = UiServer("http://127.0.0.1:9/").start()  # the discard port: nothing listens
    try:
        with httpx2.Client(base_url=server.url) as browser:
            browser.get(server.page_url())
            answer = browser.get("/v1/health")
    finally:
        server.stop()
    assert answer.status_code == 502 and "http://127.0.0.1:9" in answer.text


def test_the_command_prints_the_page_for_the_tenant_and_stops_on_ctrl_c(upstream: Upstream) -> None:
    program = str(Path(sys.executable).with_name("hippocampus"))  # the console script, as installed
    command = [program, "--endpoint", upstream.url, "--tenant", "acme"]
    process = subprocess.Popen(
        [*command, "ui", "--port", "0", "--no-open", "--user", "alice"],
        # As from a shell that ignores Ctrl-C for its background jobs (an xdist worker does too).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},  # noqa: TID251 - the child inherits PATH
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("Memory browser on http://127.0.0.1:") and line.strip().endswith(
            "&tenant=acme&user=alice"
        ), line
        page = line.split(" on ", 1)[1].strip()
        with httpx2.Client() as browser:
            assert browser.get(page).status_code == 200
            assert browser.get(page.split("/ui/")[0] + "/v1/tenants/acme/users").json()["version"] == 3
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C
        assert process.wait(timeout=60) == 0
