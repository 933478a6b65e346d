"""`hippocampus ui`: the memory browser on localhost, its API calls proxied to a deployment
(client/README.md "Memory browser").

The page's files are served from this package (`ui_files`); a request under `/v1/` is sent on to the
endpoint as it came (method, path, query, body and the API's own headers), signed with SigV4 from the
environment's AWS credentials when the endpoint is `https://` (or `sign=True`). Nothing is deployed
for it: the browser talks to 127.0.0.1 only, and the credentials never reach the browser.

Only the page itself may use the proxy. The URL printed (and opened) carries a key made for this
run; the page's first load exchanges it for an HttpOnly, SameSite=Strict cookie, and every call to
`/v1/` must carry that cookie, so another local program (or user of the machine) cannot borrow the
credentials. A request must also name this server in its `Host` (a DNS rebinding attack names
another) and, when the browser says where it comes from (`Origin`, `Sec-Fetch-Site`), come from this
origin; anything else is 403. Only a path under `/v1/` with no `.` or `..` segment is sent on, to the
endpoint's own origin and stage.
"""

import hmac
import re
import secrets
import threading
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2

from . import ui_files
from ._version import __version__
from .aws import region_of

LOOPBACK = "127.0.0.1"
MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's own limit
# Request headers the API reads; everything else (cookies, the browser's own) stays here.
_FORWARDED_REQUEST = ("Content-Type", "Accept", "If-None-Match", "If-Match", "Idempotency-Key")
_FORWARDED_RESPONSE = ("Content-Type", "ETag", "Retry-After", "Deletion-Receipt")
UPSTREAM_TIMEOUT_S = 30.0
COOKIE = "hippocampus_ui"
# An origin-form target under /v1/: one leading slash, no scheme or host, no dot segment (even encoded).
_API_TARGET = re.compile(r"/v1/[^?#]*(\?[^#]*)?")
_DOT_SEGMENT = re.compile(r"(^|/)(\.|%2e){1,2}(/|$)", re.IGNORECASE)


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
        self.key = secrets.token_urlsafe(24)
        bound = {"upstream": upstream, "endpoint": self.endpoint, "key": self.key}
        handler = type("_BoundProxy", (_Proxy,), bound)
        self._server = ThreadingHTTPServer((LOOPBACK, port), handler)
        self._server.daemon_threads = True
        self._upstream = upstream
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self._server.server_address[1]}"

    def page_url(self, tenant: str | None = None, user: str | None = None) -> str:
        """The page's URL with this run's key (and the tenant and user to open)."""
        given = {"key": self.key, "tenant": tenant, "user": user}
        return f"{self.url}/ui/?" + urlencode({name: value for name, value in given.items() if value})

    def start(self) -> "UiServer":
        serve = lambda: self._server.serve_forever(poll_interval=0.1)  # noqa: E731 - a stop takes ≤ 0.1 s
        self._thread = threading.Thread(target=serve, name="hippocampus-ui", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._upstream.close()


class _Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = f"hippocampus-ui/{__version__}"
    sys_version = ""
    upstream: httpx2.Client  # set on the subclass UiServer builds
    endpoint: str
    key: str

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
        split = urlsplit(self.path)
        if not self._from_the_page():
            self._answer(HTTPStatus.FORBIDDEN, b"Only the memory browser's own page may call this server.\n")
        elif self.path == "/":
            self._answer(HTTPStatus.MOVED_PERMANENTLY, b"", (("Location", ui_files.UI_PREFIX),))
        elif self.path.startswith("/") and ui_files.serves(split.path):
            page = ui_files.answer(self.command, split.path)
            self._answer(page.status, page.body, page.headers + self._cookie_for(split.query))
        elif not _API_TARGET.fullmatch(self.path) or _DOT_SEGMENT.search(split.path):
            self._answer(HTTPStatus.NOT_FOUND, b"Not the memory browser nor its API.\n")
        elif not self._has_key():
            self._answer(HTTPStatus.FORBIDDEN, b"Open the page from the URL `hippocampus ui` printed.\n")
        else:
            self._forward()

    def _cookie_for(self, query: str) -> tuple[tuple[str, str], ...]:
        """The page loaded with this run's key gets it as a cookie only the browser holds."""
        given = parse_qs(query).get("key", [""])[0]
        if not hmac.compare_digest(given, self.key):
            return ()
        return (("Set-Cookie", f"{COOKIE}={self.key}; HttpOnly; SameSite=Strict; Path=/"),)

    def _has_key(self) -> bool:
        try:
            morsel = SimpleCookie(self.headers.get("Cookie") or "").get(COOKIE)
        except CookieError:
            return False
        return morsel is not None and hmac.compare_digest(morsel.value, self.key)

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
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            self._answer(HTTPStatus.LENGTH_REQUIRED, b"Send the body with a Content-Length.\n")
            return
        length_header = self.headers.get("Content-Length") or "0"
        if not length_header.isdigit() or int(length_header) > MAX_BODY_BYTES:
            self.close_connection = True
            status = (
                HTTPStatus.BAD_REQUEST if not length_header.isdigit() else HTTPStatus.REQUEST_ENTITY_TOO_LARGE
            )
            self._answer(status, b"Content-Length must be a number of bytes up to API Gateway's 10 MB.\n")
            return
        body = self.rfile.read(int(length_header))
        headers = {
            name: value for name in _FORWARDED_REQUEST if (value := self.headers.get(name)) is not None
        }
        try:
            response = self.upstream.request(
                self.command, self.endpoint + self.path, content=body, headers=headers
            )
        except httpx2.HTTPError as error:  # InvalidURL among them
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
