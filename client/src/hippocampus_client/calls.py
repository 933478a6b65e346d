"""One description per API operation, shared by every transport and by both clients.

A `Call` says everything about one request once, as its route takes it (docs/api.md "Routes"):
the HTTP method, the path template and its ids, the query, the headers and the body. The HTTP
transports send them as a request; the invoke transport sends the same values as the route's
direct-invocation payload (`fields`, docs/api.md "Direct invocation"). A call on a user's memory
is made for a `Scope`: the user's own routes, or an agent's scope of them, the same routes under
`…/users/{user_id}/agents/{agent_id}/` with their own actions (docs/api.md "Agent scopes").

A path is built only from checked ids (identifiers.py), and a `Call` refuses, when it is made,
an id field that is no identifier and a path with a segment that an HTTP library or a proxy
would normalise away (empty, `.`, `..`, also percent-encoded): whoever builds it, no transport
can send a request to a route other than the one it names (client/README.md, "Identifiers").
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import quote, unquote

from .errors import InvalidInputError
from .identifiers import check_identifier

FunctionName = Literal["get_memory", "ingest", "recall"]
READ, WRITE = "read", "write"
ID_FIELDS = ("tenant_id", "user_id", "agent_id", "job_id", "fact_id", "record_id", "receipt_id")
TENANT = "/v1/tenants/{tenant_id}"
MEMORY = TENANT + "/users/{user_id}/memory"
# An agent's scope of a user's memory: the same routes under `…/agents/{agent_id}/` (docs/api.md
# "Agent scopes").
AGENT_MEMORY = TENANT + "/users/{user_id}/agents/{agent_id}/memory"
JOB = TENANT + "/jobs/{job_id}"
# One job of an agent's items, of its own scope or of the user's shared memory (`getAgentJob`): an
# agent granted only its own routes reads no tenant route (docs/api.md "Agent scopes").
AGENT_JOB = AGENT_MEMORY + "/jobs/{job_id}"
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
INGEST: Final = "ingest"
# The action of an agent's route, by its user route's: the operationId in snake_case, with
# "agent" in it (`getAgentMemory` is `get_agent_memory`; docs/api.md "Direct invocation").
AGENT_ACTIONS: Final = {
    "get_memory": "get_agent_memory",
    INGEST: "ingest_agent_memory",
    "put_memory": "put_agent_memory",
    "delete_memory": "delete_agent_memory",
    "get_history": "get_agent_history",
    "export_memory": "export_agent_memory",
    "list_facts": "list_agent_facts",
    "list_episodes": "list_agent_episodes",
    "list_records": "list_agent_records",
    "delete_fact": "delete_agent_fact",
    "delete_record": "delete_agent_record",
    "get_deletion": "get_agent_deletion",
    "query_memory": "query_agent_memory",
    "get_context": "get_agent_context",
}


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
        """The ids of the call for logs: tenant, user, agent, job, fact or record ids; never content."""
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


@dataclass(frozen=True)
class Scope:
    """Whose memory a call reads or writes: a user's (`agent` None), or an agent's scope of that
    user's memory (docs/api.md "Agent scopes"), whose routes are the user's under `…/agents/{agent_id}/`."""

    tenant: str
    user: str
    agent: str | None = None

    @property
    def ids(self) -> dict[str, Any]:
        """The path's ids: `tenant_id`, `user_id`, and `agent_id` for an agent's scope."""
        ids: dict[str, Any] = {"tenant_id": self.tenant, "user_id": self.user}
        return ids | ({"agent_id": self.agent} if self.agent is not None else {})

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> "Scope":
        """The scope of a call's `fields` (a spooled line's too)."""
        return cls(fields["tenant_id"], fields["user_id"], fields.get("agent_id"))

    def call(self, action: str, function: FunctionName, method: str, suffix: str, **options: Any) -> Call:
        """The call of `action` on this scope's memory route + `suffix`: the user's route and action,
        or the agent's (`AGENT_ACTIONS`); `ids` in `options` are added to the scope's."""
        ids = self.ids | options.pop("ids", {})
        if self.agent is None:
            return Call(action, function, method, MEMORY + suffix, ids, **options)
        return Call(AGENT_ACTIONS[action], function, method, AGENT_MEMORY + suffix, ids, **options)


def is_ingest(call: Call) -> bool:
    """A `POST …/memory` of items, to a user's route or to an agent's."""
    return call.action in (INGEST, AGENT_ACTIONS[INGEST])


def get_memory(scope: Scope) -> Call:
    return scope.call("get_memory", "get_memory", "GET", "")


def get_history(scope: Scope, limit: int) -> Call:
    return scope.call("get_history", "get_memory", "GET", "/history", params={"limit": limit})


def export_memory(scope: Scope, cursor: str | None) -> Call:
    params: dict[str, str | int] = {"cursor": cursor} if cursor else {}
    return scope.call("export_memory", "get_memory", "GET", "/export", params=params)


def get_job(tenant: str, job_id: str, budget: float | None = None, scope: Scope | None = None) -> Call:
    """One job: on the tenant's route (`get_job`), or, given an agent's scope, on that agent's route
    of the user (`get_agent_job`), which serves the jobs of the agent's items, private or shared."""
    if scope is not None and scope.agent is not None:
        ids = scope.ids | {"job_id": job_id}
        return Call("get_agent_job", "get_memory", "GET", AGENT_JOB, ids, budget=budget)
    return Call("get_job", "get_memory", "GET", JOB, {"tenant_id": tenant, "job_id": job_id}, budget=budget)


