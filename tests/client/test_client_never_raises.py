"""The default client never raises into the host application (client/README.md, "Never raises"):
a dead, hanging, failing or garbage-speaking endpoint turns every read into None, every delete
into False, and is logged with ids and codes but never content."""

import asyncio
import json
import logging
import time
from typing import Any

import httpx2
import pytest
from client_test_servers import HangingServer, closed_port, envelope, mocked, mocked_async

from hippocampus_client import AsyncMemoryClient, MemoryClient

SECRET = "my grandmother's secret candle recipe"


def every_read(memory: MemoryClient) -> dict[str, Any]:
    return {
        "get": memory.get("alice"),
        "get_full": memory.get_full("alice"),
        "query": memory.query("alice", SECRET, top_k=3),
        "context": memory.context("alice", SECRET),
        "history": memory.history("alice"),
        "facts": memory.facts("alice"),
        "episodes": memory.episodes("alice"),
        "records": memory.records("alice", as_of="2022-06-01T00:00:00Z"),
        "export": memory.export("alice"),
        "job": memory.job("job-1"),
        "wait": memory.wait(["job-1"], timeout=0.5),
        "usage": memory.usage(),
        "put": memory.put("alice", SECRET, 1),
    }


def test_a_dead_endpoint_makes_reads_none_deletes_false_and_add_return_at_once() -> None:
    memory = MemoryClient(endpoint=f"http://127.0.0.1:{closed_port()}", tenant="acme")
    started = time.monotonic()
    assert every_read(memory) == dict.fromkeys(every_read(memory), None)
    assert memory.delete("alice") is False
    assert memory.delete_fact("alice", "pref") is False
    assert memory.delete_record("alice", "rec_1") is False
    assert memory.add("alice", "User: hi\nAssistant: hello") is None
    assert memory.flush(5) is False  # held, not lost: the circuit is open (client/README.md)
    assert (memory.writer_stats().queued, memory.writer_stats().failed) == (1, 0)
    assert time.monotonic() - started < 3, "a refused connection is not retried nor waited on"
    memory.close()


def test_a_hanging_endpoint_returns_none_after_the_default_three_seconds() -> None:
    with HangingServer() as server:
        memory = MemoryClient(endpoint=server.url, tenant="acme")
        started = time.monotonic()
        assert memory.get("alice") is None
        elapsed = time.monotonic() - started
        memory.close(0)
    assert 2.5 <= elapsed < 4.0, elapsed


def test_a_configured_timeout_bounds_each_read_of_both_clients() -> None:
    with HangingServer() as server:
        memory = MemoryClient(endpoint=server.url, tenant="acme", timeout=0.3)
        reads = [
            lambda: memory.query("alice", "q"),
            lambda: memory.context("alice"),
            lambda: memory.export("a"),
        ]
        for read in reads:
            started = time.monotonic()
            assert read() is None
            assert time.monotonic() - started < 0.9
        async_memory = AsyncMemoryClient(endpoint=server.url, tenant="acme", timeout=0.3)
        started = time.monotonic()
        assert asyncio.run(async_memory.get("alice")) is None
        assert time.monotonic() - started < 0.9
        memory.close(0)


def test_a_server_error_is_logged_with_ids_and_code_but_never_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def fail(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            500, json=envelope("internal_error", 500), headers={"x-amzn-RequestId": "req-42"}
        )

    memory = mocked(fail)
    with caplog.at_level(logging.WARNING, logger="hippocampus_client"):
        assert memory.query("alice", SECRET) is None
        assert memory.put("alice", SECRET, 3) is None
        memory.add("alice", SECRET)
        memory.flush(5)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "code=internal_error" in logged and "request_id=req-42" in logged and "user_id=alice" in logged
    assert "candle" not in logged
    assert len(caplog.records) == 3


GARBAGE = [
    b"<html><body>502 Bad Gateway</body></html>",
    b'{"memory": "unterminated',
    b"[1, 2, 3]",
    b'"just a string"',
    json.dumps({"memory": 5, "version": "two"}).encode(),
    json.dumps({"results": "nope", "context": None, "versions": {}, "jobs": 1, "facts": [7]}).encode(),
    b"",
    b"\x00\xff\xfe garbage",
]


@pytest.mark.parametrize("body", GARBAGE, ids=range(len(GARBAGE)))
def test_a_garbage_answer_with_status_200_is_none_for_every_read(body: bytes) -> None:
    memory = mocked(lambda request: httpx2.Response(200, content=body))
    assert every_read(memory) == dict.fromkeys(every_read(memory), None)


def test_the_async_client_returns_none_on_a_dead_endpoint_and_garbage() -> None:
    async def reads() -> list[Any]:
        dead = AsyncMemoryClient(endpoint=f"http://127.0.0.1:{closed_port()}", tenant="acme")
        garbage = mocked_async(lambda request: httpx2.Response(200, content=b"<html>"))
        results = [
            await dead.get("alice"),
            await dead.query("alice", SECRET),
            await garbage.get_full("alice"),
        ]
        results += [await garbage.context("alice"), await garbage.delete("alice")]
        await dead.aclose()
        await garbage.aclose()
        return results

    # A DELETE answered with an HTML page was not the API's answer: not reported as done.
    assert asyncio.run(reads()) == [None, None, None, None, False]


def test_add_with_nothing_to_store_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    memory = mocked(lambda request: httpx2.Response(202, json={"jobs": []}))
    with caplog.at_level(logging.WARNING, logger="hippocampus_client"):
        assert memory.add("alice", [{"role": "system", "content": "You are helpful."}]) is None
        assert memory.add("alice", 42) is None  # type: ignore[arg-type]
        assert memory.wait(42) is None  # type: ignore[arg-type]
    assert caplog.text.count("code=invalid_input") == 2
    assert memory.writer_stats().queued == 0
