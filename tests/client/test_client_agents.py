"""Agent scopes in the client (client/README.md "Agent scopes", docs/api.md "Agent scopes"): a client
made with `agent=` sends every per-user call to the agent's routes (HTTP paths and direct-invocation
actions), jobs are polled on the agent's route when their user is known, `add(share=True)` is an
agent's only, the background writer and the spool keep each item's scope, and `hippocampus --agent`
and `hippocampus-mcp --agent` reach the same routes."""

import asyncio
import io
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner, Result
from client_test_servers import (
    Answer,
    Recorder,
    RecordingServer,
    closed_port,
    envelope,
    fake_clock,
    job_body,
    json_answer,
    memory_body,
    mocked,
    mocked_async,
)
from mcp import Client
from mcp.types import CallToolResult

from hippocampus_client import (
    AgentMemory,
    ConfigurationError,
    InvalidInputError,
    InvokeTarget,
    InvokeTransport,
    Job,
    Memory,
    MemoryClient,
    cli_ui,
)
from hippocampus_client.cli import cli
from hippocampus_client.mcp_server import _options, build_server
from hippocampus_client.writer import Unsent

USER = "/v1/tenants/acme/users/alice/memory"
AGENT = "/v1/tenants/acme/users/alice/agents/research/memory"
TENANT_JOBS = "/v1/tenants/acme/jobs"
IDS = {"tenant_id": "acme", "user_id": "alice", "agent_id": "research"}


def agent_memory_body() -> dict[str, Any]:
    """`GET …/agents/research/memory`: the user's shared scope and the agent's own."""
    own = memory_body("Prefers short answers.", 2) | {"agent_id": "research", "word_count": 3}
    return IDS | {"scopes": {"shared": memory_body("Alice sells candles.", 5), "agent": own}}


def jobs_answer(count: int = 1) -> httpx2.Response:
    return httpx2.Response(202, json={"jobs": [job_body(f"job-{n}") for n in range(count)]})


def agent_client(handler: Callable[[httpx2.Request], httpx2.Response], **options: Any) -> MemoryClient:
    return mocked(handler, agent="research", **options)


# --- the agent id -------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["", "..", "a/b", "%2e", "é", "x" * 129, "a\n", 7])
def test_an_agent_that_is_no_id_is_refused_when_the_client_is_made(agent: Any) -> None:
    with pytest.raises(ConfigurationError) as refused:
        mocked(Recorder(httpx2.Response(200, json={})), agent=agent)
    assert refused.value.details[0]["field"] == "agent"


