"""The memory browser's files (client/README.md "Memory browser"), as `/ui/…` serves them.

One answer for both servers of the page: the local stack (`make dev`) and `hippocampus ui`. Only
the three files of the page are served; anything else under `/ui/` is 404, and `/ui` redirects to
`/ui/`. No dependency: this module is imported by the local stack too.
"""

import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Final

UI_DIR: Final = Path(__file__).resolve().parent / "ui"
UI_PREFIX: Final = "/ui/"
_FILES: Final = {"": "index.html", "index.html": "index.html", "app.js": "app.js", "style.css": "style.css"}
# The page needs nothing from elsewhere; the browser is told so (the page also says it in a <meta>).
_SECURITY_HEADERS: Final = (
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; "
        "connect-src 'self'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-cache"),
)


@dataclass(frozen=True)
class UiAnswer:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


def serves(path: str) -> bool:
    """Whether `path` (without its query) is the page's: `/ui` or under `/ui/`."""
    return path == UI_PREFIX.rstrip("/") or path.startswith(UI_PREFIX)


def answer(method: str, path: str) -> UiAnswer:
    """The answer to `method path` for a path `serves` (the query already split off)."""
    if method not in ("GET", "HEAD"):
        return _text(405, "The memory browser's files are read with GET.", (("Allow", "GET, HEAD"),))
    if path == UI_PREFIX.rstrip("/"):
        return UiAnswer(301, (("Location", UI_PREFIX), ("Content-Length", "0")), b"")
    name = _FILES.get(path[len(UI_PREFIX) :])
    if name is None:
        return _text(404, "Not a file of the memory browser.")
    body = (UI_DIR / name).read_bytes()
    kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
    headers = (("Content-Type", f"{kind}; charset=utf-8"), ("Content-Length", str(len(body))))
    return UiAnswer(200, headers + _SECURITY_HEADERS, body)  # a server sends no body for HEAD


def _text(status: int, message: str, extra: tuple[tuple[str, str], ...] = ()) -> UiAnswer:
    body = (message + "\n").encode()
    headers = (("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))))
    return UiAnswer(status, headers + extra + _SECURITY_HEADERS, body)
