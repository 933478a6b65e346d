"""`hippocampus-mcp` (client/README.md, "MCP server") through the MCP SDK's own client.

In process, `mcp.Client(server)` against the server `build_server` makes of a strict
`MemoryClient` pointed at a fake Hippocampus: a threaded 127.0.0.1 HTTP server that answers the
routes of docs/api.md and records each request. One test starts the console script itself as
a subprocess and talks to it over stdio.
"""

import json
import logging
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import anyio
import pytest
from client_test_servers import (
    BUDGET_SPENT,
    Answer,
    RecordingServer,
    closed_port,
    envelope,
    fake_clock,
    json_answer,
)
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from hippocampus_client import ConfigurationError, MemoryClient, QueryResult
from hippocampus_client.mcp_server import LOCAL_ENDPOINT, _options, build_server

MEMORY = "/v1/tenants/acme/users/alice/memory"
TOOLS = {"recall", "get_context", "remember", "read_memory", "list_records", "forget"}
FACT = {"id": "pay", "text": "Pays suppliers through Stripe.", "title": "Billing", "metadata": {}}


def job(status: str, job_id: str = "job-1", item_id: str = "item-1") -> dict[str, Any]:
    return {"job_id": job_id, "tenant_id": "acme", "user_id": "alice", "item_id": item_id, "status": status}


class FakeHippocampus(RecordingServer):
    """Answers `(method, path)` from `answers`; anything else is a 404 `not_found`, as the API's."""

    def __init__(self) -> None:
        self.answers: dict[tuple[str, str], Answer] = {}
        super().__init__(self._answer)

    def _answer(self, method: str, path: str, body: bytes) -> Answer:
        return self.answers.get((method, path.split("?")[0])) or json_answer(404, envelope("not_found", 404))

    def bodies(self) -> list[tuple[str, str, Any]]:
        """The requests so far: method, path, parsed body (None when empty)."""
        return [(m, p, json.loads(b) if b else None) for m, p, b in self.requests]


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeHippocampus]:
    with FakeHippocampus() as server:  # one per module: stopping one takes half a second
        yield server


@pytest.fixture
def fake(fake_server: FakeHippocampus) -> FakeHippocampus:
    fake_server.answers.clear()
    fake_server.requests.clear()
    return fake_server


@pytest.fixture
def client(fake: FakeHippocampus) -> Iterator[MemoryClient]:
    with MemoryClient(endpoint=fake.url, tenant="acme", strict=True) as memory:
        yield memory