def test_the_agent_is_in_the_repr_and_no_variable_makes_a_client_an_agents(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HIPPOCAMPUS_AGENT", "research")
    user = mocked(Recorder(httpx2.Response(200, json=memory_body())))
    assert user.agent is None and "agent" not in repr(user)
    assert "agent='research'" in repr(agent_client(Recorder(httpx2.Response(200, json={}))))


# --- HTTP: every per-user method on the agent's routes -----------------------------------------


def answer_for(request: httpx2.Request) -> httpx2.Response:
    path, method = request.url.path, request.method
    if path.endswith("/facts") or path.endswith("/episodes"):
        return httpx2.Response(200, json={path.rsplit("/", 1)[1]: [], "next_cursor": None})
    if path.endswith("/records"):
        return httpx2.Response(200, json={"items": [], "next_cursor": None})
    if path.endswith("/history"):
        return httpx2.Response(200, json={"versions": []})
    if path.endswith("/export"):
        return httpx2.Response(200, json=IDS | {"next_cursor": None})
    if path.endswith("/query"):
        return httpx2.Response(
            200, json={"results": [{"type": "fact", "id": "p", "text": "t", "scope": "shared"}]}
        )
    if path.endswith("/context"):
        return httpx2.Response(200, json={"context": "c", "word_count": 1})
    if "/deletions/" in path:
        counts = {"dynamodb": {}, "s3": {}, "queue": {}, "vectors": {}}
        return httpx2.Response(200, json={"receipt_id": "del_1", "scope": "user", "erased": counts} | IDS)
    if "/jobs/" in path:
        return httpx2.Response(200, json=job_body(status="completed"))
    if method == "POST":
        return jobs_answer()
    if method == "PUT":
        return httpx2.Response(200, json=memory_body("New.", 3) | {"agent_id": "research"})
    if method == "DELETE":
        return httpx2.Response(204, headers={"Deletion-Receipt": "del_1"})
    return httpx2.Response(200, json=agent_memory_body(), headers={"ETag": '"2-abc"'})


METHODS: dict[str, tuple[Callable[[MemoryClient], Any], str, str]] = {
    "get": (lambda m: m.get("alice"), "GET", AGENT),
    "get_full": (lambda m: m.get_full("alice"), "GET", AGENT),
    "get_scopes": (lambda m: m.get_scopes("alice"), "GET", AGENT),
    "query": (lambda m: m.query("alice", "payments?"), "POST", AGENT + "/query"),
    "context": (lambda m: m.context("alice", "payments?"), "POST", AGENT + "/context"),
    "history": (lambda m: m.history("alice"), "GET", AGENT + "/history"),
    "facts": (lambda m: m.facts("alice"), "GET", AGENT + "/facts"),
    "episodes": (lambda m: m.episodes("alice"), "GET", AGENT + "/episodes"),
    "records": (lambda m: m.records("alice"), "GET", AGENT + "/records"),
    "export": (lambda m: m.export("alice"), "GET", AGENT + "/export"),
    "add": (lambda m: m.add("alice", "I sell candles."), "POST", AGENT),
    "put": (lambda m: m.put("alice", "New.", 2), "PUT", AGENT),
    "delete": (lambda m: m.delete("alice"), "DELETE", AGENT),
    "forget": (lambda m: m.forget("alice"), "DELETE", AGENT),
    "deletion": (lambda m: m.deletion("alice", "del_1"), "GET", AGENT + "/deletions/del_1"),
    "delete_fact": (lambda m: m.delete_fact("alice", "pay"), "DELETE", AGENT + "/facts/pay"),
    "delete_record": (lambda m: m.delete_record("alice", "rec_1"), "DELETE", AGENT + "/records/rec_1"),
    "job of a user": (lambda m: m.job("job-1", user="alice"), "GET", AGENT + "/jobs/job-1"),
    "wait for a Job": (lambda m: m.wait(Job.model_validate(job_body())), "GET", AGENT + "/jobs/job-1"),
    "job (a tenant's route)": (lambda m: m.job("job-1"), "GET", TENANT_JOBS + "/job-1"),
    "wait for a job id (a tenant's route)": (lambda m: m.wait("job-1"), "GET", TENANT_JOBS + "/job-1"),
}


@pytest.mark.parametrize(("method", "verb", "path"), METHODS.values(), ids=METHODS.keys())
def test_every_per_user_method_of_an_agents_client_calls_the_agents_route(
    method: Callable[[MemoryClient], Any], verb: str, path: str
) -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return answer_for(request)

    result = method(agent_client(handler, strict=True))
    assert result is not None and result is not False
    assert [(r.method, r.url.path) for r in seen] == [(verb, path)]


def test_get_and_get_full_read_the_agents_own_scope_and_get_scopes_both() -> None:
    memory = agent_client(answer_for, strict=True)
    assert memory.get("alice") == "Prefers short answers."
    own = memory.get_full("alice")
    assert isinstance(own, Memory) and (own.version, own.etag) == (2, '"2-abc"')
    assert own.agent_id == "research"
    both = memory.get_scopes("alice")
    assert isinstance(both, AgentMemory)
    assert (both.tenant_id, both.user_id, both.agent_id, both.etag) == (
        "acme",
        "alice",
        "research",
        '"2-abc"',
    )
    assert both.scopes.shared.memory == "Alice sells candles." and both.scopes.shared.version == 5
    assert both.scopes.agent.memory == "Prefers short answers."


def test_get_scopes_needs_an_agent_and_a_user_answer_is_malformed_for_an_agent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder = Recorder(httpx2.Response(200, json=memory_body()))
    assert mocked(recorder).get_scopes("alice") is None
    with pytest.raises(ConfigurationError, match="agent"):
        mocked(recorder, strict=True).get_scopes("alice")
    assert recorder.requests == [], "nothing sent"
    # A user's body where an agent's is expected: the answer of another shape, not a wrong summary.
    assert agent_client(recorder).get("alice") is None
    assert "malformed_response" in caplog.text


def test_query_results_keep_their_scope() -> None:
    answer = agent_client(answer_for, strict=True).query("alice", "payments?")
    assert answer is not None
    assert [result.scope for result in answer.results] == ["shared"]


def test_the_async_client_calls_the_same_routes() -> None:
    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(f"{request.method} {request.url.path}")
        return answer_for(request)

    async def scenario() -> tuple[Any, ...]:
        memory = mocked_async(handler, agent="research", strict=True)
        try:
            return (
                await memory.get("alice"),
                await memory.get_scopes("alice"),
                await memory.add("alice", "Prefers email.", share=True),
                await memory.forget("alice"),
            )
        finally:
            await memory.aclose()

    text, both, jobs, receipt = asyncio.run(scenario())
    assert text == "Prefers short answers." and isinstance(both, AgentMemory)
    assert jobs is not None and receipt == "del_1"
    assert seen == [f"GET {AGENT}", f"GET {AGENT}", f"POST {AGENT}", f"DELETE {AGENT}"]


# --- share ---------------------------------------------------------------------------------------


def test_share_sets_share_on_each_item_an_item_of_its_own_keeps_its_own() -> None:
    recorder = Recorder(jobs_answer(2))
    memory = agent_client(recorder, strict=True)
    memory.add("alice", "User: I sell candles.\nAssistant: Nice!", share=True)
    memory.add("alice", [{"text": "Prefers email."}, {"text": "Private note.", "share": False}], share=True)
    memory.add("alice", "The agent's own note.")
    assert [r.url.path for r in recorder.requests] == [AGENT] * 3
    assert [body["items"] for body in recorder.bodies()] == [
        [{"text": "User: I sell candles.\nAssistant: Nice!", "share": True}],
        [{"text": "Prefers email.", "share": True}, {"text": "Private note.", "share": False}],
        [{"text": "The agent's own note."}],
    ]


def test_share_without_an_agent_is_refused_before_any_request(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="hippocampus_client")
    recorder = Recorder(jobs_answer())
    with pytest.raises(InvalidInputError) as refused:
        mocked(recorder, strict=True).add("alice", "Prefers email.", share=True)
    assert [detail["field"] for detail in refused.value.details] == ["share"]
    memory = mocked(recorder)
    assert memory.add("alice", "Prefers email.", share=True) is None
    assert memory.flush(2) and memory.writer_stats().queued == 0
    assert recorder.requests == [], "nothing sent, nothing queued"
    assert "field=share" in caplog.text and "Prefers" not in caplog.text


@pytest.mark.parametrize("share", ["yes", 1, None])
def test_share_is_true_or_false(share: Any) -> None:
    recorder = Recorder(jobs_answer())
    with pytest.raises(InvalidInputError, match="share"):
        agent_client(recorder, strict=True).add("alice", "Prefers email.", share=share)
    assert recorder.requests == []


# --- direct invocation: the agent actions ------------------------------------------------------


TARGET = InvokeTarget(get_memory="fn-get", ingest="fn-ingest", recall="fn-recall")


class FakeLambda:
    """The `invoke` of a botocore lambda client: records each payload, answers by action."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:
        payload = json.loads(Payload)
        self.calls.append((FunctionName, payload))
        action = payload["action"]
        answers: dict[str, Any] = {
            "get_agent_memory": agent_memory_body(),
            "get_agent_history": {"versions": []},
            "export_agent_memory": IDS | {"next_cursor": None},
            "list_agent_facts": {"facts": [], "next_cursor": None},
            "list_agent_episodes": {"episodes": [], "next_cursor": None},
            "list_agent_records": {"items": [], "next_cursor": None},
            "query_agent_memory": {"results": []},
            "get_agent_context": {"context": "c", "word_count": 1},
            "ingest_agent_memory": {"jobs": [job_body()]},
            "put_agent_memory": memory_body("New.", 3) | {"agent_id": "research"},
            "delete_agent_memory": {"receipt_id": "del_1"},
            "get_agent_deletion": IDS
            | {
                "receipt_id": "del_1",
                "scope": "user",
                "erased": {"dynamodb": {}, "s3": {}, "queue": {}, "vectors": {}},
            },
            "get_agent_job": job_body(status="completed"),
            "get_job": job_body(status="completed"),
            "delete_agent_fact": {},
            "delete_agent_record": {},
        }
        raw = json.dumps(answers[action]).encode()
        metadata = {"RequestId": "lambda-req-1", "HTTPStatusCode": 200}
        return {"StatusCode": 200, "Payload": io.BytesIO(raw), "ResponseMetadata": metadata}


INVOKED: dict[str, tuple[Callable[[MemoryClient], Any], str, dict[str, Any]]] = {
    "get": (lambda m: m.get("alice"), "fn-get", {"action": "get_agent_memory"}),
    "history": (lambda m: m.history("alice", 5), "fn-get", {"action": "get_agent_history", "limit": 5}),
    "export": (lambda m: m.export("alice"), "fn-get", {"action": "export_agent_memory"}),
    "facts": (lambda m: m.facts("alice", 7), "fn-get", {"action": "list_agent_facts", "limit": 7}),
    "episodes": (lambda m: m.episodes("alice", 7), "fn-get", {"action": "list_agent_episodes", "limit": 7}),
    "records": (
        lambda m: m.records("alice", limit=7),
        "fn-get",
        {"action": "list_agent_records", "limit": 7},
    ),
    "deletion": (
        lambda m: m.deletion("alice", "del_1"),
        "fn-get",
        {"action": "get_agent_deletion", "receipt_id": "del_1"},
    ),
    "query": (
        lambda m: m.query("alice", "payments?", top_k=3),
        "fn-recall",
        {"action": "query_agent_memory", "request": {"query": "payments?", "top_k": 3}},
    ),
    "context": (
        lambda m: m.context("alice", max_words=50),
        "fn-recall",
        {"action": "get_agent_context", "request": {"max_words": 50}},
    ),
    "add": (
        lambda m: m.add("alice", "Prefers email.", share=True, idempotency_key="k1"),
        "fn-ingest",
        {
            "action": "ingest_agent_memory",
            "items": [{"text": "Prefers email.", "share": True}],
            "upsert": True,
            "idempotency_key": "k1",
        },
    ),
    "put": (
        lambda m: m.put("alice", "New.", 2),
        "fn-ingest",
        {"action": "put_agent_memory", "memory": "New.", "expected_version": 2},
    ),
    "forget": (lambda m: m.forget("alice"), "fn-ingest", {"action": "delete_agent_memory"}),
    "job": (
        lambda m: m.job("job-1", user="alice"),
        "fn-get",
        {"action": "get_agent_job", "job_id": "job-1"},
    ),
    "wait": (
        lambda m: m.wait(Job.model_validate(job_body())),
        "fn-get",
        {"action": "get_agent_job", "job_id": "job-1"},
    ),
    "delete_fact": (
        lambda m: m.delete_fact("alice", "pay"),
        "fn-ingest",
        {"action": "delete_agent_fact", "fact_id": "pay"},
    ),
    "delete_record": (
        lambda m: m.delete_record("alice", "rec_1"),
        "fn-ingest",
        {"action": "delete_agent_record", "record_id": "rec_1"},
    ),
}


@pytest.mark.parametrize(("method", "function", "payload"), INVOKED.values(), ids=INVOKED.keys())
def test_invoked_an_agents_client_sends_the_agent_actions_with_the_agent_id(
    method: Callable[[MemoryClient], Any], function: str, payload: dict[str, Any]
) -> None:
    fake = FakeLambda()
    memory = MemoryClient(
        tenant="acme", agent="research", strict=True, transport=InvokeTransport(TARGET, client=fake)
    )
    assert method(memory) is not None
    assert fake.calls == [(function, {**payload, **IDS} | {"action": payload["action"]})]
    assert fake.calls[0][1]["agent_id"] == "research"


def test_invoked_an_agents_client_reads_a_plain_job_id_with_the_tenants_action() -> None:
    fake = FakeLambda()
    memory = MemoryClient(
        tenant="acme", agent="research", strict=True, transport=InvokeTransport(TARGET, client=fake)
    )
    assert memory.job("job-1") is not None and memory.wait(["job-1"]) is not None
    assert fake.calls == [("fn-get", {"action": "get_job", "tenant_id": "acme", "job_id": "job-1"})] * 2


# --- jobs: on the agent's route when the user is known -----------------------------------------


def job_answer(seen: list[tuple[str, str]], posted: dict[str, Any] | None = None) -> Any:
    """Records each request; answers a POST with `posted` (or one queued job), a job read with that
    job, completed."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append((request.method, request.url.path))
        if request.method == "POST":
            return httpx2.Response(202, json=posted or {"jobs": [job_body("job-0")]})
        return httpx2.Response(200, json=job_body(request.url.path.rsplit("/", 1)[1], "completed"))

    return handler


def test_add_wait_polls_the_agents_route_of_the_user_it_added_to() -> None:
    seen: list[tuple[str, str]] = []
    # A job answered without its user_id is polled for the add's user all the same.
    posted = {"jobs": [{"job_id": "job-0", "status": "queued"}, job_body("job-1")]}
    memory = agent_client(job_answer(seen, posted), strict=True)
    jobs = memory.add("alice", [{"text": "Private."}, {"text": "Shared.", "share": True}], wait=True)
    assert jobs is not None and [(j.job_id, j.status) for j in jobs] == [
        ("job-0", "completed"),
        ("job-1", "completed"),
    ]
    assert seen == [("POST", AGENT), ("GET", AGENT + "/jobs/job-0"), ("GET", AGENT + "/jobs/job-1")]


def test_wait_polls_each_job_on_its_users_agent_route_and_a_plain_id_on_the_tenants() -> None:
    seen: list[tuple[str, str]] = []
    alices = Job.model_validate(job_body("job-1"))
    bobs = Job.model_validate(job_body("job-2") | {"user_id": "bob"})
    done = agent_client(job_answer(seen), strict=True).wait(["job-1", alices, bobs, "job-3", "job-2"])
    assert done is not None and [job.job_id for job in done] == ["job-1", "job-2", "job-3"]
    assert seen == [  # a job given as an id and as a Job: polled once, on the Job's user's route
        ("GET", AGENT + "/jobs/job-1"),
        ("GET", "/v1/tenants/acme/users/bob/agents/research/memory/jobs/job-2"),
        ("GET", TENANT_JOBS + "/job-3"),
    ]


def test_a_users_client_reads_jobs_on_the_tenants_route_whatever_it_is_given() -> None:
    seen: list[tuple[str, str]] = []
    memory = mocked(job_answer(seen), strict=True)
    assert memory.job("job-1", user="alice") is not None
    assert memory.wait(Job.model_validate(job_body())) is not None
    assert memory.add("alice", "I sell candles.", wait=True) is not None
    assert seen == [
        ("GET", TENANT_JOBS + "/job-1"),
        ("GET", TENANT_JOBS + "/job-1"),
        ("POST", USER),
        ("GET", TENANT_JOBS + "/job-0"),
    ]


def test_a_jobs_user_that_is_no_id_is_refused_before_any_poll() -> None:
    seen: list[tuple[str, str]] = []
    memory = agent_client(job_answer(seen), strict=True)
    strange = Job.model_validate(job_body("job-2") | {"user_id": ".."})
    with pytest.raises(InvalidInputError) as refused:
        memory.wait([Job.model_validate(job_body()), strange])
    assert [detail["field"] for detail in refused.value.details] == ["user_id"]
    with pytest.raises(InvalidInputError) as refused:
        memory.job("job-1", user="a/b")
    assert [detail["field"] for detail in refused.value.details] == ["user_id"]
    assert agent_client(job_answer(seen)).job("job-1", user="..") is None
    assert seen == []


def test_the_async_client_polls_jobs_on_the_agents_route() -> None:
    seen: list[tuple[str, str]] = []

    async def scenario() -> tuple[Any, ...]:
        memory = mocked_async(job_answer(seen), agent="research", strict=True)
        try:
            return (
                await memory.job("job-1", user="alice"),
                await memory.wait([Job.model_validate(job_body()), "job-2"]),
                await memory.add("alice", "Prefers email.", wait=True),
                await memory.job("job-1"),
            )
        finally:
            await memory.aclose()

    assert all(result is not None for result in asyncio.run(scenario()))
    assert seen == [
        ("GET", AGENT + "/jobs/job-1"),
        ("GET", AGENT + "/jobs/job-1"),
        ("GET", TENANT_JOBS + "/job-2"),
        ("POST", AGENT),
        ("GET", AGENT + "/jobs/job-0"),
        ("GET", TENANT_JOBS + "/job-1"),
    ]


def test_wait_given_the_user_polls_plain_job_ids_on_the_agents_route() -> None:
    seen: list[tuple[str, str]] = []
    memory = agent_client(job_answer(seen), strict=True)
    assert memory.wait(["job-1", "job-2"], user="alice") is not None
    # `user` wins over a Job's own (the agent's route of the user given), and a user's client ignores it.
    assert memory.wait(Job.model_validate(job_body("job-3") | {"user_id": "bob"}), user="alice") is not None
    assert mocked(job_answer(seen), strict=True).wait("job-4", user="alice") is not None

    async def scenario() -> Any:
        client = mocked_async(job_answer(seen), agent="research", strict=True)
        try:
            return await client.wait("job-5", user="alice")
        finally:
            await client.aclose()

    assert asyncio.run(scenario()) is not None
    assert seen == [
        ("GET", AGENT + "/jobs/job-1"),
        ("GET", AGENT + "/jobs/job-2"),
        ("GET", AGENT + "/jobs/job-3"),
        ("GET", TENANT_JOBS + "/job-4"),
        ("GET", AGENT + "/jobs/job-5"),
    ]
    with pytest.raises(InvalidInputError) as refused:
        memory.wait("job-1", user="..")
    assert [detail["field"] for detail in refused.value.details] == ["user_id"]


# --- the background writer and the spool -------------------------------------------------------


def test_the_background_writer_sends_an_agents_adds_to_its_route() -> None:
    recorder = Recorder(jobs_answer())
    with agent_client(recorder) as memory:
        memory.add("alice", "one", id="a-1")
        memory.add("alice", "two", id="a-2", share=True)
        assert memory.flush(5)
    # Merged into one request when both were queued before a thread took the first: either way,
    # every request goes to the agent's route, the items in order.
    assert {r.url.path for r in recorder.requests} == {AGENT}
    assert [item for body in recorder.bodies() for item in body["items"]] == [
        {"text": "one", "id": "a-1"},
        {"text": "two", "id": "a-2", "share": True},
    ]


def test_what_an_agents_client_left_unsent_is_spooled_with_its_agent_and_sent_to_its_route(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="hippocampus_client")
    spool = tmp_path / "unsent.jsonl"
    reported: list[list[Unsent]] = []
    dead = f"http://127.0.0.1:{closed_port()}"
    memory = MemoryClient(
        endpoint=dead, tenant="acme", agent="research", spool_path=spool, on_unsent=reported.append
    )
    memory.add("alice", "private", id="a-1")
    assert memory.close(5) is False
    assert reported == [[Unsent("alice", ["a-1"], "research")]]
    assert "user_id=alice agent_id=research items=1 item_ids=a-1" in caplog.text
    (line,) = [json.loads(text) for text in spool.read_text().splitlines()]
    assert line["agent_id"] == "research" and line["items"] == [{"text": "private", "id": "a-1"}]
    # A user's line of the same user, spooled by a client without an agent: another scope, never merged.
    with spool.open("a") as file:
        file.write(
            json.dumps(
                {
                    "tenant_id": "acme",
                    "user_id": "alice",
                    "items": [{"text": "shared", "id": "u-1"}],
                    "upsert": True,
                }
            )
            + "\n"
        )
    recorder = Recorder(jobs_answer())
    with mocked(recorder, spool_path=spool) as user:  # a client without an agent: the user's line only
        assert user.flush(5)
    with agent_client(recorder, spool_path=spool) as research:  # the agent's client: the agent's line
        assert research.flush(5)
    sent = [(r.url.path, [item["id"] for item in body["items"]]) for r, body in zip(
        recorder.requests, recorder.bodies(), strict=True
    )]  # fmt: skip
    assert sent == [(USER, ["u-1"]), (AGENT, ["a-1"])]
    assert not spool.exists() or spool.read_text() == ""


def spooled(tenant: str, agent: str | None, item_id: str) -> dict[str, Any]:
    """A spool line (spool.py) of alice: a user's, or with `agent` an agent's scope's."""
    line = {"tenant_id": tenant, "user_id": "alice", "items": [{"text": "t", "id": item_id}], "upsert": True}
    return line | ({"agent_id": agent} if agent is not None else {})


def spooled_ids(spool: Path) -> list[str]:
    lines = [json.loads(text) for text in spool.read_text().splitlines()] if spool.exists() else []
    return sorted(item["id"] for line in lines for item in line["items"])


def test_a_client_claims_only_the_spooled_lines_of_its_own_scope(tmp_path: Path) -> None:
    spool = tmp_path / "unsent.jsonl"
    lines = [
        spooled("acme", None, "u-1"),
        spooled("acme", "research", "r-1"),
        spooled("acme", "support", "s-1"),
        spooled("acme", "research", "r-2"),
        spooled("globex", "research", "g-1"),
    ]
    spool.write_text("".join(json.dumps(line) + "\n" for line in lines))
    seen: list[tuple[str, list[str]]] = []

    def granted_only(path: str) -> Callable[[httpx2.Request], httpx2.Response]:
        """A caller granted one scope's routes: any other is refused, as the service does (403)."""

        def handler(request: httpx2.Request) -> httpx2.Response:
            if request.url.path != path:
                return httpx2.Response(403, json=envelope("access_denied", 403))
            seen.append((path, [item["id"] for item in json.loads(request.content)["items"]]))
            return jobs_answer()

        return handler

    # An agent's client sends its agent's lines, and leaves the user's and the other agent's.
    with agent_client(granted_only(AGENT), spool_path=spool) as research:
        assert research.flush(5)
        assert research.writer_stats().failed == 0
    assert sorted(i for _, ids in seen for i in ids) == ["r-1", "r-2"]
    assert spooled_ids(spool) == ["g-1", "s-1", "u-1"]
    # A user's client sends the user's lines only: no other agent's scope leaks into the shared memory.
    seen.clear()
    with mocked(granted_only(USER), spool_path=spool) as user:
        assert user.flush(5) and user.writer_stats().failed == 0
    assert seen == [(USER, ["u-1"])] and spooled_ids(spool) == ["g-1", "s-1"]
    support = "/v1/tenants/acme/users/alice/agents/support/memory"
    seen.clear()
    with mocked(granted_only(support), agent="support", spool_path=spool) as other:
        assert other.flush(5) and other.writer_stats().failed == 0
    assert seen == [(support, ["s-1"])] and spooled_ids(spool) == ["g-1"]


def test_unsent_still_unpacks_as_user_and_item_ids_and_names_its_agent(tmp_path: Path) -> None:
    unpacked: list[tuple[str, list[str | None], str | None]] = []

    def on_unsent(unsent: list[Unsent]) -> None:
        for user, ids in unsent:  # a callback written before agent scopes
            unpacked.append((user, ids, None))
        unpacked.extend((entry.user_id, entry.item_ids, entry.agent_id) for entry in unsent)

    dead = f"http://127.0.0.1:{closed_port()}"
    memory = MemoryClient(endpoint=dead, tenant="acme", agent="research", on_unsent=on_unsent)
    memory.add("alice", "private", id="a-1")
    assert memory.close(5) is False
    assert unpacked == [("alice", ["a-1"], None), ("alice", ["a-1"], "research")]
    entry = Unsent("alice", ["a-1"], "research")
    user, ids = entry
    assert (user, ids, len(entry), entry[0], tuple(entry)) == (
        "alice",
        ["a-1"],
        2,
        "alice",
        ("alice", ["a-1"]),
    )
    assert entry == ("alice", ["a-1"]) and Unsent("alice", ["a-1"]).agent_id is None
    assert entry != Unsent("alice", ["a-1"]) and entry != Unsent("alice", ["a-1"], "support")
    assert entry._replace(user_id="bob").agent_id == "research"
    assert "agent_id='research'" in repr(entry)


# --- the CLI ---------------------------------------------------------------------------------------


class FakeRoutes(RecordingServer):
    """Answers `(method, path)` from `answers`; anything else is a 404 `not_found`, as the API's."""

    def __init__(self) -> None:
        self.answers: dict[tuple[str, str], Answer] = {}
        super().__init__(
            lambda method, path, body: (
                self.answers.get((method, path.split("?")[0])) or json_answer(404, envelope("not_found", 404))
            )
        )

    def seen(self) -> list[tuple[str, str, Any]]:
        return [(m, p.split("?")[0], json.loads(b) if b else None) for m, p, b in self.requests]


@pytest.fixture(scope="module")
def routes_server() -> Iterator[FakeRoutes]:
    with FakeRoutes() as server:
        yield server


@pytest.fixture
def routes(routes_server: FakeRoutes) -> FakeRoutes:
    routes_server.answers.clear()
    routes_server.requests.clear()
    routes_server.answers["GET", AGENT] = json_answer(200, agent_memory_body())
    routes_server.answers["POST", AGENT] = json_answer(202, {"jobs": [job_body()]})
    routes_server.answers["POST", USER] = json_answer(202, {"jobs": [job_body()]})
    routes_server.answers["GET", AGENT + "/records"] = json_answer(200, {"items": [], "next_cursor": None})
    routes_server.answers["DELETE", AGENT] = (204, {"Deletion-Receipt": "del_1"}, b"")
    return routes_server


def run(routes: FakeRoutes, *args: str, env: dict[str, str] | None = None) -> Result:
    options = ["--endpoint", routes.url, "--tenant", "acme"]
    return CliRunner().invoke(cli, [*options, *args], env={"HIPPOCAMPUS_AGENT": "", **(env or {})})


def test_cli_get_with_agent_prints_both_scopes(routes: FakeRoutes) -> None:
    result = run(routes, "--agent", "research", "get", "alice")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "shared (version 5):\n    Alice sells candles.\nagent research (version 2):\n    Prefers short answers.\n"
    )
    short = json.loads(run(routes, "get", "alice", "--agent", "research", "--json").stdout)
    assert short == IDS | {
        "scopes": {
            "shared": {"memory": "Alice sells candles.", "version": 5, "updated_at": None},
            "agent": {"memory": "Prefers short answers.", "version": 2, "updated_at": None},
        }
    }
    assert [(m, p) for m, p, _ in routes.seen()] == [("GET", AGENT), ("GET", AGENT)]


