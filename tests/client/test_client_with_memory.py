"""`with_memory` (client/README.md, "with_memory") with the real openai SDK pointed at a local
OpenAI-compatible model (tests/support/chat_stub.py) and the client pointed at a fake Hippocampus
on 127.0.0.1: the system message the model receives, the answer returned untouched, the turn
stored; sync, async and streaming; memory down, the model's own errors, and everything else."""

import asyncio
import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest
from client_test_servers import HangingServer, closed_port, envelope, job_body, json_answer
from openai import AsyncOpenAI, OpenAI

from hippocampus_client import (
    MEMORY_PREFIX,
    AsyncMemoryClient,
    AsyncMemoryOpenAI,
    ConfigurationError,
    MemoryClient,
    MemoryOpenAI,
    with_memory,
)
from hippocampus_client.openai_turns import last_user_text, with_block
from tests.support.chat_stub import ChatStub

BLOCK = (
    "What you know about this user:\nAlice sells candles on Shopify.\n\nRelevant facts:\n- Ships to Canada."
)
ANSWER = "Your candles ship to Canada, Alice."
SECRET = "my grandmother's secret candle recipe"
SYSTEM = {"role": "system", "content": "You are a shop assistant."}
QUESTION = {"role": "user", "content": "Where do my candles ship?"}
CONVERSATION = [
    SYSTEM,
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello!"},
    QUESTION,
]