def call(client: MemoryClient, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    """One tool call through the SDK's in-process client."""

    async def scenario() -> CallToolResult:
        async with Client(build_server(client)) as session:
            return await session.call_tool(tool, arguments)

    return anyio.run(scenario)


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result
    return " ".join(getattr(block, "text", "") for block in result.content)


# --- the tools and their schemas -----------------------------------------------------------


def test_list_tools_shows_the_six_tools_with_schemas_and_no_tenant(client: MemoryClient) -> None:
    async def scenario() -> Any:
        async with Client(build_server(client)) as session:
            return await session.list_tools()

    tools = {tool.name: tool for tool in anyio.run(scenario).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        schema = tool.input_schema
        assert schema["required"][0] == "user_id" and "tenant" not in json.dumps(schema)
        assert schema["properties"]["user_id"]["pattern"] == r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$"
        assert tool.description and tool.output_schema and tool.output_schema["type"] == "object"
    recall = tools["recall"].input_schema["properties"]
    assert (recall["top_k"]["minimum"], recall["top_k"]["maximum"], recall["top_k"]["default"]) == (1, 50, 10)
    assert recall["query"]["maxLength"] == 2000
    assert tools["get_context"].input_schema["properties"]["max_words"]["maximum"] == 2000
    assert set(tools["remember"].input_schema["properties"]) >= {
        "text",
        "user_message",
        "fact_id",
        "metadata",
    }
    assert tools["forget"].annotations and tools["forget"].annotations.destructive_hint is True
    assert tools["recall"].annotations and tools["recall"].annotations.read_only_hint is True
    records = tools["list_records"]
    assert records.annotations and records.annotations.read_only_hint is True
    assert set(records.input_schema["properties"]) == {
        "user_id",
        "as_of",
        "include_invalidated",
        "max_records",
    }
    assert records.input_schema["properties"]["max_records"]["maximum"] == 200
    assert "records" in (tools["recall"].description or "") and "records" in (
        tools["get_context"].description or ""
    )


def test_recall_queries_the_memory_of_the_tenant_given_at_start(
    fake: FakeHippocampus, client: MemoryClient
) -> None:
    hit = FACT | {
        "type": "fact",
        "score": 0.83,
        "additional_metadata": {},
        "created_at": "2026-11-29T23:55:20Z",
    }
    fake.answers["POST", MEMORY + "/query"] = json_answer(200, {"memory": None, "results": [hit]})
    result = call(
        client, "recall", {"user_id": "alice", "query": "supplier payments", "top_k": 3, "types": ["fact"]}
    )
    assert not result.is_error
    assert fake.bodies() == [
        (
            "POST",
            MEMORY + "/query",
            {"query": "supplier payments", "top_k": 3, "include_memory": False, "types": ["fact"]},
        )
    ]
    assert result.structured_content == {
        "results": [
            {
                "type": "fact",
                "id": "pay",
                "text": FACT["text"],
                "title": "Billing",
                "score": 0.83,
                "metadata": {},
                "updated_at": None,
            }
        ]
    }


def test_get_context_returns_the_block_and_its_sources(fake: FakeHippocampus, client: MemoryClient) -> None:
    block = {"context": "What you know about this user:\nAlice sells candles.", "word_count": 9, "memory_version": 3,
             "sources": [{"type": "memory", "id": None}, {"type": "fact", "id": "pay"}]}  # fmt: skip
    fake.answers["POST", MEMORY + "/context"] = json_answer(200, block)
    result = call(client, "get_context", {"user_id": "alice", "query": "How do I pay?", "max_words": 100})
    assert fake.bodies() == [("POST", MEMORY + "/context", {"max_words": 100, "query": "How do I pay?"})]
    assert result.structured_content == block
    call(client, "get_context", {"user_id": "alice"})
    assert fake.bodies()[-1][2] == {"max_words": 300}  # no query: the summary, then the newest facts


def test_remember_a_text_queues_it_for_the_summary(fake: FakeHippocampus, client: MemoryClient) -> None:
    fake.answers["POST", MEMORY] = json_answer(202, {"jobs": [job("queued")]})
    result = call(client, "remember", {"user_id": "alice", "text": "Alice moved to Lyon."})
    assert fake.bodies() == [("POST", MEMORY, {"items": [{"text": "Alice moved to Lyon."}], "upsert": True})]
    assert result.structured_content == {
        "jobs": [
            {
                "job_id": "job-1",
                "item_id": "item-1",
                "status": "queued",
                "error_code": None,
                "memory_version": None,
            }
        ],
        "final": False,
    }


def test_remember_with_a_fact_id_stores_the_text_verbatim(
    fake: FakeHippocampus, client: MemoryClient
) -> None:
    fake.answers["POST", MEMORY] = json_answer(
        202, {"jobs": [job("completed", item_id="pay") | {"memory_version": 2}]}
    )
    arguments = {
        "user_id": "alice",
        "text": FACT["text"],
        "fact_id": "pay",
        "title": "Billing",
        "metadata": {"src": "chat"},
    }
    result = call(client, "remember", arguments)
    item = {
        "text": FACT["text"],
        "id": "pay",
        "infer": False,
        "title": "Billing",
        "metadata": {"src": "chat"},
    }
    assert fake.bodies() == [("POST", MEMORY, {"items": [item], "upsert": True})]
    assert result.structured_content is not None and result.structured_content["final"] is True
    assert result.structured_content["jobs"][0]["memory_version"] == 2


def test_remember_a_turn_can_wait_for_its_condensation(fake: FakeHippocampus, client: MemoryClient) -> None:
    fake.answers["POST", MEMORY] = json_answer(202, {"jobs": [job("queued")]})
    fake.answers["GET", "/v1/tenants/acme/jobs/job-1"] = json_answer(
        200, job("completed") | {"memory_version": 4}
    )
    turn = {
        "user_id": "alice",
        "user_message": "I sell candles.",
        "assistant_message": "Nice!",
        "wait_seconds": 5,
    }
    result = call(client, "remember", turn)
    pairs = [{"user": "I sell candles.", "assistant": "Nice!"}]
    assert fake.bodies() == [
        ("POST", MEMORY, {"items": [{"user_assistant_pairs": pairs}], "upsert": True}),
        ("GET", "/v1/tenants/acme/jobs/job-1", None),
    ]
    assert result.structured_content is not None
    assert result.structured_content["final"] is True
    assert result.structured_content["jobs"][0]["status"] == "completed"


def test_remember_a_deferred_turn_waits_then_says_why_it_is_not_final(
    fake: FakeHippocampus, client: MemoryClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = fake_clock(monkeypatch)  # `wait_seconds` of polls, taking no time
    fake.answers["POST", MEMORY] = json_answer(202, {"jobs": [job("queued")]})
    fake.answers["GET", "/v1/tenants/acme/jobs/job-1"] = json_answer(
        200, job("deferred") | {"error": BUDGET_SPENT}
    )
    result = call(
        client, "remember", {"user_id": "alice", "user_message": "I sell candles.", "wait_seconds": 5}
    )
    assert result.structured_content == {
        "jobs": [
            {
                "job_id": "job-1",
                "item_id": "item-1",
                "status": "deferred",
                "error_code": "token_budget_exhausted",
                "memory_version": None,
            }
        ],
        "final": False,
    }
    polls = [path for method, path, _ in fake.bodies() if method == "GET"]
    assert sum(clock.slept) == 5 and len(polls) == len(clock.slept) + 2  # polled to the end, then read once


def test_remember_passes_when_it_happened_and_refuses_a_date_without_its_offset(
    fake: FakeHippocampus, client: MemoryClient
) -> None:
    fake.answers["POST", MEMORY] = json_answer(202, {"jobs": [job("queued")]})
    dated = {"user_id": "alice", "text": "Alice moved to Lyon.", "occurred_at": "2023-05-08T13:56:00Z"}
    call(client, "remember", dated)
    item = {"text": "Alice moved to Lyon.", "occurred_at": "2023-05-08T13:56:00Z"}
    assert fake.bodies() == [("POST", MEMORY, {"items": [item], "upsert": True})]
    message = error_text(call(client, "remember", dated | {"occurred_at": "2023-05-08T13:56:00"}))
    assert message.startswith("Error executing tool remember: invalid_input") and "occurred_at" in message
    assert len(fake.requests) == 1  # the second was refused before any request


@pytest.mark.parametrize(
    "arguments",
    [
        {"user_id": "alice"},
        {"user_id": "alice", "text": "a note", "user_message": "and a turn"},
        {"user_id": "alice", "user_message": "a turn", "fact_id": "f1"},
    ],
)
def test_remember_refuses_anything_but_one_text_or_one_turn(
    fake: FakeHippocampus, client: MemoryClient, arguments: dict[str, Any]
) -> None:
    assert error_text(call(client, "remember", arguments)).startswith(
        "Error executing tool remember: invalid_input"
    )
    assert fake.requests == []


def test_read_memory_gives_the_summary_version_and_facts(fake: FakeHippocampus, client: MemoryClient) -> None:
    facts = [FACT | {"id": f"f{i}", "updated_at": "2026-11-29T23:55:20Z"} for i in range(3)]
    body = {"tenant_id": "acme", "user_id": "alice", "memory": "Alice sells candles.", "version": 2, "word_count": 3,
            "updated_at": "2026-11-29T23:55:21Z", "facts": facts}  # fmt: skip
    fake.answers["GET", MEMORY] = json_answer(200, body)
    result = call(client, "read_memory", {"user_id": "alice", "max_facts": 2})
    assert fake.bodies() == [("GET", MEMORY, None)]
    content = result.structured_content
    assert content is not None
    assert (content["summary"], content["version"], content["facts_total"]) == ("Alice sells candles.", 2, 3)
    assert [fact["id"] for fact in content["facts"]] == ["f0", "f1"]


RECORD = {
    "id": "rec_berlin", "text": "Caroline moved to Berlin.", "category": "location",
    "valid_from": "2023-05-08T00:00:00Z", "valid_to": None, "recorded_at": "2026-12-05T11:02:17Z",
    "invalidated_at": None, "superseded_by": None, "episode_ids": ["D1:3"], "job_id": "job-1", "agent_id": None,
}  # fmt: skip
PAST = RECORD | {
    "id": "rec_paris", "text": "Caroline lived in Paris.", "valid_from": "2019-01-01T00:00:00Z",
    "valid_to": "2023-05-08T00:00:00Z", "invalidated_at": "2026-12-05T11:02:17Z", "superseded_by": "rec_berlin",
}  # fmt: skip


def info(record: dict[str, Any]) -> dict[str, Any]:
    """What list_records gives of a record: no episode, job or agent ids."""
    return {k: v for k, v in record.items() if k not in ("episode_ids", "job_id", "agent_id")}


def test_list_records_gives_the_current_records_or_those_true_at_a_time(
    fake: FakeHippocampus, client: MemoryClient
) -> None:
    fake.answers["GET", MEMORY + "/records"] = json_answer(200, {"items": [RECORD], "next_cursor": None})
    result = call(client, "list_records", {"user_id": "alice"})
    assert result.structured_content == {"records": [info(RECORD)], "more": False}
    fake.answers["GET", MEMORY + "/records"] = json_answer(200, {"items": [PAST], "next_cursor": None})
    then = call(client, "list_records", {"user_id": "alice", "as_of": "2022-06-01T00:00:00Z"})
    assert then.structured_content == {"records": [info(PAST)], "more": False}
    call(client, "list_records", {"user_id": "alice", "include_invalidated": True, "max_records": 10})
    assert [path for _, path, _ in fake.requests] == [
        MEMORY + "/records?limit=51",
        MEMORY + "/records?limit=51&as_of=2022-06-01T00%3A00%3A00Z",
        MEMORY + "/records?limit=11&include_invalidated=true",
    ]


def test_list_records_says_when_older_records_were_left_out(
    fake: FakeHippocampus, client: MemoryClient
) -> None:
    fake.answers["GET", MEMORY + "/records"] = json_answer(200, {"items": [RECORD, PAST], "next_cursor": "c"})
    result = call(client, "list_records", {"user_id": "alice", "include_invalidated": True, "max_records": 1})
    assert result.structured_content == {"records": [info(RECORD)], "more": True}
    assert len(fake.requests) == 1  # two asked for, two given: no second page


def test_list_records_refuses_a_time_without_its_offset_before_any_request(
    fake: FakeHippocampus, client: MemoryClient
) -> None:
    text = error_text(call(client, "list_records", {"user_id": "alice", "as_of": "2022-06-01"}))
    assert text.startswith("Error executing tool list_records: invalid_input") and "as_of" in text
    assert fake.requests == []


# The service adds records to query and context answers once docs/openapi.json lists them
# (`QueryResult.type`, `ContextSource.type`, `QueryRequest.types`); the models follow it (`make
# openapi`), and `ResultKind` (base.py) with them (test_client_models.py fails until it does).
RECORDS_RECALLED = "record" in get_args(QueryResult.model_fields["type"].annotation)


@pytest.mark.skipif(not RECORDS_RECALLED, reason="docs/openapi.json has no record in query answers yet")
def test_recall_and_get_context_pass_records_through(fake: FakeHippocampus, client: MemoryClient) -> None:
    hit = {
        "type": "record",
        "id": "rec_berlin",
        "text": "Caroline moved to Berlin.",
        "score": 0.7,
        "metadata": {},
    }
    fake.answers["POST", MEMORY + "/query"] = json_answer(200, {"memory": None, "results": [hit]})
    recalled = call(
        client, "recall", {"user_id": "alice", "query": "where does she live", "types": ["record"]}
    )
    assert recalled.structured_content is not None
    assert [(r["type"], r["id"]) for r in recalled.structured_content["results"]] == [
        ("record", "rec_berlin")
    ]
    assert fake.bodies()[-1][2]["types"] == ["record"]
    block = {
        "context": "Caroline moved to Berlin.",
        "word_count": 4,
        "sources": [{"type": "record", "id": "rec_berlin"}],
    }
    fake.answers["POST", MEMORY + "/context"] = json_answer(200, block)
    context = call(client, "get_context", {"user_id": "alice"})
    assert context.structured_content is not None
    assert context.structured_content["sources"] == [{"type": "record", "id": "rec_berlin"}]


def test_forget_one_fact_or_the_whole_user_only_when_confirmed(
    fake: FakeHippocampus, client: MemoryClient
) -> None:
    fake.answers["DELETE", MEMORY + "/facts/pay"] = (204, {}, b"")
    fake.answers["DELETE", MEMORY] = (204, {"Deletion-Receipt": "del_0123"}, b"")
    one = call(client, "forget", {"user_id": "alice", "fact_id": "pay"})
    assert one.structured_content == {
        "user_id": "alice",
        "forgotten": "fact",
        "fact_id": "pay",
        "receipt_id": None,
    }
    refused = error_text(call(client, "forget", {"user_id": "alice"}))
    assert "invalid_input" in refused and "confirm" in refused
    assert fake.bodies() == [("DELETE", MEMORY + "/facts/pay", None)]
    everything = call(client, "forget", {"user_id": "alice", "confirm": True})
    assert everything.structured_content == {
        "user_id": "alice",
        "forgotten": "user",
        "fact_id": None,
        "receipt_id": "del_0123",
    }
    assert fake.bodies()[-1] == ("DELETE", MEMORY, None)


# --- errors: tool errors naming the code, never a crash, never content in the logs ---------------


def test_an_unknown_fact_is_a_tool_error_naming_not_found(
    fake: FakeHippocampus, client: MemoryClient
) -> None:
    text = error_text(call(client, "forget", {"user_id": "alice", "fact_id": "nope"}))
    assert "not_found (HTTP 404)" in text
    assert fake.bodies() == [("DELETE", MEMORY + "/facts/nope", None)]


def test_a_validation_error_names_its_code_and_fields_and_logs_no_content(
    fake: FakeHippocampus, client: MemoryClient, caplog: pytest.LogCaptureFixture
) -> None:
    refused = envelope("validation_error", 422, "invalid request: items[0].metadata")
    refused["error"]["details"] = [{"field": "items[0].metadata", "message": "too large", "type": "limit"}]
    fake.answers["POST", MEMORY] = json_answer(422, refused)
    caplog.set_level(logging.INFO)
    text = error_text(call(client, "remember", {"user_id": "alice", "text": "secret-candle-recipe"}))
    assert "validation_error (HTTP 422)" in text and "items[0].metadata" in text
    assert "code=validation_error status=422" in caplog.text
    assert "secret-candle-recipe" not in caplog.text


def test_arguments_outside_the_schema_are_refused_before_any_request(
    fake: FakeHippocampus, client: MemoryClient
) -> None:
    assert "user_id" in error_text(call(client, "recall", {"user_id": "al ice", "query": "x"}))
    assert "top_k" in error_text(call(client, "recall", {"user_id": "alice", "query": "x", "top_k": 51}))
    assert "max_words" in error_text(call(client, "get_context", {"user_id": "alice", "max_words": 0}))
    assert fake.requests == []


def test_an_unreachable_service_is_a_tool_error_and_the_server_keeps_serving() -> None:
    with MemoryClient(endpoint=f"http://127.0.0.1:{closed_port()}", tenant="acme", strict=True) as memory:

        async def scenario() -> tuple[CallToolResult, Any]:
            async with Client(build_server(memory)) as session:
                failed = await session.call_tool("read_memory", {"user_id": "alice"})
                return failed, await session.list_tools()

        failed, tools = anyio.run(scenario)
    assert error_text(failed).startswith("Error executing tool read_memory: connection_error")
    assert {tool.name for tool in tools.tools} == TOOLS


def test_build_server_needs_a_strict_client(fake: FakeHippocampus) -> None:
    with MemoryClient(endpoint=fake.url, tenant="acme") as lenient, pytest.raises(ConfigurationError):
        build_server(lenient)


# --- the console script --------------------------------------------------------------------------


def test_the_options_and_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HIPPOCAMPUS_ENDPOINT", raising=False)
    monkeypatch.delenv("HIPPOCAMPUS_AGENT", raising=False)
    monkeypatch.setenv("HIPPOCAMPUS_TENANT", "acme")
    assert _options(["--local"]) == (LOCAL_ENDPOINT, "acme", None)
    assert _options(["--endpoint", "https://x.test/prod", "--tenant", "beta"]) == (
        "https://x.test/prod",
        "beta",
        None,
    )
    monkeypatch.setenv("HIPPOCAMPUS_ENDPOINT", "http://env.test")
    assert _options([]) == ("http://env.test", "acme", None)
    for argv in (["--tenant", "not a tenant"], ["--local", "--endpoint", "http://x.test"]):
        with pytest.raises(SystemExit) as exit_info:
            _options(argv)
        assert exit_info.value.code == 2
    monkeypatch.delenv("HIPPOCAMPUS_TENANT")
    with pytest.raises(SystemExit):
        _options([])


def test_the_console_script_serves_the_tools_over_stdio(fake: FakeHippocampus) -> None:
    script = Path(sys.executable).with_name("hippocampus-mcp")
    command = str(script) if script.exists() else shutil.which("hippocampus-mcp")
    assert command, "the client is not installed (pip install -e './client[mcp]')"
    body = {
        "tenant_id": "acme",
        "user_id": "alice",
        "memory": "Alice sells candles.",
        "version": 1,
        "facts": [FACT],
    }
    fake.answers["GET", MEMORY] = json_answer(200, body)
    parameters = StdioServerParameters(command=command, args=["--endpoint", fake.url, "--tenant", "acme"])

    async def scenario() -> tuple[set[str], CallToolResult]:
        async with Client(parameters, read_timeout_seconds=20) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            return names, await session.call_tool("read_memory", {"user_id": "alice"})

    names, result = anyio.run(scenario)
    assert names == TOOLS
    assert (
        result.structured_content is not None
        and result.structured_content["summary"] == "Alice sells candles."
    )
    assert fake.bodies() == [("GET", MEMORY, None)]


# --- strict arguments (issue 17): no coercion, no unknown argument, one sentence each ------------

HOSTILE_IDS = [".", "..", "%2e", "a/b", "", "é", "x" * 129, "alice\n", "al ice"]
# Every id argument of every tool, with the other arguments a call would need.
ID_ARGUMENTS = [
    ("recall", "user_id", {"query": "candles"}),
    ("get_context", "user_id", {}),
    ("remember", "user_id", {"text": "Alice sells candles."}),
    ("remember", "fact_id", {"user_id": "alice", "text": "Prefers email."}),
    ("read_memory", "user_id", {}),
    ("list_records", "user_id", {}),
    ("forget", "user_id", {"confirm": True}),
    ("forget", "fact_id", {"user_id": "alice"}),
]


@pytest.mark.parametrize("hostile", HOSTILE_IDS, ids=repr)
@pytest.mark.parametrize(
    ("tool", "argument", "others"), ID_ARGUMENTS, ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_id_argument_of_every_tool_is_checked_before_any_request(
    fake: FakeHippocampus,
    client: MemoryClient,
    tool: str,
    argument: str,
    others: dict[str, Any],
    hostile: str,
) -> None:
    text = error_text(call(client, tool, others | {argument: hostile}))
    assert f"invalid_input: {argument}: must be an id: 1 to 128 letters" in text
    assert fake.requests == []


def test_every_input_schema_is_closed_and_its_ids_carry_the_pattern(client: MemoryClient) -> None:
    async def scenario() -> Any:
        async with Client(build_server(client)) as session:
            return await session.list_tools()

    for tool in anyio.run(scenario).tools:
        assert tool.input_schema["additionalProperties"] is False
        for name, schema in tool.input_schema["properties"].items():
            if name.endswith("_id"):
                patterns = [s.get("pattern") for s in schema.get("anyOf", [schema])]
                assert r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$" in patterns, (tool.name, name)


@pytest.mark.parametrize("confirm", ["yes", "true", 1, "1", None])
def test_forget_refuses_a_confirm_that_is_not_true_or_false(
    fake: FakeHippocampus, client: MemoryClient, confirm: Any
) -> None:
    text = error_text(call(client, "forget", {"user_id": "alice", "confirm": confirm}))
    assert text == (
        f"Error executing tool forget: invalid_input: confirm: must be true or false (got {json.dumps(confirm)})"
    )
    assert fake.requests == []


def test_an_unknown_argument_is_refused_by_name(fake: FakeHippocampus, client: MemoryClient) -> None:
    text = error_text(call(client, "forget", {"user_id": "alice", "confirm": True, "tenant": "other"}))
    assert text == (
        "Error executing tool forget: invalid_input: "
        "unknown argument: tenant (forget takes user_id, fact_id, confirm)"
    )
    assert "unknown argument: topk" in error_text(
        call(client, "recall", {"user_id": "alice", "query": "q", "topk": 3})
    )
    assert fake.requests == []


def test_a_string_is_taken_as_sent_not_parsed_as_json(fake: FakeHippocampus, client: MemoryClient) -> None:
    fake.answers["DELETE", MEMORY + "/facts/null"] = (204, {}, b"")
    fake.answers["DELETE", MEMORY] = (204, {}, b"")
    one = call(client, "forget", {"user_id": "alice", "fact_id": "null", "confirm": True})
    assert one.structured_content == {
        "user_id": "alice",
        "forgotten": "fact",
        "fact_id": "null",
        "receipt_id": None,
    }
    assert fake.bodies() == [("DELETE", MEMORY + "/facts/null", None)]  # the fact, not the whole user
    text = error_text(call(client, "recall", {"user_id": "alice", "query": "q", "types": '["fact"]'}))
    assert text.endswith('types: must be a list (got "[\\"fact\\"]")')


@pytest.mark.parametrize(
    ("tool", "arguments", "sentence"),
    [
        ("read_memory", {}, "user_id: required"),
        ("recall", {"user_id": "alice", "query": "q", "top_k": 5.0}, "top_k: must be an integer (got 5.0)"),
        ("recall", {"user_id": "alice", "query": "q", "top_k": "5"}, 'top_k: must be an integer (got "5")'),
        ("recall", {"user_id": "alice", "query": "q", "top_k": 51}, "top_k: must be at most 50 (got 51)"),
        ("recall", {"user_id": "alice", "query": "  "}, 'query: must not be blank (got "  ")'),
        (
            "recall",
            {"user_id": "alice", "query": "q", "types": ["note"]},
            "types[0]: must be 'fact', 'episode' or 'record' (got \"note\")",
        ),
        ("get_context", {"user_id": "alice", "max_words": 0}, "max_words: must be at least 1 (got 0)"),
        (
            "remember",
            {"user_id": "alice", "text": "x" * 32_001},
            "text: must have at most 32000 characters (got 32001 characters)",
        ),
        (
            "remember",
            {"user_id": "alice", "text": "t", "metadata": ["a"]},
            'metadata: must be a JSON object (got ["a"])',
        ),
        ("read_memory", {"user_id": 7}, "user_id: must be a string (got 7)"),
    ],
)
def test_an_argument_error_is_one_sentence_naming_the_argument_and_the_rule(
    fake: FakeHippocampus, client: MemoryClient, tool: str, arguments: dict[str, Any], sentence: str
) -> None:
    text = error_text(call(client, tool, arguments))
    assert text == f"Error executing tool {tool}: invalid_input: {sentence}"
    assert "pydantic" not in text and "\n" not in text
    assert fake.requests == []
