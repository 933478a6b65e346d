"""`hippocampus ui`: the memory browser on localhost, its API calls proxied to a deployment
(client/README.md "Memory browser").

The page's files are served from this package (`ui_files`); a request under `/v1/` is sent on to the
endpoint as it came (method, path, query, body and the API's own headers), signed with SigV4 from the
environment's AWS credentials when the endpoint is `https://` (or `sign=True`). Nothing is deployed
for it: the browser talks to 127.0.0.1 only, and the credentials never reach the browser.

Only the page itself may use the proxy: a request must name this server in its `Host` (a DNS
rebinding attack names another) and, when the browser says where it comes from (`Origin`,
`Sec-Fetch-Site`), come from this origin; anything else is 403. The API refuses bodies that are not
JSON, so a cross-site form cannot reach it either.
"""

import threading
import webbrowser
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import httpx2

from . import ui_files
from ._version import __version__
from .aws import region_of

LOOPBACK = "127.0.0.1"
MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's own limit
# Request headers the API reads; everything else (cookies, the browser's own) stays here.
_FORWARDED_REQUEST = ("Content-Type", "Accept", "If-None-Match", "If-Match", "Idempotency-Key")
_FORWARDED_RESPONSE = ("Content-Type", "ETag", "Retry-After")
UPSTREAM_TIMEOUT_S = 30.0


class UiServer:
    """The page on `http://127.0.0.1:<port>/ui/`, proxying `/v1/…` to `endpoint` (`port` 0: any free)."""

    def __init__(
        self,
        endpoint: str,
        *,
        port: int = 0,
        sign: bool | None = None,
        region: str | None = None,
        session: Any = None,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        auth = None
        if sign if sign is not None else urlsplit(endpoint).scheme == "https":
            from .aws import new_session
            from .sigv4 import SigV4Auth

            session = session if session is not None else new_session()
            auth = SigV4Auth(region_of(endpoint, region, session), session)
        upstream = httpx2.Client(auth=auth, timeout=UPSTREAM_TIMEOUT_S, follow_redirects=False)
        handler = type("_BoundProxy", (_Proxy,), {"upstream": upstream, "endpoint": self.endpoint})
        self._server = ThreadingHTTPServer((LOOPBACK, port), handler)
        self._server.daemon_threads = True
        self._upstream = upstream
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self._server.server_address[1]}"

    def page_url(self, tenant: str | None = None, user: str | None = None) -> str:
        query = "&".join(f"{name}={value}" for name, value in (("tenant", tenant), ("user", user)) if value)
        return f"{self.url}/ui/" + (f"?{query}" if query else "")

    def start(self) -> "UiServer":
        self._thread = threading.Thread(target=self._server.serve_forever, name="hippocampus-ui", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self, open_page: str | None = None) -> None:
        if open_page:
            webbrowser.open(open_page)
        self._server.serve_forever()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._upstream.close()


class _Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = f"hippocampus-ui/{__version__}"
    sys_version = ""
    upstream: httpx2.Client  # set on the subclass UiServer builds
    endpoint: str

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        path = urlsplit(self.path).path
        if not self._from_the_page():
            self._answer(HTTPStatus.FORBIDDEN, b"Only the memory browser's own page may call this server.\n")
        elif path == "/":
            self._answer(HTTPStatus.MOVED_PERMANENTLY, b"", (("Location", ui_files.UI_PREFIX),))
        elif ui_files.serves(path):
            page = ui_files.answer(self.command, path)
            self._answer(page.status, page.body, page.headers)
        elif path.startswith("/v1/"):
            self._forward()
        else:
            self._answer(HTTPStatus.NOT_FOUND, b"Not the memory browser nor its API.\n")

    def _from_the_page(self) -> bool:
        port = self.server.server_port  # type: ignore[attr-defined]  # an HTTPServer's
        own_hosts = {f"{LOOPBACK}:{port}", f"localhost:{port}"}
        if self.headers.get("Host") not in own_hosts:
            return False
        origin = self.headers.get("Origin")
        if origin is not None and origin not in {f"http://{host}" for host in own_hosts}:
            return False
        return self.headers.get("Sec-Fetch-Site") in (None, "same-origin", "none")

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._answer(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, b"The body is over API Gateway's 10 MB.\n")
            return
        body = self.rfile.read(length) if length else b""
        headers = {
            name: value for name in _FORWARDED_REQUEST if (value := self.headers.get(name)) is not None
        }
        try:
            response = self.upstream.request(
                self.command, self.endpoint + self.path, content=body, headers=headers
            )
        except httpx2.HTTPError as error:
            message = f"The endpoint {self.endpoint} did not answer ({type(error).__name__}).\n"
            self._answer(HTTPStatus.BAD_GATEWAY, message.encode())
            return
        kept = tuple((name, value) for name in _FORWARDED_RESPONSE if (value := response.headers.get(name)))
        self._answer(response.status_code, response.content, kept)

    def _answer(self, status: int, body: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.send_response(status)
        for name, value in headers:
            if name.lower() != "content-length":
                self.send_header(name, value)
        if not any(name.lower() == "content-type" for name, _ in headers):
            self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # paths name tenants and users: nothing is logged