class FakeHippocampus:
    """Answers `POST …/memory/context` with `block` and records every request (the items of
    `POST …/memory` among them); its own server, stopped in a poll interval of 20 ms."""

    def __init__(self, block: str = BLOCK) -> None:
        self.block = block
        self.requests: list[tuple[str, str, bytes]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake.requests.append((self.command, self.path, body))
                status, headers, content = fake.answer(self.command, self.path, body)
                self.send_response(status)
                for name, value in (headers | {"Content-Length": str(len(content))}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "FakeHippocampus":
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        if method == "POST" and path.endswith("/memory/context"):
            context = {"context": self.block, "word_count": len(self.block.split()), "memory_version": 3}
            return json_answer(200, context | {"sources": [{"type": "memory", "id": None}]})
        if method == "POST" and path.endswith("/memory"):
            items = json.loads(body)["items"]
            return json_answer(202, {"jobs": [job_body(f"job-{i}") for i, _ in enumerate(items)]})
        return json_answer(404, envelope("not_found", 404))

    def bodies(self, suffix: str) -> list[tuple[str, dict[str, Any]]]:
        return [(path, json.loads(body)) for _, path, body in self.requests if path.endswith(suffix)]

    @property
    def contexts(self) -> list[dict[str, Any]]:
        return [body for _, body in self.bodies("/memory/context")]

    @property
    def turns(self) -> list[tuple[str, list[dict[str, str]]]]:
        """(path, pairs) of every item ingested."""
        return [
            (path, item["user_assistant_pairs"])
            for path, body in self.bodies("/memory")
            for item in body["items"]
        ]


# These tests check what the memory adds, not how fast: on a busy machine the fake service's
# answer may take longer than the client's 3 s default, and the client would then skip the memory
# (as it should: a slow memory never holds an app up; the timeout tests below check that).
READ_TIMEOUT_S = 30.0


@pytest.fixture
def hippocampus() -> Iterator[FakeHippocampus]:
    with FakeHippocampus() as fake:
        yield fake


@pytest.fixture
def model() -> Iterator[ChatStub]:
    with ChatStub(reply=ANSWER) as stub:
        yield stub


def sync_chat(model: ChatStub, memory: MemoryClient, **options: Any) -> MemoryOpenAI:
    return with_memory(OpenAI(api_key="k", base_url=model.base_url, max_retries=0), memory, **options)


def async_chat(
    model: ChatStub, memory: AsyncMemoryClient | MemoryClient, **options: Any
) -> AsyncMemoryOpenAI:
    return with_memory(AsyncOpenAI(api_key="k", base_url=model.base_url, max_retries=0), memory, **options)


def memory_message(block: str = BLOCK) -> dict[str, str]:
    return {"role": "system", "content": f"{MEMORY_PREFIX}\n{block}"}


def stored(memory: MemoryClient, fake: FakeHippocampus) -> list[tuple[str, Any]]:
    """The turns the fake received, once the background writer sent what it was handed."""
    assert memory.flush(5)
    return fake.turns


# --- sync ----------------------------------------------------------------------------------------


def test_the_memory_goes_after_the_system_messages_and_the_turn_is_stored(
    model: ChatStub, hippocampus: FakeHippocampus
) -> None:
    with MemoryClient(endpoint=hippocampus.url, tenant="acme", timeout=READ_TIMEOUT_S) as memory:
        chat = sync_chat(model, memory, user="alice", max_words=120)
        answer = chat.chat.completions.create(model="gpt-4o-mini", messages=CONVERSATION, temperature=0)
        assert isinstance(answer, openai.types.chat.ChatCompletion)
        assert answer.choices[0].message.content == ANSWER and answer.id == "chatcmpl-1"
        assert model.last_messages == [SYSTEM, memory_message(), *CONVERSATION[1:]]
        assert model.requests[-1]["temperature"] == 0 and "user_id" not in model.requests[-1]
        assert hippocampus.contexts == [{"query": QUESTION["content"], "max_words": 120}]
        path = "/v1/tenants/acme/users/alice/memory"
        assert stored(memory, hippocampus) == [(path, [{"user": QUESTION["content"], "assistant": ANSWER}])]


def test_without_system_messages_the_memory_comes_first_and_user_id_picks_the_user(
    model: ChatStub, hippocampus: FakeHippocampus
) -> None:
    with MemoryClient(endpoint=hippocampus.url, tenant="acme", timeout=READ_TIMEOUT_S) as memory:
        chat = sync_chat(model, memory, user="alice")
        chat.chat.completions.create(model="m", messages=[QUESTION], user_id="bob")
        assert model.last_messages == [memory_message(), QUESTION]
        assert [path for path, _ in stored(memory, hippocampus)] == ["/v1/tenants/acme/users/bob/memory"]


def test_a_stream_passes_through_and_its_whole_text_is_stored(
    model: ChatStub, hippocampus: FakeHippocampus
) -> None:
    with MemoryClient(endpoint=hippocampus.url, tenant="acme", timeout=READ_TIMEOUT_S) as memory:
        chat = sync_chat(model, memory, user="alice")
        stream = chat.chat.completions.create(model="m", messages=CONVERSATION, stream=True)
        assert isinstance(stream, openai.Stream)
        chunks = list(stream)
        assert len(chunks) == 6 and all(chunk.id == "chatcmpl-1" for chunk in chunks)
        assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks) == ANSWER
        assert model.last_messages == [SYSTEM, memory_message(), *CONVERSATION[1:]]
        stream.close()  # after the end: stored once all the same
        assert stored(memory, hippocampus) == [
            ("/v1/tenants/acme/users/alice/memory", [{"user": QUESTION["content"], "assistant": ANSWER}])
        ]


def test_a_stream_closed_early_stores_what_was_given(model: ChatStub, hippocampus: FakeHippocampus) -> None:
    with MemoryClient(endpoint=hippocampus.url, tenant="acme", timeout=READ_TIMEOUT_S) as memory:
        chat = sync_chat(model, memory, user="alice")
        with chat.chat.completions.create(model="m", messages=[QUESTION], stream=True) as stream:
            given = ""
            for chunk in stream:
                given += chunk.choices[0].delta.content or ""
                if given:
                    break
        assert given and ANSWER.startswith(given) and given != ANSWER
        assert stored(memory, hippocampus) == [
            ("/v1/tenants/acme/users/alice/memory", [{"user": QUESTION["content"], "assistant": given}])
        ]
        # Closed before anything came: nothing to store.
        chat.chat.completions.create(model="m", messages=[QUESTION], stream=True).close()
        assert len(stored(memory, hippocampus)) == 1


# --- async ---------------------------------------------------------------------------------------


def test_async_with_and_without_a_stream(model: ChatStub, hippocampus: FakeHippocampus) -> None:
    async def scenario(memory: AsyncMemoryClient) -> tuple[Any, str, list[dict[str, Any]]]:
        chat = async_chat(model, memory, user="alice")
        answer = await chat.chat.completions.create(model="m", messages=CONVERSATION)
        first = model.last_messages
        stream = await chat.chat.completions.create(model="m", messages=[QUESTION], stream=True)
        assert isinstance(stream, openai.AsyncStream)
        text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream])
        assert model.last_messages == [memory_message(), QUESTION]
        await memory.aclose()
        return answer, text, first

    memory = AsyncMemoryClient(endpoint=hippocampus.url, tenant="acme", timeout=READ_TIMEOUT_S)
    answer, text, first = asyncio.run(scenario(memory))
    assert answer.choices[0].message.content == ANSWER and text == ANSWER
    assert first == [SYSTEM, memory_message(), *CONVERSATION[1:]]
    pair = [{"user": QUESTION["content"], "assistant": ANSWER}]
    assert hippocampus.turns == [("/v1/tenants/acme/users/alice/memory", pair)] * 2


