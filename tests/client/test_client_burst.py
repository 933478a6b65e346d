"""The client burst suite (client/README.md, "The background writer"): 5,000 `add()`s across 50
users, then a normal interpreter exit. Everything arrives once, in order per user, within
`exit_timeout` (10 s); the same with the server throttling; and with the server down, the
documented fallback: the spool is written at exit and sent by the next start."""

import subprocess
import sys
import time
from pathlib import Path

from client_ingest_server import IngestServer, Items
from client_test_servers import closed_port

from hippocampus_client import MemoryClient

USERS, PER_USER, EXIT_TIMEOUT_S = 50, 100, 10.0
BURST = """
import sys, time
from hippocampus_client import MemoryClient
url, users, per_user, spool = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] or None
memory = MemoryClient(endpoint=url, tenant="acme", exit_timeout=float(sys.argv[5]), spool_path=spool)
for n in range(per_user):
    for u in range(users):
        memory.add(f"user-{u}", f"User: turn {n}\\nAssistant: noted.", id=f"u{u}-{n:04d}")
print(time.monotonic(), flush=True)  # the adds are made: the exit flush starts now
"""


def burst(url: str, spool: Path | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run the burst in its own interpreter; its result and how long its exit took."""
    arguments = [url, str(USERS), str(PER_USER), str(spool or ""), str(EXIT_TIMEOUT_S)]
    finished = subprocess.run(
        [sys.executable, "-c", BURST, *arguments], capture_output=True, text=True, timeout=120, check=False
    )
    ended = time.monotonic()
    assert finished.returncode == 0, finished.stderr
    return finished, ended - float(finished.stdout)


def expected(user: int) -> list[str]:
    return [f"u{user}-{n:04d}" for n in range(PER_USER)]


def assert_all_delivered_once_in_order(server: IngestServer) -> None:
    for user in range(USERS):
        assert server.ids(f"user-{user}") == expected(user), f"user-{user}"


def test_a_burst_of_5000_adds_is_delivered_at_exit_once_and_in_order() -> None:
    with IngestServer() as server:
        finished, exit_s = burst(server.url)
        assert_all_delivered_once_in_order(server)
    assert exit_s < EXIT_TIMEOUT_S, f"the exit flush took {exit_s:.1f} s"
    assert len(server.bodies) < USERS * PER_USER / 10, "merged into requests of many items"
    assert "unsent" not in finished.stderr


def test_a_burst_against_a_throttling_server_is_delivered_once_and_in_order() -> None:
    def every_third(number: int, user: str, items: Items) -> tuple[int, dict[str, str]] | None:
        return (429, {}) if number % 3 == 0 else None

    with IngestServer(every_third) as server:
        finished, exit_s = burst(server.url)
        assert_all_delivered_once_in_order(server)
    assert exit_s < EXIT_TIMEOUT_S, f"the exit flush took {exit_s:.1f} s"
    assert sum(1 for status, _, _ in server.bodies if status == 429) > 0
    assert "unsent" not in finished.stderr


def test_a_burst_with_the_server_down_is_spooled_at_exit_and_sent_by_the_next_start(tmp_path: Path) -> None:
    spool = tmp_path / "spool.jsonl"
    finished, exit_s = burst(f"http://127.0.0.1:{closed_port()}", spool)
    assert exit_s < 3.0, "the open circuit ends the exit flush at once"
    assert f"{USERS * PER_USER} items unsent (spooled to {spool})" in finished.stderr
    assert "turn" not in finished.stderr  # ids only, never content
    with (
        IngestServer() as server,
        MemoryClient(endpoint=server.url, tenant="acme", spool_path=spool) as memory,
    ):
        assert memory.flush(EXIT_TIMEOUT_S)
        assert_all_delivered_once_in_order(server)
    assert not spool.exists()
