"""Every client method as a small program, written once for the sync and the async client.

A program is a generator: it yields a `Call` (and receives its `Reply`) or a `Sleep` (and
receives None), and returns the method's result. `MemoryClient` runs it with blocking I/O,
`AsyncMemoryClient` with `await`: the request building, the paging of `export`, the polling of
`wait` and the parsing of each answer live here only.

A program of several requests keeps one budget for all of them: the pages of a list or an
export share the read's `timeout`, the polls of `wait` its own (client/README.md, "Never raises").
"""

import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from . import calls
from .calls import Call, ListName, Reply, Scope, Sleep
from .errors import ConfigurationError, MalformedResponseError, RequestTimeoutError, WaitTimeoutError
from .identifiers import check_identifier
from .models import (
    AgentMemory,
    Context,
    DeletionReceipt,
    Episode,
    Export,
    Fact,
    Job,
    Memory,
    MemoryRecord,
    MemoryVersion,
    QueryAnswer,
    TenantUsage,
)
from .timestamps import occurred_at

# TypeVars, not PEP 695 syntax: the client supports Python 3.11 (client/pyproject.toml).
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
Program = Generator[Call | Sleep, Any, T]
PAGE_SIZE = 100  # the largest page of the list routes (docs/api.md "Lists")
WAIT_TIMEOUT_S, WAIT_INTERVAL_S = 30.0, 0.25  # `wait`'s defaults: in all, and between two polls


def parse(model: type[M], reply: Reply, **extra: Any) -> M:  # noqa: UP047 - Python 3.11
    """`reply.data` as `model`; an answer of another shape is a `MalformedResponseError`."""
    if not isinstance(reply.data, dict):
        raise MalformedResponseError("the answer is not a JSON object", status=reply.status)
    try:
        return model.model_validate(reply.data | extra)
    except ValidationError as error:
        # Field names and error types only: the values may be a user's content.
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in error.errors()})
        message = f"unexpected {model.__name__} answer (fields: {', '.join(fields)})"
        raise MalformedResponseError(message, status=reply.status, request_id=reply.request_id) from None


def _list_of(model: type[M], reply: Reply, key: str) -> list[M]:  # noqa: UP047 - Python 3.11
    entries = reply.data.get(key) if isinstance(reply.data, dict) else None
    if not isinstance(entries, list):
        raise MalformedResponseError(f"the answer has no list {key!r}", request_id=reply.request_id)
    return [parse(model, Reply(reply.status, entry, request_id=reply.request_id)) for entry in entries]


def get_full(scope: Scope) -> Program[Memory]:
    """The user's memory; for an agent's scope, the agent's own (the one `put` replaces), with
    the answer's ETag (client/README.md "Agent scopes")."""
    if scope.agent is not None:
        both = yield from get_scopes(scope)
        return both.scopes.agent.model_copy(update={"etag": both.etag})
    reply = yield calls.get_memory(scope)
    return parse(Memory, reply, etag=reply.headers.get("etag"))


def get_scopes(scope: Scope) -> Program[AgentMemory]:
    """Both scopes an agent reads: the user's shared memory and the agent's own."""
    if scope.agent is None:
        raise ConfigurationError("get_scopes reads an agent's scopes: make the client with agent=...")
    reply = yield calls.get_memory(scope)
    return parse(AgentMemory, reply, etag=reply.headers.get("etag"))


def get(scope: Scope) -> Program[str | None]:
    memory = yield from get_full(scope)
    return memory.memory


def history(scope: Scope, limit: int) -> Program[list[MemoryVersion]]:
    reply = yield calls.get_history(scope, limit)
    return _list_of(MemoryVersion, reply, "versions")


def job(tenant: str, job_id: str, budget: float | None = None, scope: Scope | None = None) -> Program[Job]:
    """One job: on the agent's route of the user given an agent's `scope`, else on the tenant's."""
    reply = yield calls.get_job(tenant, job_id, budget, scope)
    return parse(Job, reply)


