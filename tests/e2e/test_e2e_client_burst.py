"""The client burst suite against the local stack (or a deployed one, MEMORY_API_URL): 5,000
`add()`s across 50 users in a process that then exits normally; every item is in its user's
export exactly once, in the order it was added (client/README.md, "The background writer").

Facts (`infer: false`): written at once, so the export can be checked as soon as the process has
exited, and 100 per user stays within the API's 200. A fact sent twice would replace itself but
leave two jobs: the jobs show that each item was sent once, and their times the order."""

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
from e2e_support import Api

from hippocampus_client import Export, MemoryClient

pytestmark = pytest.mark.e2e
USERS, PER_USER = 50, 100
USER_IDS = [f"burst-{u}" for u in range(USERS)]
EXPECTED = [f"fact-{n:03d}" for n in range(PER_USER)]
# The pace is the stack's, not the client's: on a loaded 2-core machine the local stack writes a
# few hundred facts a second. The client's own figure, against a fast server, is in
# tests/client/test_client_burst.py (well under its default 10 s).
EXIT_TIMEOUT_S = 240.0
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


def test_a_burst_of_5000_adds_then_exit_is_in_the_exports_once_and_in_order(api: Api, tenant: str) -> None:
    arguments = [api.base_url, tenant, str(USERS), str(PER_USER), str(EXIT_TIMEOUT_S)]
    finished = subprocess.run(
        [sys.executable, "-c", BURST, *arguments],
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT_S + 60,
        check=False,
    )
    exit_s = time.monotonic() - float(finished.stdout or "nan")
    assert finished.returncode == 0, finished.stderr
    assert "unsent" not in finished.stderr and "failed" not in finished.stderr, finished.stderr[-2000:]
    assert exit_s < EXIT_TIMEOUT_S
    memory = MemoryClient(endpoint=api.base_url, tenant=tenant, strict=True, timeout=30.0)
    with memory, ThreadPoolExecutor(3) as pool:  # three at a time: the local stack's concurrency
        for user, export in zip(USER_IDS, pool.map(memory.export, USER_IDS), strict=True):
            assert_once_and_in_order(user, export)
    print(f"burst: {USERS * PER_USER} adds across {USERS} users, exit flush {exit_s:.1f} s")


def assert_once_and_in_order(user: str, export: Export | None) -> None:
    assert export is not None and export.memory is not None
    assert sorted(fact.id for fact in export.memory.facts) == EXPECTED, user
    assert sorted(job.item_id for job in export.jobs) == EXPECTED, f"{user}: each item sent once"
    created = {job.item_id: datetime.fromisoformat(job.created_at or "") for job in export.jobs}
    times = [created[item] for item in EXPECTED]
    assert times == sorted(times), f"{user}: stored in the order added"