def test_cli_agent_from_the_variable_and_add_share(routes: FakeRoutes) -> None:
    shared = run(routes, "add", "alice", "Prefers email.", "--share", env={"HIPPOCAMPUS_AGENT": "research"})
    assert shared.exit_code == 0, shared.output
    own = run(routes, "--agent", "research", "add", "alice", "Private note.")
    assert own.exit_code == 0, own.output
    assert routes.seen() == [
        ("POST", AGENT, {"items": [{"text": "Prefers email.", "share": True}], "upsert": True}),
        ("POST", AGENT, {"items": [{"text": "Private note."}], "upsert": True}),
    ]


def test_cli_add_wait_with_agent_polls_the_agents_job_route(routes: FakeRoutes) -> None:
    routes.answers["GET", AGENT + "/jobs/job-1"] = json_answer(200, job_body(status="completed"))
    result = run(routes, "--agent", "research", "add", "alice", "Private note.", "--wait")
    assert result.exit_code == 0, result.output
    assert [(m, p) for m, p, _ in routes.seen()] == [("POST", AGENT), ("GET", AGENT + "/jobs/job-1")]


def test_cli_share_without_agent_and_an_agent_that_is_no_id_are_usage_errors(routes: FakeRoutes) -> None:
    refused = run(routes, "add", "alice", "Prefers email.", "--share")
    assert refused.exit_code == 2 and "--agent" in refused.stderr
    bad = run(routes, "--agent", "..", "get", "alice")
    assert bad.exit_code == 2 and "'..' is not an id" in bad.stderr
    browser = run(routes, "--agent", "research", "ui", "--no-open")
    assert browser.exit_code == 2 and "--agent" in browser.stderr
    assert routes.requests == []


