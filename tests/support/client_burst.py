"""A burst of client adds in an interpreter of its own, which then exits normally: what the
e2e burst test checks and bench/bench_client.py measures (client/README.md, "The background
writer"). Facts (`infer: false`), `fact-000`… per user `burst-0`…, added round-robin."""

import subprocess
import sys
import time
from dataclasses import dataclass

BURST = """
import sys, time
from hippocampus_client import MemoryClient
url, tenant, users, per_user = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
memory = MemoryClient(endpoint=url, tenant=tenant, exit_timeout=float(sys.argv[5]))
for n in range(per_user):
    for u in range(users):
        memory.add(f"burst-{u}", f"Fact {n} of user {u}.", id=f"fact-{n:03d}", infer=False)
print(time.monotonic(), flush=True)  # the adds are made: the exit flush starts now
"""


@dataclass(frozen=True)
class Burst:
    exit_s: float  # from the last add to the process's end
    stderr: str  # what the client logged (unsent, failed)


def user_ids(users: int) -> list[str]:
    return [f"burst-{u}" for u in range(users)]


def item_ids(per_user: int) -> list[str]:
    return [f"fact-{n:03d}" for n in range(per_user)]


def run_burst(url: str, tenant: str, users: int, per_user: int, exit_timeout: float) -> Burst:
    arguments = [url, tenant, str(users), str(per_user), str(exit_timeout)]
    finished = subprocess.run(
        [sys.executable, "-c", BURST, *arguments],
        capture_output=True,
        text=True,
        timeout=exit_timeout + 60,
        check=False,
    )
    ended = time.monotonic()
    assert finished.returncode == 0, finished.stderr
    return Burst(ended - float(finished.stdout), finished.stderr)
