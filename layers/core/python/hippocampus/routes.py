"""The HTTP routes of the API (DESIGN §2) and the function that serves each.

The CDK app builds API Gateway resources from this table, the local stack dispatches
with it, and the handlers use it to tell 405 (known path, other method) from 404.
"""

import re
from dataclasses import dataclass
from typing import Final, Literal

FunctionName = Literal["get_memory", "ingest"]

TENANT_PREFIX: Final = "/v1/tenants/{tenant_id}"
MEMORY_PATH: Final = TENANT_PREFIX + "/users/{user_id}/memory"


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: FunctionName


ROUTES: Final[tuple[Route, ...]] = (
    Route("GET", "/v1/health", "get_memory"),
    Route("GET", "/v1/openapi.json", "get_memory"),
    Route("GET", MEMORY_PATH, "get_memory"),
    Route("GET", MEMORY_PATH + "/history", "get_memory"),
    Route("GET", TENANT_PREFIX + "/jobs/{job_id}", "get_memory"),
    Route("POST", MEMORY_PATH, "ingest"),
    Route("PUT", MEMORY_PATH, "ingest"),
    Route("DELETE", MEMORY_PATH, "ingest"),
    Route("DELETE", MEMORY_PATH + "/facts/{fact_id}", "ingest"),
)


def _pattern(path: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\{[^/]+\}", "[^/]+", path) + "$")


_PATTERNS: Final = tuple((route, _pattern(route.path)) for route in ROUTES)


def match(method: str, path: str) -> Route | None:
    """The route serving `method path`, or None."""
    return next((r for r, p in _PATTERNS if r.method == method.upper() and p.match(path)), None)


def allowed_methods(path: str) -> list[str]:
    """Methods the API serves on `path` (empty: the path is unknown)."""
    return sorted({r.method for r, p in _PATTERNS if p.match(path)})


def powertools_path(path: str) -> str:
    """`/v1/tenants/{tenant_id}` → `/v1/tenants/<tenant_id>` (the Powertools resolver's syntax)."""
    return re.sub(r"\{([^/]+)\}", r"<\1>", path)