def test_cli_job_and_wait_with_agent_and_user_poll_the_agents_job_route(routes: FakeRoutes) -> None:
    routes.answers["GET", AGENT + "/jobs/job-1"] = json_answer(200, job_body(status="completed"))
    read = run(routes, "--agent", "research", "job", "job-1", "--user", "alice")
    assert read.exit_code == 0, read.output
    waited = run(routes, "--agent", "research", "wait", "job-1", "--user", "alice", "--timeout", "5")
    assert waited.exit_code == 0, waited.output
    assert [(m, p) for m, p, _ in routes.seen()] == [("GET", AGENT + "/jobs/job-1")] * 3
    # Without --user, a plain job id is the tenant's route's, as the README says (404 from this fake).
    assert run(routes, "--agent", "research", "job", "job-1").exit_code == 1
    assert routes.seen()[-1][:2] == ("GET", TENANT_JOBS + "/job-1")
    assert run(routes, "--agent", "research", "job", "job-1", "--user", "..").exit_code == 2


def test_cli_backfill_state_names_its_agent_and_refuses_another_scope(
    routes: FakeRoutes, tmp_path: Path
) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_text(json.dumps({"user_id": "alice", "text": "hello"}) + "\n")

    def backfill(*options: str) -> Result:
        return run(routes, "--json", "backfill", str(path), "--no-progress", *options)

    first = backfill("--agent", "research")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["done"] == 1
    state = json.loads(path.with_name("lines.jsonl.progress").read_text())
    assert (state["tenant"], state["agent"]) == ("acme", "research")
    as_user = backfill()
    assert as_user.exit_code == 1 and (
        "is the state of agent 'research', not the users' own memory (no --agent)" in as_user.stderr
    )
    other = backfill("--agent", "support")
    assert other.exit_code == 1 and "is the state of agent 'research', not agent 'support'" in other.stderr
    assert json.loads(backfill("--agent", "research").stdout)["skipped"] == 1
    assert [(m, p) for m, p, _ in routes.seen()] == [("POST", AGENT)]
    # The users' own run sends the line to their route; a state from before agent scopes (no
    # "agent") is the users' own, and refused to an agent's run.
    assert json.loads(backfill("--restart").stdout)["done"] == 1
    assert routes.seen()[-1][:2] == ("POST", USER)
    state = json.loads(path.with_name("lines.jsonl.progress").read_text())
    assert state.pop("agent") is None
    path.with_name("lines.jsonl.progress").write_text(json.dumps(state))
    assert json.loads(backfill().stdout)["skipped"] == 1
    refused = backfill("--agent", "research")
    assert refused.exit_code == 1 and "users' own memory (no --agent), not agent 'research'" in refused.stderr


