"""The background writer behind `add` (client/README.md, "The background writer"): returns at once,
merges each user's adds into requests within the API's limits and in order, sends throttled
requests again, refuses to resend what the service refused, loses nothing handed to it before a
clean exit, bounds its queue and its wait at exit, and spools or reports what it could not send."""

import asyncio
import json
import logging
import os
import re
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from client_ingest_server import IngestServer, Items
from client_test_servers import (
    HangingServer,
    RecordingServer,
    closed_port,
    job_body,
    json_answer,
    mocked,
    mocked_async,
)

from hippocampus_client import MemoryClient
from hippocampus_client.writer import Unsent

CLIENT_ITEM_ID = re.compile(r"item-[0-9a-f]{32}")  # the id the writer gives an item without one

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
    texts = [item["text"] for _, _, body in server.requests for item in json.loads(body)["items"]]
    assert texts == [f"item {n}" for n in range(100)]
    assert len(server.requests) < 100, "the adds were merged into fewer requests"


def test_the_exit_waits_a_bounded_time_for_a_hanging_endpoint() -> None:
    with HangingServer() as server:
        started = time.monotonic()
        finished = run_script(server.url, 3, exit_timeout=1.0)
    assert finished.returncode == 0, finished.stderr
    assert time.monotonic() - started < 6.0
    assert "3 items unsent" in finished.stderr


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
    """A transport handler that holds every request until opened; records each request."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.requests: list[tuple[str, dict[str, str], dict[str, Any], int]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.open.wait(10)
        body = json.loads(request.content)
        user = request.url.path.split("/users/")[1].split("/")[0]
        self.requests.append((user, dict(request.headers), body, len(request.content)))
        return httpx2.Response(202, json={"jobs": [job_body() for _ in body["items"]]})

    def items(self, user: str | None = None) -> Items:
        return [item for who, _, body, _ in self.requests if user in (None, who) for item in body["items"]]

    @property
    def texts(self) -> list[str]:
        return [item["text"] for item in self.items()]


def wait_in_flight(memory: MemoryClient, items: int) -> None:
    deadline = time.monotonic() + 5
    while memory.writer_stats().in_flight < items and time.monotonic() < deadline:
        time.sleep(0.001)


def test_a_full_queue_drops_the_newest_and_warns_with_counts_only(caplog: pytest.LogCaptureFixture) -> None:
    gate = Gate()
    memory = mocked(gate, max_queue=5)
    with caplog.at_level(logging.WARNING, logger="hippocampus_client"):
        memory.add("alice", "secret 0")
        wait_in_flight(memory, 1)  # a thread has taken the first one and waits on the gate
        started = time.monotonic()
        for n in range(1, 20):
            memory.add("alice", f"secret {n}")
    assert time.monotonic() - started < 0.5, "add never waits for the service"
    stats = memory.writer_stats()
    assert (stats.in_flight, stats.queued, stats.dropped) == (1, 5, 14)
    assert "14 items dropped so far" not in caplog.text  # warned at the 1st, 2nd, 4th, 8th drop only
    assert "8 items dropped so far" in caplog.text and "secret" not in caplog.text
    gate.open.set()
    assert memory.flush(5)
    assert gate.texts == [f"secret {n}" for n in range(6)]
    assert (memory.writer_stats().sent, memory.writer_stats().requests) == (6, 2)


def test_each_users_adds_are_merged_within_the_limits_and_kept_in_order() -> None:
    gate = Gate()
    memory = mocked(gate)
    for n in range(250):
        memory.add("alice", f"alice {n}", id=f"a-{n}")
        memory.add("bob", f"bob {n}", id=f"b-{n}")
    big = "x" * 30_000  # near the API's 32,000 characters: the body size bounds the request
    for n in range(40):
        memory.add("carol", big, id=f"c-{n}")
    gate.open.set()
    assert memory.flush(10)
    for user, prefix, count in [("alice", "a", 250), ("bob", "b", 250), ("carol", "c", 40)]:
        assert [item["id"] for item in gate.items(user)] == [f"{prefix}-{n}" for n in range(count)]
    assert all(len(body["items"]) <= 100 and size < 1024 * 1024 for _, _, body, size in gate.requests)
    assert len(gate.requests) <= 3 * 4 + 4, "merged: a few requests per user, not one per add"
    assert max(len(body["items"]) for user, _, body, _ in gate.requests if user == "carol") > 1
    stats = memory.writer_stats()
    assert (stats.sent, stats.failed, stats.requests) == (540, 0, len(gate.requests))


def test_adds_that_differ_in_upsert_or_carry_an_idempotency_key_are_not_merged() -> None:
    gate = Gate()
    memory = mocked(gate)
    memory.add("alice", "first", id="a1")
    wait_in_flight(memory, 1)
    memory.add("alice", "fact", id="a2", infer=False)
    memory.add("alice", "fact", id="a3", infer=False)
    memory.add("alice", "fact", id="a4", infer=False, upsert=False)
    memory.add("alice", "turn", id="a5", idempotency_key="key-5")
    memory.add("alice", "turn", id="a6")
    memory.add("alice", "turn", id="a7")
    gate.open.set()
    assert memory.flush(5)
    sent = [
        ([item["id"] for item in body["items"]], body["upsert"], headers.get("idempotency-key"))
        for _, headers, body, _ in gate.requests
    ]
    assert sent == [
        (["a1"], True, None),
        (["a2", "a3"], True, None),
        (["a4"], False, None),
        (["a5"], True, "key-5"),
        (["a6", "a7"], True, None),
    ]


@pytest.mark.parametrize("status", [429, 503])
def test_throttled_requests_are_sent_again_until_accepted(status: int) -> None:
    def throttle_first(number: int, user: str, items: Items) -> tuple[int, dict[str, str]] | None:
        return (status, {"Retry-After": "0"}) if number <= 15 else None

    users = ["alice", "bob", "carol"]
    with IngestServer(throttle_first) as server, MemoryClient(endpoint=server.url, tenant="acme") as memory:
        for n in range(100):
            for user in users:
                memory.add(user, f"turn {n}", id=f"{user}-{n}")
        assert memory.flush(20)
        for user in users:
            assert server.ids(user) == [f"{user}-{n}" for n in range(100)]
        stats = memory.writer_stats()
    assert (stats.sent, stats.failed) == (300, 0)
    assert sum(1 for answer, _, _ in server.bodies if answer == status) == 15


def test_a_refused_add_fails_alone_and_its_neighbours_are_sent(caplog: pytest.LogCaptureFixture) -> None:
    def refuse_secret(number: int, user: str, items: Items) -> tuple[int, dict[str, str]] | None:
        return (422, {}) if any(item["text"] == "my secret" for item in items) else None

    gate = threading.Event()

    def held(number: int, user: str, items: Items) -> tuple[int, dict[str, str]] | None:
        gate.wait(5)  # the first request waits: the others queue up and are merged
        return refuse_secret(number, user, items)

    caplog.set_level(logging.WARNING, logger="hippocampus_client")
    with IngestServer(held) as server, MemoryClient(endpoint=server.url, tenant="acme") as memory:
        memory.add("alice", "first", id="a-0")
        for n in range(1, 6):
            memory.add("alice", "my secret" if n == 3 else f"turn {n}", id=f"a-{n}")
        gate.set()
        assert memory.flush(10)
        stats = memory.writer_stats()
    assert server.ids("alice") == ["a-0", "a-1", "a-2", "a-4", "a-5"]
    assert (stats.sent, stats.failed) == (5, 1)
    assert "status=422" in caplog.text and "item_ids=a-3" in caplog.text
    assert "my secret" not in caplog.text
    assert sum(1 for answer, _, _ in server.bodies if answer == 422) == 2, "merged, then alone: once each"


def test_a_server_error_is_not_sent_again_and_does_not_stop_the_writer() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.url.path)
        if "/users/alice/" in request.url.path:
            return httpx2.Response(500, json={})
        return httpx2.Response(202, json={"jobs": [job_body()]})

    seen: list[str] = []
    memory = mocked(handler)
    memory.add("alice", "one")
    memory.add("bob", "two")
    assert memory.flush(5)
    stats = memory.writer_stats()
    assert (stats.sent, stats.failed) == (1, 1)
    assert len(seen) == 2, "a 500 may have been applied: it is not sent again"


def test_with_the_service_down_what_is_left_is_spooled_reported_and_sent_on_the_next_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = tmp_path / "unsent.jsonl"
    reported: list[list[Unsent]] = []
    caplog.set_level(logging.WARNING, logger="hippocampus_client")
    dead = f"http://127.0.0.1:{closed_port()}"
    memory = MemoryClient(endpoint=dead, tenant="acme", spool_path=spool, on_unsent=reported.append)
    for n in range(3):
        memory.add("alice", f"private {n}", id=f"a-{n}")
    memory.add("bob", [{"text": "private b", "id": "b-0"}, {"text": "private c"}])
    started = time.monotonic()
    assert memory.close(5) is False
    assert time.monotonic() - started < 2, "the open circuit ends the wait at once"
    assert len(reported) == 1
    bob = next(entry for entry in reported[0] if entry.user_id == "bob")
    made = bob.item_ids[1]  # the client's id for the item given without one
    assert isinstance(made, str) and CLIENT_ITEM_ID.fullmatch(made)
    assert sorted(reported[0]) == [Unsent("alice", ["a-0", "a-1", "a-2"]), Unsent("bob", ["b-0", made])]
    assert "5 items unsent" in caplog.text and "item_ids=a-0,a-1,a-2" in caplog.text
    assert f"user_id=bob items=2 item_ids=b-0,{made}" in caplog.text
    assert "private" not in caplog.text
    assert stat.S_IMODE(spool.stat().st_mode) == 0o600
    assert memory.writer_stats().unsent == 5
    # Another tenant's line stays for that tenant's client.
    with spool.open("a") as file:
        file.write(
            json.dumps({"tenant_id": "other", "user_id": "zed", "items": [{"text": "z"}], "upsert": True})
        )
        file.write("\n")

    monkeypatch.setenv("HIPPOCAMPUS_SPOOL", str(spool))
    with IngestServer() as server, MemoryClient(endpoint=server.url, tenant="acme") as again:
        assert again.flush(5)
        assert server.ids("alice") == ["a-0", "a-1", "a-2"]
        assert server.ids("bob") == ["b-0", made], "replayed under the same id: deduplicated if sent twice"
    assert [json.loads(line)["tenant_id"] for line in spool.read_text().splitlines()] == ["other"]


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


def test_a_request_that_timed_out_is_sent_again_under_the_same_item_ids() -> None:
    # The first request is applied, but answered too late: the client timed out and sends it
    # again. The service deduplicates by item id: the resend must carry the same ids.
    received: list[list[dict[str, Any]]] = []

    def late_first(method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        received.append(json.loads(body)["items"])
        if len(received) == 1:
            time.sleep(1.0)  # applied, but the answer comes after the client's 0.3 s
        return json_answer(202, {"jobs": [job_body()]})

    with (
        RecordingServer(late_first) as server,
        MemoryClient(endpoint=server.url, tenant="acme", write_timeout=0.3, breaker_cooldown=0) as memory,
    ):
        memory.add("alice", [{"text": "no id"}, {"text": "has one", "id": "t-1"}])
        assert memory.flush(20)
    assert len(received) == 2, "the timed-out request was sent again"
    assert received[0] == received[1], "the same items, under the same ids"
    made = received[0][0].get("id")
    assert isinstance(made, str) and CLIENT_ITEM_ID.fullmatch(made)
    assert received[0][1]["id"] == "t-1"


def spool_lines(path: Path, ids: list[str]) -> None:
    with path.open("a") as file:
        for item_id in ids:
            line = {"tenant_id": "acme", "user_id": "alice", "items": [{"text": "x", "id": item_id}]}
            file.write(json.dumps(line | {"upsert": True}) + "\n")


def claimed_files(spool: Path) -> list[Path]:
    return list(spool.parent.glob(f"{spool.name}.*.sending"))


def wait_until(condition: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(condition())


DIES_AFTER_CLAIMING = """
import os, sys
from hippocampus_client import MemoryClient
MemoryClient(endpoint=sys.argv[1], tenant="acme", spool_path=sys.argv[2])  # claims the spool
os._exit(0)  # dies before sending anything: no close, no exit flush
"""


def test_a_spool_claimed_by_a_process_that_died_before_sending_is_sent_by_the_next_start(
    tmp_path: Path,
) -> None:
    spool = tmp_path / "unsent.jsonl"
    spool_lines(spool, ["s-0", "s-1", "s-2"])
    dead = f"http://127.0.0.1:{closed_port()}"
    command = [sys.executable, "-c", DIES_AFTER_CLAIMING, dead, str(spool)]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert finished.returncode == 0, finished.stderr
    assert not spool.exists() and len(claimed_files(spool)) == 1, "claimed, and kept until delivered"
    with (
        IngestServer() as server,
        MemoryClient(endpoint=server.url, tenant="acme", spool_path=spool) as memory,
    ):
        assert memory.flush(10)
        assert server.ids("alice") == ["s-0", "s-1", "s-2"]
        assert wait_until(lambda: not claimed_files(spool)), "delivered: the claimed file is deleted"


def test_a_claim_is_kept_while_its_client_lives_and_spooled_again_at_its_close(tmp_path: Path) -> None:
    spool = tmp_path / "unsent.jsonl"
    spool_lines(spool, ["s-0", "s-1"])
    dead = f"http://127.0.0.1:{closed_port()}"
    holder = MemoryClient(endpoint=dead, tenant="acme", spool_path=spool)  # claims it, cannot send
    with IngestServer() as server:
        with MemoryClient(endpoint=server.url, tenant="acme", spool_path=spool) as other:
            assert other.flush(5) and server.ids("alice") == [], "a live client's claim is not taken"
        assert len(claimed_files(spool)) == 1
        holder.close(0)
        assert not claimed_files(spool) and spool.exists(), "spooled again: the claimed file goes"
        with MemoryClient(endpoint=server.url, tenant="acme", spool_path=spool) as again:
            assert again.flush(10)
            assert server.ids("alice") == ["s-0", "s-1"]
    assert wait_until(lambda: os.listdir(tmp_path) == []), "all delivered: no spool, no claimed file"