def job_scopes(
    tenant: str, jobs: str | Job | Iterable[str | Job], agent: str | None = None, user: str | None = None
) -> dict[str, Scope | None]:
    """Each job id, in order and once, with where it is polled: for an agent, the agent's route of
    the job's user (`user`, else a `Job`'s `user_id`); the tenant's route (None) for a plain id or
    without an agent. Every id is checked before the first poll: one bad id and no job is asked for."""
    entries = [jobs] if isinstance(jobs, str | Job) else list(jobs)
    found: dict[str, Scope | None] = {}
    for entry in entries:
        job_id = check_identifier("job_id", entry.job_id if isinstance(entry, Job) else entry)
        owner = user or (entry.user_id if isinstance(entry, Job) else None)
        scope = None
        if agent is not None and owner is not None:
            scope = Scope(tenant, check_identifier("user_id", owner), agent)
        if found.get(job_id) is None:  # the same job given as an id and as a Job: the Job's user
            found[job_id] = scope
    return found


def wait(
    tenant: str,
    jobs: str | Job | Iterable[str | Job],
    timeout: float,
    interval: float,
    agent: str | None = None,
    user: str | None = None,
) -> Program[list[Job]]:
    """Poll each job until it is final (completed, failed or skipped; docs/api.md "Jobs"), where
    `job_scopes` says. A `deferred` job (its tenant's daily token budget is spent) is not final: it
    is polled on, and condensed after the budget resets at 00:00 UTC, most likely after `timeout`."""
    wanted = job_scopes(tenant, jobs, agent, user)
    deadline = time.monotonic() + timeout
    final: dict[str, Job] = {}
    while True:
        for job_id, scope in [(j, s) for j, s in wanted.items() if j not in final]:
            budget = max(0.1, deadline - time.monotonic())
            found = yield from job(tenant, job_id, budget, scope)
            if found.final:
                final[job_id] = found
        if len(final) == len(wanted):
            return [final[j] for j in wanted]
        if time.monotonic() + interval > deadline:
            raise WaitTimeoutError(
                f"{len(wanted) - len(final)} of {len(wanted)} jobs not final after {timeout} s"
            )
        yield Sleep(interval)


def usage(tenant: str) -> Program[TenantUsage]:
    reply = yield calls.get_usage(tenant)
    return parse(TenantUsage, reply)


def ingest(call: Call) -> Program[list[Job]]:
    """Send an ingest call (built by `calls.ingest`); the jobs, one per item."""
    reply = yield call
    return _list_of(Job, reply, "jobs")


def ingest_and_wait(call: Call, wait_for: bool | float) -> Program[list[Job]]:
    """`add(..., wait=...)`: send now, then poll the jobs until they are final, for at most
    `WAIT_TIMEOUT_S` seconds (`wait=True`) or the seconds given; an agent's on its route of the
    call's user."""
    jobs = yield from ingest(call)
    timeout = WAIT_TIMEOUT_S if wait_for is True else float(wait_for)
    scope = Scope.of(call.ids)
    return (yield from wait(scope.tenant, jobs, timeout, WAIT_INTERVAL_S, scope.agent, scope.user))


def query(scope: Scope, request: dict[str, Any]) -> Program[QueryAnswer]:
    reply = yield calls.query_memory(scope, request)
    return parse(QueryAnswer, reply)


def context(scope: Scope, request: dict[str, Any]) -> Program[Context]:
    reply = yield calls.get_context(scope, request)
    return parse(Context, reply)


def put(scope: Scope, memory: str, expected_version: int) -> Program[Memory]:
    reply = yield calls.put_memory(scope, memory, expected_version)
    return parse(Memory, reply, etag=reply.headers.get("etag"))


def delete(scope: Scope) -> Program[bool]:
    yield calls.delete_memory(scope)
    return True


def forget(scope: Scope) -> Program[str]:
    """Forget the user (an agent's scope: that scope only); the id of the deletion receipt (a
    header over HTTP, the body when invoked)."""
    reply = yield calls.delete_memory(scope)
    data = reply.data if isinstance(reply.data, dict) else {}
    receipt = reply.headers.get("deletion-receipt") or data.get("receipt_id")
    if not isinstance(receipt, str) or not receipt:
        raise MalformedResponseError("the delete named no deletion receipt")
    return receipt


def deletion(scope: Scope, receipt_id: str) -> Program[DeletionReceipt]:
    reply = yield calls.get_deletion(scope, receipt_id)
    return parse(DeletionReceipt, reply)