class StartedUi(Exception):
    """The memory browser was started: the command was not refused."""


class FakeUiServer:
    def __init__(self, endpoint: str, port: int, region: str | None) -> None:
        self.endpoint = endpoint

    def page_url(self, tenant: str, user: str | None) -> str:
        return f"http://127.0.0.1:1/ui/?tenant={tenant}"

    def start(self) -> None:
        raise StartedUi


def test_cli_ui_refuses_agent_given_on_the_command_line_and_ignores_the_variable(
    routes: FakeRoutes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_ui, "UiServer", FakeUiServer)
    from_variable = run(routes, "ui", "--no-open", env={"HIPPOCAMPUS_AGENT": "research"})
    assert isinstance(from_variable.exception, StartedUi), from_variable.output
    assert "HIPPOCAMPUS_AGENT=research ignored" in from_variable.stderr
    assert from_variable.stdout.startswith("Memory browser on ")
    for options in (["--agent", "research", "ui"], ["ui", "--agent", "research"]):
        refused = run(routes, *options, "--no-open", env={"HIPPOCAMPUS_AGENT": "research"})
        assert refused.exit_code == 2 and "drop --agent" in refused.stderr
    plain = run(routes, "ui", "--no-open")
    assert isinstance(plain.exception, StartedUi) and "ignored" not in plain.stderr


