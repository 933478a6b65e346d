"""One description per API operation, shared by every transport and by both clients.

A `Call` says everything about one request once: its HTTP method, path, query and body
(docs/api.md "Routes") and its direct-invocation action and fields (docs/api.md
"Direct invocation"). The HTTP transports read the first half, the invoke transport the second.

A path is built only from checked ids (identifiers.py), and a `Call` refuses, when it is made,
an id field that is no identifier and a path with a segment that an HTTP library or a proxy
would normalise away (empty, `.`, `..`, also percent-encoded): whoever builds it, no transport
can send a request to a route other than the one it names (client/README.md, "Identifiers").
"""

from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, unquote

from .errors import InvalidInputError
from .identifiers import check_identifier

FunctionName = Literal["get_memory", "ingest", "recall"]
READ, WRITE = "read", "write"
ID_FIELDS = ("tenant_id", "user_id", "job_id", "fact_id")


@dataclass(frozen=True)
class Call:
    action: str  # the direct-invocation action, also the operation's name in logs
    function: FunctionName
    method: str
    path: str
    fields: dict[str, Any]  # the direct-invocation payload, without `action`
    params: dict[str, str | int] = field(default_factory=dict)
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    kind: str = READ  # reads get the client's `timeout`, writes its `write_timeout`
    budget: float | None = None  # a tighter time budget than the kind's (e.g. `wait`'s rest)

    def __post_init__(self) -> None:
        for name in ID_FIELDS:
            if name in self.fields:
                check_identifier(name, self.fields[name])
        _check_path(self.path)

    def log_ids(self) -> str:
        """The ids of the call for logs: tenant, user, job or fact ids; never content."""
        return " ".join(f"{name}={self.fields[name]}" for name in ID_FIELDS if name in self.fields)


@dataclass(frozen=True)
class Reply:
    status: int
    data: Any  # the parsed JSON body, None when empty
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    request_id: str | None = None


@dataclass(frozen=True)
class Sleep:
    """Not a request: a pause between polls (`wait`), done by the client as it sleeps."""

    seconds: float


def _check_path(path: str) -> None:
    """A path of absolute, non-empty, non-dot segments; "" for a call with no HTTP route."""
    segments = path.split("/")
    if path and (segments[0] or any(unquote(s) in ("", ".", "..") for s in segments[1:])):
        raise InvalidInputError(
            "the request path has an empty or dot segment",
            details=[{"field": "path", "message": "an empty or dot segment", "type": "path"}],
        )


def _segment(name: str, value: object) -> str:
    """One path segment: a checked id, every reserved character encoded (docs/api.md "Routes")."""
    return quote(check_identifier(name, value), safe="")


def _memory_path(tenant: str, user: str) -> str:
    return f"/v1/tenants/{_segment('tenant_id', tenant)}/users/{_segment('user_id', user)}/memory"


def _ids(tenant: str, user: str) -> dict[str, Any]:
    return {"tenant_id": tenant, "user_id": user}


def get_memory(tenant: str, user: str) -> Call:
    return Call("get_memory", "get_memory", "GET", _memory_path(tenant, user), _ids(tenant, user))


def get_history(tenant: str, user: str, limit: int) -> Call:
    path = _memory_path(tenant, user) + "/history"
    fields = _ids(tenant, user) | {"limit": limit}
    return Call("get_history", "get_memory", "GET", path, fields, params={"limit": limit})


def export_memory(tenant: str, user: str, cursor: str | None) -> Call:
    path = _memory_path(tenant, user) + "/export"
    extra: dict[str, Any] = {"cursor": cursor} if cursor else {}
    return Call("export_memory", "get_memory", "GET", path, _ids(tenant, user) | extra, params=dict(extra))


def get_job(tenant: str, job_id: str, budget: float | None = None) -> Call:
    path = f"/v1/tenants/{_segment('tenant_id', tenant)}/jobs/{_segment('job_id', job_id)}"
    fields = {"tenant_id": tenant, "job_id": job_id}
    return Call("get_job", "get_memory", "GET", path, fields, budget=budget)


def list_page(
    tenant: str, user: str, what: Literal["facts", "episodes"], limit: int, cursor: str | None
) -> Call:
    params: dict[str, str | int] = {"limit": limit} | ({"cursor": cursor} if cursor else {})
    path = f"{_memory_path(tenant, user)}/{what}"
    return Call(f"list_{what}", "get_memory", "GET", path, _ids(tenant, user) | params, params=params)


def query_memory(tenant: str, user: str, request: dict[str, Any]) -> Call:
    path = _memory_path(tenant, user) + "/query"
    fields = _ids(tenant, user) | {"request": request}
    return Call("query_memory", "recall", "POST", path, fields, body=request)


def get_context(tenant: str, user: str, request: dict[str, Any]) -> Call:
    path = _memory_path(tenant, user) + "/context"
    fields = _ids(tenant, user) | {"request": request}
    return Call("get_context", "recall", "POST", path, fields, body=request)


def ingest(
    tenant: str, user: str, items: list[dict[str, Any]], upsert: bool, idempotency_key: str | None
) -> Call:
    for position, item in enumerate(items):
        if isinstance(item, dict) and item.get("id") is not None:
            check_identifier(f"items[{position}].id", item["id"])
    body = {"items": items, "upsert": upsert}
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    fields = _ids(tenant, user) | body | ({"idempotency_key": idempotency_key} if idempotency_key else {})
    path = _memory_path(tenant, user)
    return Call("ingest", "ingest", "POST", path, fields, body=body, headers=headers, kind=WRITE)


def put_memory(tenant: str, user: str, memory: str, expected_version: int) -> Call:
    body = {"memory": memory, "expected_version": expected_version}
    fields = _ids(tenant, user) | body
    return Call("put_memory", "ingest", "PUT", _memory_path(tenant, user), fields, body=body, kind=WRITE)


def delete_memory(tenant: str, user: str) -> Call:
    path = _memory_path(tenant, user)
    return Call("delete_memory", "ingest", "DELETE", path, _ids(tenant, user), kind=WRITE)


def delete_fact(tenant: str, user: str, fact_id: str) -> Call:
    path = f"{_memory_path(tenant, user)}/facts/{_segment('fact_id', fact_id)}"
    fields = _ids(tenant, user) | {"fact_id": fact_id}
    return Call("delete_fact", "ingest", "DELETE", path, fields, kind=WRITE)