def delete_fact(scope: Scope, fact_id: str) -> Program[bool]:
    yield calls.delete_fact(scope, fact_id)
    return True


def delete_record(scope: Scope, record_id: str) -> Program[bool]:
    yield calls.delete_record(scope, record_id)
    return True


class Pages:
    """The cursors of one paged read: all pages within one budget, no cursor followed twice."""

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.deadline = time.monotonic() + budget
        self.seen: set[str] = set()

    def remaining(self) -> float:
        """The budget of the next page: the whole read's for the first, what is left for a later
        one; `RequestTimeoutError` when nothing is. Only a page given a whole read budget may open
        the circuit breaker when it times out (retry.py, `has_full_budget`)."""
        if not self.seen:
            return self.budget
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise RequestTimeoutError("the pages did not all arrive within the time budget")
        return left

    def follow(self, cursor: object, reply: Reply) -> str | None:
        """The cursor of the next page, None at the end; a cursor given twice would loop."""
        if not isinstance(cursor, str) or not cursor:
            return None
        if cursor in self.seen:
            raise MalformedResponseError("the list gave a cursor twice", request_id=reply.request_id)
        self.seen.add(cursor)
        return cursor


def export(scope: Scope, budget: float) -> Program[Export]:
    """Every page of the export, merged: the memory (and `agents`) from the first page, each list
    (items, history, jobs, episodes, records) in order."""
    pages = Pages(budget)
    reply = yield replace(calls.export_memory(scope, None), budget=pages.remaining())
    document = parse(Export, reply)
    cursor = pages.follow(document.next_cursor, reply)
    while cursor:
        reply = yield replace(calls.export_memory(scope, cursor), budget=pages.remaining())
        page = parse(Export, reply)
        document.items += page.items
        document.history += page.history
        document.jobs += page.jobs
        document.episodes += page.episodes
        document.records += page.records
        cursor = pages.follow(page.next_cursor, reply)
    document.next_cursor = None
    return document


@dataclass(frozen=True)
class ListRead:
    """How much of a list to read: the first `limit` entries (None: all), within `budget` seconds."""

    limit: int | None
    budget: float


@dataclass(frozen=True)
class RecordView:
    """Which records to list (docs/api.md "Records"): those true at `as_of`, those the service held
    at `known_at`, the invalidated ones too with `include_invalidated`; by default the current ones."""

    as_of: datetime | str | None = None
    known_at: datetime | str | None = None
    include_invalidated: bool = False

    def filters(self) -> dict[str, str | bool]:
        """The list's parameters, each time checked as `occurred_at` is (timestamps.py):
        `InvalidInputError` naming `as_of` or `known_at`, before any request."""
        found: dict[str, str | bool] = {}
        for name, value in (("as_of", self.as_of), ("known_at", self.known_at)):
            if value is not None:
                found[name] = occurred_at(value, name)
        if self.include_invalidated:
            found["include_invalidated"] = True
        return found


def _pages(  # noqa: UP047 - Python 3.11
    scope: Scope,
    what: ListName,
    model: type[M],
    read: ListRead,
    filters: dict[str, str | bool] | None = None,
) -> Program[list[M]]:
    key = "items" if what == "records" else what  # the answer's list: `{"items": [...]}` for records
    pages = Pages(read.budget)
    found: list[M] = []
    cursor: str | None = None
    while read.limit is None or len(found) < read.limit:
        size = PAGE_SIZE if read.limit is None else min(PAGE_SIZE, read.limit - len(found))
        page = calls.list_page(scope, what, size, cursor, filters)
        reply = yield replace(page, budget=pages.remaining())
        found += _list_of(model, reply, key)
        cursor = pages.follow(reply.data.get("next_cursor"), reply)
        if cursor is None:
            break
    return found


def facts(scope: Scope, read: ListRead) -> Program[list[Fact]]:
    return (yield from _pages(scope, "facts", Fact, read))


def episodes(scope: Scope, read: ListRead) -> Program[list[Episode]]:
    return (yield from _pages(scope, "episodes", Episode, read))


def records(scope: Scope, read: ListRead, view: RecordView) -> Program[list[MemoryRecord]]:
    filters = view.filters()  # checked when the program starts: a bad time sends nothing
    return (yield from _pages(scope, "records", MemoryRecord, read, filters))