def test_cli_records_and_forget_with_agent(routes: FakeRoutes) -> None:
    assert run(routes, "--agent", "research", "records", "alice").exit_code == 0
    forgot = run(routes, "--agent", "research", "--json", "forget", "alice", "--yes")
    assert forgot.exit_code == 0, forgot.output
    assert json.loads(forgot.stdout) == {
        "deleted": True, "user_id": "alice", "agent_id": "research", "receipt_id": "del_1"
    }  # fmt: skip
    asked = run(routes, "--agent", "research", "forget", "alice", env={})
    assert "everything agent research keeps about alice" in asked.stderr
    assert [(m, p) for m, p, _ in routes.seen()] == [("GET", AGENT + "/records"), ("DELETE", AGENT)]


def test_cli_query_with_agent_names_each_results_scope(routes: FakeRoutes) -> None:
    hits = [
        {"type": "fact", "id": "pay", "text": "Pays through Stripe.", "score": 0.8, "scope": "shared"},
        {"type": "fact", "id": "tone", "text": "Likes short answers.", "score": 0.5, "scope": "agent"},
    ]
    routes.answers["POST", AGENT + "/query"] = json_answer(200, {"memory": None, "results": hits})
    result = run(routes, "--agent", "research", "query", "alice", "payments", "--no-memory")
    assert result.exit_code == 0, result.output
    assert "0.800 fact pay (shared)\n" in result.stdout and "0.500 fact tone (agent)\n" in result.stdout
    assert routes.seen()[-1][:2] == ("POST", AGENT + "/query")