def test_async_stream_closed_early_and_a_blocking_memory_client(
    model: ChatStub, hippocampus: FakeHippocampus
) -> None:
    async def scenario(memory: MemoryClient) -> str:
        chat = async_chat(model, memory, user="alice")
        stream = await chat.chat.completions.create(model="m", messages=[QUESTION], stream=True)
        given = ""
        async for chunk in stream:
            given += chunk.choices[0].delta.content or ""
            if given:
                break
        await stream.aclose()
        return given

    with MemoryClient(endpoint=hippocampus.url, tenant="acme", timeout=READ_TIMEOUT_S) as memory:
        given = asyncio.run(scenario(memory))
        assert given and given != ANSWER
        assert stored(memory, hippocampus) == [
            ("/v1/tenants/acme/users/alice/memory", [{"user": QUESTION["content"], "assistant": given}])
        ]
        assert model.last_messages == [memory_message(), QUESTION]


# --- memory down, the model's errors -------------------------------------------------------------


def test_memory_down_the_chat_goes_on_unchanged_and_nothing_of_it_is_logged(
    model: ChatStub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="hippocampus_client")
    messages = [SYSTEM, {"role": "user", "content": SECRET}]
    dead = f"http://127.0.0.1:{closed_port()}"
    with MemoryClient(endpoint=dead, tenant="acme", write_timeout=0.5) as memory:
        answer = sync_chat(model, memory, user="alice").chat.completions.create(model="m", messages=messages)
        assert answer.choices[0].message.content == ANSWER and model.last_messages == messages
        memory.flush(5)
        # A strict client raises: the wrapper logs and goes on all the same (without the circuit
        # breaker, so that the add is tried and fails rather than being skipped).
        strict = MemoryClient(endpoint=dead, tenant="acme", strict=True, breaker_cooldown=0)
        stream = sync_chat(model, strict, user="alice").chat.completions.create(
            model="m", messages=messages, stream=True
        )
        assert "".join(c.choices[0].delta.content or "" for c in stream) == ANSWER
        assert model.last_messages == messages
        strict.close()

    async def scenario() -> Any:
        async with AsyncMemoryClient(endpoint=dead, tenant="acme", strict=True) as memory:
            return await async_chat(model, memory, user="alice").chat.completions.create(
                model="m", messages=messages
            )

    assert asyncio.run(scenario()).choices[0].message.content == ANSWER and model.last_messages == messages
    assert "with_memory: context failed" in caplog.text and "with_memory: add failed" in caplog.text
    assert SECRET not in caplog.text and ANSWER not in caplog.text and "user_id=alice" in caplog.text


def test_a_hanging_memory_costs_its_timeout_only(model: ChatStub) -> None:
    with HangingServer() as hanging, MemoryClient(endpoint=hanging.url, tenant="acme", timeout=0.3) as memory:
        chat = sync_chat(model, memory, user="alice", store_turns=False)
        answer = chat.chat.completions.create(model="m", messages=[QUESTION], timeout=5)
        assert answer.choices[0].message.content == ANSWER and model.last_messages == [QUESTION]


def test_a_hanging_memory_costs_one_timeout_not_one_per_call_nor_at_exit(model: ChatStub) -> None:
    timeout = 1.0
    with HangingServer() as hanging:
        memory = MemoryClient(endpoint=hanging.url, tenant="acme", timeout=timeout)
        chat = sync_chat(model, memory, user="alice")
        amemory = AsyncMemoryClient(endpoint=hanging.url, tenant="acme", timeout=timeout)
        achat = async_chat(model, amemory, user="alice")

        async def async_calls() -> list[Any]:
            answers = [await achat.chat.completions.create(model="m", messages=[QUESTION]) for _ in range(5)]
            await amemory.aclose()
            return answers

        started = time.monotonic()
        answers = [chat.chat.completions.create(model="m", messages=[QUESTION]) for _ in range(5)]
        memory.close()  # the turns are held by the open circuit: reported, not waited for
        answers += asyncio.run(async_calls())
        elapsed = time.monotonic() - started
    assert [a.choices[0].message.content for a in answers] == [ANSWER] * 10
    assert model.last_messages == [QUESTION]
    # One timeout per client (and the model's own time), where one per call would be ten: the
    # margin scales with the timeout, not a fixed allowance an idle machine needs.
    one_per_call = 10 * timeout
    assert elapsed < one_per_call / 2, elapsed


