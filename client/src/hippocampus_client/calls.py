"""One description per API operation, shared by every transport and by both clients.

A `Call` says everything about one request once, as its route takes it (docs/api.md "Routes"):
the HTTP method, the path template and its ids, the query, the headers and the body. The HTTP
transports send them as a request; the invoke transport sends the same values as the route's
direct-invocation payload (`fields`, docs/api.md "Direct invocation").

A path is built only from checked ids (identifiers.py), and a `Call` refuses, when it is made,
an id field that is no identifier and a path with a segment that an HTTP library or a proxy
would normalise away (empty, `.`, `..`, also percent-encoded): whoever builds it, no transport
can send a request to a route other than the one it names (client/README.md, "Identifiers").
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, unquote

from .errors import InvalidInputError
from .identifiers import check_identifier

FunctionName = Literal["get_memory", "ingest", "recall"]
READ, WRITE = "read", "write"
ID_FIELDS = ("tenant_id", "user_id", "job_id", "fact_id", "record_id", "receipt_id")
TENANT = "/v1/tenants/{tenant_id}"
MEMORY = TENANT + "/users/{user_id}/memory"
JOB = TENANT + "/jobs/{job_id}"
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Call:
    action: str  # the direct-invocation action, also the operation's name in logs
    function: FunctionName
    method: str
    route: str  # the path template, `{name}` for each id; "" for an action with no HTTP route
    ids: dict[str, Any]  # the path's ids by name (an action with no route: its payload fields)
    params: dict[str, str | int | bool] = field(default_factory=dict)  # a bool is `true`/`false` in a URL
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    kind: str = READ  # reads get the client's `timeout`, writes its `write_timeout`
    budget: float | None = None  # a tighter time budget than the kind's (e.g. `wait`'s rest)
    body_as_request: bool = False  # invoked, the body goes as `request` rather than as its fields

    def __post_init__(self) -> None:
        for name in ID_FIELDS:
            if name in self.ids:
                check_identifier(name, self.ids[name])
        _check_path(self.path)

    @property
    def path(self) -> str:
        """The route with its ids, every reserved character encoded (docs/api.md "Routes")."""
        return _PLACEHOLDER.sub(lambda name: quote(self.ids[name[1]], safe=""), self.route)

    @property
    def fields(self) -> dict[str, Any]:
        """The direct-invocation payload but `action`: ids and query by name, headers by their name
        in snake_case (`Idempotency-Key` is `idempotency_key`), the body's fields or `request`."""
        headers = {name.lower().replace("-", "_"): value for name, value in self.headers.items()}
        body = {"request": self.body} if self.body_as_request else self.body or {}
        return self.ids | self.params | headers | body

    def log_ids(self) -> str:
        """The ids of the call for logs: tenant, user, job, fact or record ids; never content."""
        return " ".join(f"{name}={self.ids[name]}" for name in ID_FIELDS if name in self.ids)


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


def _ids(tenant: str, user: str) -> dict[str, Any]:
    return {"tenant_id": tenant, "user_id": user}


def get_memory(tenant: str, user: str) -> Call:
    return Call("get_memory", "get_memory", "GET", MEMORY, _ids(tenant, user))


def get_history(tenant: str, user: str, limit: int) -> Call:
    return Call("get_history", "get_memory", "GET", MEMORY + "/history", _ids(tenant, user), {"limit": limit})


def export_memory(tenant: str, user: str, cursor: str | None) -> Call:
    params: dict[str, str | int] = {"cursor": cursor} if cursor else {}
    return Call("export_memory", "get_memory", "GET", MEMORY + "/export", _ids(tenant, user), params)


def get_job(tenant: str, job_id: str, budget: float | None = None) -> Call:
    return Call("get_job", "get_memory", "GET", JOB, {"tenant_id": tenant, "job_id": job_id}, budget=budget)


def get_usage(tenant: str) -> Call:
    """The tenant's LLM use of the UTC day against its token budget: a route of the tenant, no user."""
    return Call("get_usage", "get_memory", "GET", TENANT + "/usage", {"tenant_id": tenant})


ListName = Literal["facts", "episodes", "records"]


def list_page(
    tenant: str,
    user: str,
    what: ListName,
    limit: int,
    cursor: str | None,
    filters: Mapping[str, str | bool] | None = None,
) -> Call:
    """One page of a list route; `filters` are the list's own parameters (records: `as_of`, ...)."""
    params: dict[str, str | int | bool] = {"limit": limit} | ({"cursor": cursor} if cursor else {})
    params |= filters or {}
    return Call(f"list_{what}", "get_memory", "GET", f"{MEMORY}/{what}", _ids(tenant, user), params)


def query_memory(tenant: str, user: str, request: dict[str, Any]) -> Call:
    ids = _ids(tenant, user)
    return Call("query_memory", "recall", "POST", MEMORY + "/query", ids, body=request, body_as_request=True)


def get_context(tenant: str, user: str, request: dict[str, Any]) -> Call:
    ids = _ids(tenant, user)
    return Call("get_context", "recall", "POST", MEMORY + "/context", ids, body=request, body_as_request=True)


def ingest(
    tenant: str, user: str, items: list[dict[str, Any]], upsert: bool, idempotency_key: str | None
) -> Call:
    for position, item in enumerate(items):
        if isinstance(item, dict) and item.get("id") is not None:
            check_identifier(f"items[{position}].id", item["id"])
    body = {"items": items, "upsert": upsert}
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    return Call(
        "ingest", "ingest", "POST", MEMORY, _ids(tenant, user), body=body, headers=headers, kind=WRITE
    )


def put_memory(tenant: str, user: str, memory: str, expected_version: int) -> Call:
    body = {"memory": memory, "expected_version": expected_version}
    return Call("put_memory", "ingest", "PUT", MEMORY, _ids(tenant, user), body=body, kind=WRITE)


def delete_memory(tenant: str, user: str) -> Call:
    return Call("delete_memory", "ingest", "DELETE", MEMORY, _ids(tenant, user), kind=WRITE)


def get_deletion(tenant: str, user: str, receipt_id: str) -> Call:
    ids = _ids(tenant, user) | {"receipt_id": receipt_id}
    return Call("get_deletion", "get_memory", "GET", MEMORY + "/deletions/{receipt_id}", ids)


def delete_fact(tenant: str, user: str, fact_id: str) -> Call:
    ids = _ids(tenant, user) | {"fact_id": fact_id}
    return Call("delete_fact", "ingest", "DELETE", MEMORY + "/facts/{fact_id}", ids, kind=WRITE)


def delete_record(tenant: str, user: str, record_id: str) -> Call:
    ids = _ids(tenant, user) | {"record_id": record_id}
    return Call("delete_record", "ingest", "DELETE", MEMORY + "/records/{record_id}", ids, kind=WRITE)