# --- the MCP server ------------------------------------------------------------------------------


def call(client: MemoryClient, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    async def scenario() -> CallToolResult:
        async with Client(build_server(client)) as session:
            return await session.call_tool(tool, arguments)

    return anyio.run(scenario)


def tools_of(client: MemoryClient) -> dict[str, Any]:
    async def scenario() -> Any:
        async with Client(build_server(client)) as session:
            return await session.list_tools()

    return {tool.name: tool for tool in anyio.run(scenario).tools}


def remember_parameters(client: MemoryClient) -> set[str]:
    return set(tools_of(client)["remember"].input_schema["properties"])


def output_fields(schema: dict[str, Any], *path: str) -> dict[str, Any]:
    """The properties of an output schema, or of the model of its list `path[0]`."""
    if not path:
        return dict(schema["properties"])
    reference = schema["properties"][path[0]]["items"]["$ref"].rsplit("/", 1)[1]
    return dict(schema["$defs"][reference]["properties"])


def test_mcp_agent_fields_are_in_an_agents_servers_output_schemas_only() -> None:
    with MemoryClient(endpoint="http://127.0.0.1:9", tenant="acme", strict=True) as memory:
        users = tools_of(memory)
    with MemoryClient(endpoint="http://127.0.0.1:9", tenant="acme", agent="research", strict=True) as memory:
        agents = tools_of(memory)
    for name, tool in users.items():
        schema = json.dumps(tool.output_schema)
        assert not {'"scope"', '"agent_id"', '"shared"', '"shared_memory_version"'} & {
            word for word in schema.replace(":", " ").split() if word.startswith('"')
        }, name
        assert "share" not in tool.input_schema["properties"] and "agent" not in (tool.description or ""), (
            name
        )
    assert users["forget"].output_schema["properties"]["forgotten"]["enum"] == ["user", "fact"]
    assert "scope" in output_fields(agents["recall"].output_schema, "results")
    context = agents["get_context"].output_schema
    assert {"shared_memory_version", "memory_version"} <= set(output_fields(context))
    assert "scope" in output_fields(context, "sources")
    assert {"agent_id", "shared"} <= set(output_fields(agents["read_memory"].output_schema))
    forget = agents["forget"].output_schema
    assert forget["properties"]["forgotten"]["enum"] == ["agent", "fact"] and "agent_id" in forget["required"]
    assert "share" in agents["remember"].input_schema["properties"]
    assert "this agent's own memory" in (agents["remember"].description or "")


def test_mcp_get_context_of_an_agents_server_gives_both_versions_and_each_sources_scope(
    routes: FakeRoutes,
) -> None:
    sources = [
        {"type": "memory", "id": None, "scope": "shared"},
        {"type": "fact", "id": "tone", "scope": "agent"},
    ]
    block = {
        "context": "Alice sells candles.",
        "word_count": 3,
        "memory_version": 2,
        "shared_memory_version": 5,
    }
    routes.answers["POST", AGENT + "/context"] = json_answer(200, block | {"sources": sources})
    with MemoryClient(endpoint=routes.url, tenant="acme", agent="research", strict=True) as memory:
        result = call(memory, "get_context", {"user_id": "alice", "query": "candles"})
    assert not result.is_error and result.structured_content == block | {"sources": sources}


def test_mcp_with_agent_serves_the_agents_scope(routes: FakeRoutes) -> None:
    with MemoryClient(endpoint=routes.url, tenant="acme", agent="research", strict=True) as memory:
        assert "share" in remember_parameters(memory)
        read = call(memory, "read_memory", {"user_id": "alice"})
        remembered = call(memory, "remember", {"user_id": "alice", "text": "Prefers email.", "share": True})
        forgot = call(memory, "forget", {"user_id": "alice", "confirm": True})
        hits = [
            {"type": "fact", "id": "pay", "text": "Pays through Stripe.", "score": 0.8, "scope": "shared"}
        ]
        routes.answers["POST", AGENT + "/query"] = json_answer(200, {"memory": None, "results": hits})
        recalled = call(memory, "recall", {"user_id": "alice", "query": "payments"})
    assert [hit["scope"] for hit in (recalled.structured_content or {})["results"]] == ["shared"]
    assert not read.is_error and not remembered.is_error and not forgot.is_error
    content = read.structured_content or {}
    assert (content["agent_id"], content["summary"], content["version"]) == (
        "research",
        "Prefers short answers.",
        2,
    )
    assert (content["shared"]["summary"], content["shared"]["version"]) == ("Alice sells candles.", 5)
    assert forgot.structured_content == {
        "user_id": "alice", "forgotten": "agent", "agent_id": "research", "fact_id": None, "receipt_id": "del_1"
    }  # fmt: skip
    assert routes.seen() == [
        ("GET", AGENT, None),
        ("POST", AGENT, {"items": [{"text": "Prefers email.", "share": True}], "upsert": True}),
        ("DELETE", AGENT, None),
        ("POST", AGENT + "/query", {"query": "payments", "top_k": 10, "include_memory": False}),
    ]


def test_mcp_remember_with_agent_waits_on_the_agents_job_route(
    routes: FakeRoutes, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = fake_clock(monkeypatch)  # `wait_seconds` of polls, taking no time
    routes.answers["GET", AGENT + "/jobs/job-1"] = json_answer(200, job_body(status="deferred"))
    with MemoryClient(endpoint=routes.url, tenant="acme", agent="research", strict=True) as memory:
        result = call(memory, "remember", {"user_id": "alice", "text": "Prefers email.", "wait_seconds": 2})
    assert not result.is_error and (result.structured_content or {})["final"] is False
    polls = [path for method, path, _ in routes.seen() if method == "GET"]
    # Polled until `wait_seconds` ran out, then read once more: all on the agent's route.
    assert sum(clock.slept) == 2 and polls == [AGENT + "/jobs/job-1"] * (len(clock.slept) + 2)
    routes.answers["GET", AGENT + "/jobs/job-1"] = json_answer(200, job_body(status="completed"))
    with MemoryClient(endpoint=routes.url, tenant="acme", agent="research", strict=True) as memory:
        done = call(memory, "remember", {"user_id": "alice", "text": "Prefers email.", "wait_seconds": 2})
    assert (done.structured_content or {})["final"] is True
    assert routes.seen()[-1][:2] == ("GET", AGENT + "/jobs/job-1")


def test_mcp_without_agent_has_no_share(routes: FakeRoutes) -> None:
    with MemoryClient(endpoint=routes.url, tenant="acme", strict=True) as memory:
        assert "share" not in remember_parameters(memory)
        refused = call(memory, "remember", {"user_id": "alice", "text": "Prefers email.", "share": True})
    assert refused.is_error and "unknown argument: share" in " ".join(
        getattr(b, "text", "") for b in refused.content
    )
    assert routes.requests == []


def test_mcp_agent_option_and_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIPPOCAMPUS_TENANT", "acme")
    monkeypatch.delenv("HIPPOCAMPUS_AGENT", raising=False)
    assert _options(["--local", "--agent", "research"])[2] == "research"
    assert _options(["--local"])[2] is None
    monkeypatch.setenv("HIPPOCAMPUS_AGENT", "support")
    assert _options(["--local"])[2] == "support"
    with pytest.raises(SystemExit) as exit_info:
        _options(["--local", "--agent", ".."])
    assert exit_info.value.code == 2
