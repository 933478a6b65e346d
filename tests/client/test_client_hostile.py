"""The client against hostile ids and a hostile server (issue 17, "Keep them closed").

An id the API would refuse never reaches a request: `delete_fact("u1", "..")` once sent
`DELETE …/users/u1/memory` and erased the user (client/README.md, "Identifiers"). And a list
that hands out a new cursor on every page cannot outlast a read's budget (client/README.md,
"Never raises").
"""

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from client_test_servers import RecordingServer, job_body, json_answer, memory_body

import hippocampus_client as hc
from hippocampus_client import (
    AsyncMemoryClient,
    Call,
    HttpTransport,
    InvokeTarget,
    InvokeTransport,
    MemoryClient,
)

NAMED = {
    "dot": ".",
    "dotdot": "..",
    "pct-dot": "%2e",
    "pct-dotdot": "%2e%2e",
    "slash": "a/b",
    "empty": "",
    "unicode": "é",
    "129-chars": "x" * 129,
    "newline": "a\n",
}
HOSTILE, HOSTILE_IDS = list(NAMED.values()), list(NAMED)
MODES = [False, True]
MODE_IDS = ["default", "strict"]
Client = MemoryClient | AsyncMemoryClient


class Requests:
    """Every request either transport was asked to make: over HTTP and by `lambda:Invoke`."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def http(self, request: httpx2.Request) -> httpx2.Response:
        self.made.append(f"{request.method} {request.url.raw_path.decode()}")
        return httpx2.Response(200, json=memory_body())

    def invoke(self, **arguments: Any) -> dict[str, Any]:
        self.made.append(f"invoke {arguments.get('FunctionName')}")
        raise AssertionError("no invocation expected")


class RecordingLambda:
    def __init__(self, requests: Requests) -> None:
        self.invoke = requests.invoke


def clients(requests: Requests, strict: bool, tenant: str = "acme") -> list[Client]:
    """A sync and an async client over HTTP, and a sync and an async one over lambda:Invoke."""
    made: list[Client] = []
    for cls in (MemoryClient, AsyncMemoryClient):
        http = HttpTransport("http://hippocampus.test", transport=httpx2.MockTransport(requests.http))
        invoke = InvokeTransport(InvokeTarget.local(), client=RecordingLambda(requests))
        made += [
            cls(tenant=tenant, transport=http, strict=strict),
            cls(tenant=tenant, transport=invoke, strict=strict),
        ]
    return made


def user_methods(user: Any) -> dict[str, Callable[[Any], Any]]:
    """Every method that puts `user` in a path, with what it returns on error in the default mode."""
    return {
        "get": lambda m: m.get(user),
        "get_full": lambda m: m.get_full(user),
        "query": lambda m: m.query(user, "payments?"),
        "context": lambda m: m.context(user, "payments?"),
        "history": lambda m: m.history(user),
        "facts": lambda m: m.facts(user),
        "episodes": lambda m: m.episodes(user),
        "records": lambda m: m.records(user),
        "export": lambda m: m.export(user),
        "add": lambda m: m.add(user, "User: hi\nAssistant: hello"),
        "add_wait": lambda m: m.add(user, "User: hi\nAssistant: hello", wait=True),
        "put": lambda m: m.put(user, "Alice sells candles.", 1),
        "delete": lambda m: m.delete(user),
        "forget": lambda m: m.forget(user),
        "deletion": lambda m: m.deletion(user, "del_1"),
        "delete_fact": lambda m: m.delete_fact(user, "pref"),
        "delete_record": lambda m: m.delete_record(user, "rec_1"),
    }


def id_methods(value: Any) -> dict[str, Callable[[Any], Any]]:
    """Every method that puts a fact, record, job or item id in a request."""
    return {
        "delete_fact": lambda m: m.delete_fact("alice", value),
        "delete_record": lambda m: m.delete_record("alice", value),
        "deletion": lambda m: m.deletion("alice", value),
        "job": lambda m: m.job(value),
        "wait": lambda m: m.wait([value], timeout=0.5),
        "wait_jobs": lambda m: m.wait(["job-1", value], timeout=0.5),
        "add_item_id": lambda m: m.add("alice", [{"id": value, "text": "Prefers email."}]),
        "add_id_option": lambda m: m.add("alice", "User: hi\nAssistant: hello", id=value),
        "add_item_id_wait": lambda m: m.add("alice", [{"id": value, "text": "t"}], wait=True),
    }


def call(client: Client, method: Callable[[Any], Any]) -> Any:
    result = method(client)
    if asyncio.iscoroutine(result):
        return asyncio.run(result)
    return result


def expected_default(name: str) -> object:
    return False if name.startswith("delete") else None


def assert_refused(
    methods: dict[str, Callable[[Any], Any]], strict: bool, field: str, caplog: pytest.LogCaptureFixture
) -> None:
    requests = Requests()
    for client in clients(requests, strict):
        for name, method in methods.items():
            caplog.clear()
            if strict:
                with pytest.raises(hc.InvalidInputError) as raised:
                    call(client, method)
                assert any(detail["field"].startswith(field) for detail in raised.value.details), name
            else:
                with caplog.at_level(logging.WARNING, logger="hippocampus_client"):
                    assert call(client, method) == expected_default(name), name
                assert f"field={field}" in caplog.text, (name, caplog.text)
        assert client.flush(5) if isinstance(client, MemoryClient) else asyncio.run(client.flush(5))
        stats = client.writer_stats()
        assert (stats.queued, stats.sent, stats.failed) == (0, 0, 0)
    assert requests.made == []


@pytest.mark.parametrize("strict", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("user", HOSTILE, ids=HOSTILE_IDS)
def test_a_user_id_the_api_refuses_makes_no_request_on_any_method(
    user: str, strict: bool, caplog: pytest.LogCaptureFixture
) -> None:
    assert_refused(user_methods(user), strict, "user_id", caplog)


@pytest.mark.parametrize("strict", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("value", HOSTILE, ids=HOSTILE_IDS)
def test_a_fact_job_or_item_id_the_api_refuses_makes_no_request(
    value: str, strict: bool, caplog: pytest.LogCaptureFixture
) -> None:
    fields = {
        "delete_fact": "fact_id",
        "delete_record": "record_id",
        "deletion": "receipt_id",
        "job": "job_id",
        "wait": "job_id",
        "wait_jobs": "job_id",
    }
    for name, method in id_methods(value).items():
        assert_refused({name: method}, strict, fields.get(name, "items[0].id"), caplog)


def test_a_user_id_that_is_not_a_string_makes_no_request(caplog: pytest.LogCaptureFixture) -> None:
    for user in (None, 42, b"alice", ["alice"]):
        assert_refused(user_methods(user), False, "user_id", caplog)
        assert_refused(user_methods(user), True, "user_id", caplog)


def test_the_fact_id_dot_dot_no_longer_erases_the_user() -> None:
    requests = Requests()
    for client in clients(requests, strict=False):
        outcome = client.delete_fact("u1", "..")
        assert (asyncio.run(outcome) if asyncio.iscoroutine(outcome) else outcome) is False
    assert requests.made == []


@pytest.mark.parametrize("strict", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("tenant", [t for t in HOSTILE if t], ids=[i for i, t in NAMED.items() if t])
def test_a_tenant_the_api_refuses_is_a_configuration_error_at_construction(
    tenant: str, strict: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = Requests()
    with pytest.raises(hc.ConfigurationError) as raised:
        clients(requests, strict, tenant=tenant)
    assert raised.value.details[0]["field"] == "tenant"
    monkeypatch.setenv("HIPPOCAMPUS_TENANT", tenant)
    with pytest.raises(hc.ConfigurationError):
        MemoryClient(endpoint="http://hippocampus.test", strict=strict)
    assert requests.made == []


@pytest.mark.parametrize("strict", MODES, ids=MODE_IDS)
def test_a_tenant_changed_after_construction_is_refused_before_any_request(
    strict: bool, caplog: pytest.LogCaptureFixture
) -> None:
    requests = Requests()
    for client in clients(requests, strict):
        client.tenant = ".."
        for name, method in (user_methods("alice") | id_methods("job-1")).items():
            if strict:
                with pytest.raises(hc.InvalidInputError):
                    call(client, method)
            else:
                assert call(client, method) == expected_default(name), name
    assert requests.made == []


def test_a_call_built_by_hand_cannot_hold_a_path_that_normalises_away() -> None:
    for path in (
        "/v1/tenants/acme/users/u1/memory/facts/..",
        "/v1/tenants/acme/users/u1/memory/facts/%2E%2E",
        "/v1/tenants/acme/users/./memory",
        "/v1/tenants/acme/users//memory",
        "v1/tenants/acme/users/u1/memory",
    ):
        with pytest.raises(hc.InvalidInputError):
            Call("get_memory", "get_memory", "GET", path, {})
    with pytest.raises(hc.InvalidInputError):
        Call("delete_fact", "ingest", "DELETE", "", {"tenant_id": "acme", "user_id": "u1", "fact_id": ".."})


def test_an_invoke_target_whose_function_name_is_a_dot_segment_is_refused() -> None:
    for name in ("..", ".", "", "a/b", "f\n"):
        with pytest.raises(hc.ConfigurationError):
            InvokeTarget(get_memory=name, ingest="ingest", recall="recall")
    InvokeTarget("arn:aws:lambda:eu-west-1:123456789012:function:hippocampus-get:live", "i", "r")


def test_ids_the_api_accepts_still_reach_their_route() -> None:
    requests = Requests()
    http = HttpTransport("http://hippocampus.test", transport=httpx2.MockTransport(requests.http))
    memory = MemoryClient(tenant="acme", transport=http)
    memory.get("alice@example.com")
    memory.get("a.." + "b" * 125)
    memory.delete_fact("u1", "pref:v1.2-x_y")
    assert requests.made == [
        "GET /v1/tenants/acme/users/alice%40example.com/memory",
        f"GET /v1/tenants/acme/users/a..{'b' * 125}/memory",
        "DELETE /v1/tenants/acme/users/u1/memory/facts/pref%3Av1.2-x_y",
    ]


# --- a list that never ends ---------------------------------------------------------------------


def endless_pages(method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
    """A list route that hands out a new cursor with every page; for the user `looping`, the
    cursors `loop1`, `loop2`, `loop1`, ... (a cycle)."""
    url = urlsplit(path)
    cursor = parse_qs(url.query).get("cursor", [""])[0]
    if "/users/looping/" in url.path:
        next_cursor = "loop2" if cursor == "loop1" else "loop1"
    else:
        next_cursor = f"c{int(cursor[1:] or 0) + 1}"
    page: dict[str, Any] = {"next_cursor": next_cursor}
    if url.path.endswith("/export"):
        page |= {"tenant_id": "acme", "user_id": "alice", "memory": None, "jobs": [job_body()]}
    else:
        page |= {"facts": [{"id": "f", "text": "t"}], "episodes": [{"id": "e", "text": "t"}]}
        page |= {"items": [{"id": "r", "text": "t"}]}  # the records
    return json_answer(200, page)


@pytest.fixture(scope="module")
def pages() -> Iterator[RecordingServer]:
    with RecordingServer(endless_pages) as server:
        yield server


def paged(user: str) -> dict[str, Callable[[Any], Any]]:
    return {
        "facts": lambda m: m.facts(user),
        "episodes": lambda m: m.episodes(user),
        "records": lambda m: m.records(user, include_invalidated=True),
        "export": lambda m: m.export(user),
    }


PAGED = list(paged("alice"))


@pytest.mark.parametrize("strict", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("client_class", [MemoryClient, AsyncMemoryClient], ids=["sync", "async"])
@pytest.mark.parametrize("method", PAGED, ids=PAGED)
def test_endless_pages_end_within_the_read_budget(
    method: str, client_class: type[Client], strict: bool, pages: RecordingServer
) -> None:
    memory = client_class(endpoint=pages.url, tenant="acme", timeout=0.4, strict=strict)
    before = len(pages.requests)
    started = time.monotonic()
    if strict:
        with pytest.raises(hc.RequestTimeoutError):
            call(memory, paged("alice")[method])
    else:
        assert call(memory, paged("alice")[method]) is None
    elapsed = time.monotonic() - started
    assert len(pages.requests) - before > 1, "the pages were followed"
    assert elapsed < 0.4 + 3.0, elapsed  # the 0.4 s budget, with room for a busy machine; not endless


def test_endless_pages_end_within_the_default_three_seconds(pages: RecordingServer) -> None:
    memory = MemoryClient(endpoint=pages.url, tenant="acme")
    started = time.monotonic()
    assert memory.facts("alice") is None
    elapsed = time.monotonic() - started
    # The default read budget is the one kept (not less); the upper bound leaves a busy machine room.
    assert 2.5 <= elapsed < 3.0 + 4.0, elapsed


@pytest.mark.parametrize("strict", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("method", PAGED, ids=PAGED)
def test_a_cursor_given_twice_ends_the_paging(method: str, strict: bool, pages: RecordingServer) -> None:
    memory = MemoryClient(endpoint=pages.url, tenant="acme", strict=strict)
    before = len(pages.requests)
    if strict:
        with pytest.raises(hc.MalformedResponseError):
            paged("looping")[method](memory)
    else:
        assert paged("looping")[method](memory) is None
    # The first page, loop1, loop2: loop1 again is not followed. Only this user's requests count: a
    # request an earlier test gave up on may still reach the shared server meanwhile.
    asked = [request for request in pages.requests[before:] if "/users/looping/" in request[1]]
    assert len(asked) == 3, asked