def get_usage(tenant: str) -> Call:
    """The tenant's LLM use of the UTC day against its token budget: a route of the tenant, no user."""
    return Call("get_usage", "get_memory", "GET", TENANT + "/usage", {"tenant_id": tenant})


ListName = Literal["facts", "episodes", "records"]


def list_page(
    scope: Scope,
    what: ListName,
    limit: int,
    cursor: str | None,
    filters: Mapping[str, str | bool] | None = None,
) -> Call:
    """One page of a list route; `filters` are the list's own parameters (records: `as_of`, ...)."""
    params: dict[str, str | int | bool] = {"limit": limit} | ({"cursor": cursor} if cursor else {})
    params |= filters or {}
    return scope.call(f"list_{what}", "get_memory", "GET", f"/{what}", params=params)


def query_memory(scope: Scope, request: dict[str, Any]) -> Call:
    return scope.call("query_memory", "recall", "POST", "/query", body=request, body_as_request=True)


def get_context(scope: Scope, request: dict[str, Any]) -> Call:
    return scope.call("get_context", "recall", "POST", "/context", body=request, body_as_request=True)


def ingest(scope: Scope, items: list[dict[str, Any]], upsert: bool, idempotency_key: str | None) -> Call:
    for position, item in enumerate(items):
        if isinstance(item, dict) and item.get("id") is not None:
            check_identifier(f"items[{position}].id", item["id"])
    body = {"items": items, "upsert": upsert}
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    return scope.call(INGEST, "ingest", "POST", "", body=body, headers=headers, kind=WRITE)


def put_memory(scope: Scope, memory: str, expected_version: int) -> Call:
    body = {"memory": memory, "expected_version": expected_version}
    return scope.call("put_memory", "ingest", "PUT", "", body=body, kind=WRITE)


def delete_memory(scope: Scope) -> Call:
    return scope.call("delete_memory", "ingest", "DELETE", "", kind=WRITE)


def get_deletion(scope: Scope, receipt_id: str) -> Call:
    ids = {"receipt_id": receipt_id}
    return scope.call("get_deletion", "get_memory", "GET", "/deletions/{receipt_id}", ids=ids)


def delete_fact(scope: Scope, fact_id: str) -> Call:
    ids = {"fact_id": fact_id}
    return scope.call("delete_fact", "ingest", "DELETE", "/facts/{fact_id}", ids=ids, kind=WRITE)


def delete_record(scope: Scope, record_id: str) -> Call:
    ids = {"record_id": record_id}
    return scope.call("delete_record", "ingest", "DELETE", "/records/{record_id}", ids=ids, kind=WRITE)