def test_the_models_errors_propagate_unchanged_and_nothing_is_stored(
    model: ChatStub, hippocampus: FakeHippocampus
) -> None:
    model.fail_with(500)
    with MemoryClient(endpoint=hippocampus.url, tenant="acme", timeout=READ_TIMEOUT_S) as memory:
        chat = sync_chat(model, memory, user="alice")
        with pytest.raises(openai.InternalServerError):
            chat.chat.completions.create(model="m", messages=[QUESTION])
        with pytest.raises(openai.InternalServerError):
            chat.chat.completions.create(model="m", messages=[QUESTION], stream=True)

        async def scenario() -> None:
            await async_chat(model, memory, user="alice").chat.completions.create(
                model="m", messages=[QUESTION]
            )

        with pytest.raises(openai.InternalServerError):
            asyncio.run(scenario())
        assert stored(memory, hippocampus) == []


# --- the rest of the contract --------------------------------------------------------------------


def test_no_context_no_user_or_store_turns_off_leave_the_request_alone(
    model: ChatStub, hippocampus: FakeHippocampus, caplog: pytest.LogCaptureFixture
) -> None:
    with MemoryClient(endpoint=hippocampus.url, tenant="acme", timeout=READ_TIMEOUT_S) as memory:
        hippocampus.block = "  "  # a user the service knows nothing about yet
        sync_chat(model, memory, user="alice", store_turns=False).chat.completions.create(
            model="m", messages=[QUESTION]
        )
        assert model.last_messages == [QUESTION]
        with caplog.at_level(logging.WARNING, logger="hippocampus_client"):
            sync_chat(model, memory).chat.completions.create(model="m", messages=[QUESTION])
        assert model.last_messages == [QUESTION] and "no user" in caplog.text
        model.reply = ""  # an answer without text (e.g. only tool calls) is no turn to store
        sync_chat(model, memory, user="alice").chat.completions.create(model="m", messages=[QUESTION])
        assert stored(memory, hippocampus) == [] and len(hippocampus.contexts) == 2


def test_everything_else_is_the_sdks_own(model: ChatStub, hippocampus: FakeHippocampus) -> None:
    with MemoryClient(endpoint=hippocampus.url, tenant="acme", timeout=READ_TIMEOUT_S) as memory:
        client = OpenAI(api_key="k", base_url=model.base_url, max_retries=0)
        chat = with_memory(client, memory, user="alice")
        assert chat.openai is client and chat.base_url == client.base_url and chat.models is client.models
        assert chat.chat.completions.retrieve == client.chat.completions.retrieve
        faster = chat.with_options(timeout=5)
        assert isinstance(faster, MemoryOpenAI) and faster.openai.timeout == 5
        with pytest.raises(ConfigurationError):
            with_memory(client, AsyncMemoryClient(endpoint=hippocampus.url, tenant="acme"))  # type: ignore[call-overload]
        with pytest.raises(ConfigurationError):
            with_memory(client, memory, max_words=0)


def test_where_the_memory_goes_and_what_the_query_is() -> None:
    developer = {"role": "developer", "content": "Be brief."}
    parts = {
        "role": "user",
        "content": [{"type": "text", "text": "Look:"}, {"type": "image_url", "image_url": {}}],
    }
    assert with_block([SYSTEM, developer, QUESTION, SYSTEM], "B", "P") == [
        SYSTEM, developer, {"role": "system", "content": "P\nB"}, QUESTION, SYSTEM,
    ]  # fmt: skip
    assert with_block([QUESTION], None, "P") == [QUESTION]
    assert last_user_text([parts, {"role": "assistant", "content": "?"}]) == "Look:"
    assert last_user_text([SYSTEM]) is None
