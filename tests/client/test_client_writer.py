"""The background writer behind `add` (client/README.md, "The background writer"): returns at once,
loses nothing handed to it before a clean exit, bounds its queue and its wait at exit."""

import asyncio
import json
import logging
import subprocess
import sys
import threading
import time
from typing import Any

import httpx2
import pytest
from client_test_servers import HangingServer, RecordingServer, job_body, json_answer, mocked, mocked_async

SCRIPT = """
import sys
from hippocampus_client import MemoryClient
memory = MemoryClient(endpoint=sys.argv[1], tenant="acme", exit_timeout=float(sys.argv[3]))
for n in range(int(sys.argv[2])):
    memory.add("alice", f"item {n}")
print(memory.writer_stats().sent)
"""


def run_script(url: str, count: int, exit_timeout: float = 10.0) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", SCRIPT, url, str(count), str(exit_timeout)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def slow_ingest(method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
    time.sleep(0.005)  # slower than the script adds: most items are still queued when it exits
    return json_answer(202, {"jobs": [job_body(f"job-{len(body)}")]})


def test_everything_added_before_a_clean_exit_is_sent() -> None:
    with RecordingServer(slow_ingest) as server:
        finished = run_script(server.url, 100)
    assert finished.returncode == 0, finished.stderr
    assert int(finished.stdout) < 100, "the script must exit with items still queued"
    texts = [json.loads(body)["items"][0]["text"] for _, _, body in server.requests]
    assert texts == [f"item {n}" for n in range(100)]


def test_the_exit_waits_a_bounded_time_for_a_hanging_endpoint() -> None:
    with HangingServer() as server:
        started = time.monotonic()
        finished = run_script(server.url, 3, exit_timeout=1.0)
    assert finished.returncode == 0, finished.stderr
    assert time.monotonic() - started < 6.0


FORK_SCRIPT = """
import os, sys, time
from hippocampus_client import MemoryClient
memory = MemoryClient(endpoint=sys.argv[1], tenant="acme", exit_timeout=10)
memory.add("alice", "one")
memory.add("alice", "two")
child = os.fork()
if child == 0:
    sys.exit(0)
started = time.monotonic()
os.waitpid(child, 0)
print(time.monotonic() - started)
os._exit(0)
"""


def test_a_forked_child_does_not_wait_at_exit_for_what_its_parent_queued() -> None:
    with HangingServer() as server:
        command = [sys.executable, "-W", "ignore", "-c", FORK_SCRIPT, server.url]
        finished = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert finished.returncode == 0, finished.stderr
    assert float(finished.stdout) < 3.0


class Gate:
    """A transport handler that holds every request until opened; records the texts."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.texts: list[str] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.open.wait(10)
        self.texts.append(json.loads(request.content)["items"][0]["text"])
        return httpx2.Response(202, json={"jobs": [job_body()]})


def test_a_full_queue_drops_the_newest_and_warns_with_counts_only(caplog: pytest.LogCaptureFixture) -> None:
    gate = Gate()
    memory = mocked(gate, max_queue=5)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="hippocampus_client"):
        memory.add("alice", "secret 0")
        while memory.writer_stats().in_flight == 0 and time.monotonic() - started < 2:
            time.sleep(0.001)  # the thread has taken the first one and waits on the gate
        started = time.monotonic()
        for n in range(1, 20):
            memory.add("alice", f"secret {n}")
    assert time.monotonic() - started < 0.5, "add never waits for the service"
    stats = memory.writer_stats()
    assert (stats.in_flight, stats.queued, stats.dropped) == (1, 5, 14)
    assert "14 dropped so far" not in caplog.text  # warned at the 1st, 2nd, 4th, 8th drop only
    assert "8 dropped so far" in caplog.text and "secret" not in caplog.text
    gate.open.set()
    assert memory.flush(5)
    assert gate.texts == [f"secret {n}" for n in range(6)]
    assert memory.writer_stats().sent == 6


def test_a_failed_send_does_not_stop_the_writer() -> None:
    answers = iter([httpx2.Response(500, json={}), httpx2.Response(202, json={"jobs": [job_body()]})])
    memory = mocked(lambda request: next(answers))
    memory.add("alice", "one")
    memory.add("alice", "two")
    assert memory.flush(5)
    stats = memory.writer_stats()
    assert (stats.sent, stats.failed) == (1, 1)


def test_flush_says_when_it_timed_out_and_close_refuses_later_adds() -> None:
    gate = Gate()
    memory = mocked(gate)
    memory.add("alice", "held")
    assert memory.flush(0.1) is False
    gate.open.set()
    assert memory.close(5) is True
    assert memory.add("alice", "after close") is None
    assert memory.writer_stats().dropped == 1
    assert gate.texts == ["held"]


def test_strict_add_sends_now_and_returns_the_jobs() -> None:
    sent: list[dict[str, Any]] = []

    def ingest(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return httpx2.Response(202, json={"jobs": [job_body("job-a"), job_body("job-b", "completed")]})

    jobs = mocked(ingest, strict=True).add("alice", [{"text": "a"}, {"text": "b", "infer": False}])
    assert [job.job_id for job in jobs or []] == ["job-a", "job-b"]
    assert [job.final for job in jobs or []] == [False, True]
    assert len(sent) == 1


def test_async_adds_outlive_the_event_loop_that_made_them() -> None:
    gate = Gate()
    memory = mocked_async(gate)

    async def chat() -> None:
        for n in range(3):
            assert await memory.add("alice", f"turn {n}") is None

    asyncio.run(chat())  # the loop is gone; what it handed over is still to be sent
    gate.open.set()
    assert asyncio.run(memory.flush(5))
    assert gate.texts == ["turn 0", "turn 1", "turn 2"]
