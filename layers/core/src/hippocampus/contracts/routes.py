"""The HTTP routes of the API (docs/api.md) and the function that serves each.

The CDK app builds API Gateway resources from this table, the local stack and the tests build
events with it, and the API uses it to tell 405 (known path, other method) from 404. `match_path`
is the one path-template matcher of the project.
"""

import re
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import unquote

ApiFunctionName = Literal["get_memory", "ingest", "recall"]

TENANT_PREFIX: Final = "/v1/tenants/{tenant_id}"
USERS_PATH: Final = TENANT_PREFIX + "/users"
USAGE_PATH: Final = TENANT_PREFIX + "/usage"
MEMORY_PATH: Final = USERS_PATH + "/{user_id}/memory"
HEALTH_PATH: Final = "/v1/health"
OPENAPI_PATH: Final = "/v1/openapi.json"
HISTORY_PATH: Final = MEMORY_PATH + "/history"
EXPORT_PATH: Final = MEMORY_PATH + "/export"
JOB_PATH: Final = TENANT_PREFIX + "/jobs/{job_id}"
JOBS_PATH: Final = MEMORY_PATH + "/jobs"
FACT_PATH: Final = MEMORY_PATH + "/facts/{fact_id}"
FACTS_PATH: Final = MEMORY_PATH + "/facts"
EPISODES_PATH: Final = MEMORY_PATH + "/episodes"
EPISODE_PATH: Final = EPISODES_PATH + "/{episode_id}"
RECORDS_PATH: Final = MEMORY_PATH + "/records"
RECORD_PATH: Final = RECORDS_PATH + "/{record_id}"
DELETION_PATH: Final = MEMORY_PATH + "/deletions/{receipt_id}"
QUERY_PATH: Final = MEMORY_PATH + "/query"
CONTEXT_PATH: Final = MEMORY_PATH + "/context"

# An agent's scope of a user's memory (docs/api.md "Agent scopes"): the same routes under
# `…/users/{user_id}/agents/{agent_id}/`.
AGENT_PREFIX: Final = USERS_PATH + "/{user_id}/agents/{agent_id}"


def agent_path(user_path: str) -> str:
    """`…/users/{user_id}/memory/facts` → `…/users/{user_id}/agents/{agent_id}/memory/facts`."""
    return AGENT_PREFIX + user_path.removeprefix(USERS_PATH + "/{user_id}")


AGENT_MEMORY_PATH: Final = agent_path(MEMORY_PATH)
# An agent's principal reaches no tenant-level route: it reads one job of its scopes here.
AGENT_JOB_PATH: Final = agent_path(JOBS_PATH) + "/{job_id}"


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: ApiFunctionName


_USER_ROUTES: Final[tuple[Route, ...]] = (
    Route("GET", HEALTH_PATH, "get_memory"),
    Route("GET", OPENAPI_PATH, "get_memory"),
    Route("GET", MEMORY_PATH, "get_memory"),
    Route("GET", HISTORY_PATH, "get_memory"),
    Route("GET", EXPORT_PATH, "get_memory"),
    Route("GET", JOB_PATH, "get_memory"),
    Route("GET", JOBS_PATH, "get_memory"),
    Route("GET", USERS_PATH, "get_memory"),
    Route("GET", USAGE_PATH, "get_memory"),
    Route("GET", FACTS_PATH, "get_memory"),
    Route("GET", EPISODES_PATH, "get_memory"),
    Route("GET", RECORDS_PATH, "get_memory"),
    Route("GET", DELETION_PATH, "get_memory"),
    Route("POST", QUERY_PATH, "recall"),
    Route("POST", CONTEXT_PATH, "recall"),
    Route("POST", MEMORY_PATH, "ingest"),
    Route("PUT", MEMORY_PATH, "ingest"),
    Route("DELETE", MEMORY_PATH, "ingest"),
    Route("DELETE", FACT_PATH, "ingest"),
    Route("DELETE", RECORD_PATH, "ingest"),
    Route("DELETE", EPISODE_PATH, "ingest"),
)
# Every route of a user's memory, in an agent's scope too (docs/api.md "Agent scopes"), and the
# agent's job.
ROUTES: Final[tuple[Route, ...]] = (
    *_USER_ROUTES,
    *(
        Route(r.method, agent_path(r.path), r.function)
        for r in _USER_ROUTES
        if r.path.startswith(MEMORY_PATH)
    ),
    Route("GET", AGENT_JOB_PATH, "get_memory"),
)


def match_path(template: str, path: str) -> dict[str, str] | None:
    """The (percent-decoded) values of the `{name}` segments of `template` in `path`; None if it does not match."""
    template_parts = template.split("/")
    path_parts = path.split("/")
    if len(template_parts) != len(path_parts):
        return None
    values: dict[str, str] = {}
    for expected, actual in zip(template_parts, path_parts, strict=True):
        if expected.startswith("{") and expected.endswith("}"):
            if not actual:
                return None
            values[expected[1:-1]] = unquote(actual)
        elif expected != actual:
            return None
    return values


def match(method: str, path: str) -> Route | None:
    """The route serving `method path`, or None."""
    return next(
        (r for r in ROUTES if r.method == method.upper() and match_path(r.path, path) is not None), None
    )


def resource_of(path: str) -> str | None:
    """The route template `path` belongs to, whatever the method (None: the path is unknown)."""
    return next((r.path for r in ROUTES if match_path(r.path, path) is not None), None)


def allowed_methods(path: str) -> list[str]:
    """Methods the API serves on `path` (empty: the path is unknown)."""
    return sorted({r.method for r in ROUTES if match_path(r.path, path) is not None})


def powertools_path(path: str) -> str:
    """`/v1/tenants/{tenant_id}` → `/v1/tenants/<tenant_id>` (the Powertools resolver's syntax)."""
    return re.sub(r"\{([^/]+)\}", r"<\1>", path)
