"""The client burst suite against the local stack (or a deployed one, MEMORY_API_URL): 5,000
`add()`s across 50 users in a process that then exits normally; every item is in its user's
export exactly once, in the order it was added (client/README.md, "The background writer").

Facts (`infer: false`): written at once, so the export can be checked as soon as the process has
exited, and 100 per user stays within the API's 200. A fact sent twice would replace itself but
leave two jobs: the jobs show that each item was sent once, and their times the order."""

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
from e2e_support import Api

from hippocampus_client import Export, MemoryClient
from tests.support.client_burst import item_ids, run_burst, user_ids

pytestmark = pytest.mark.e2e
USERS, PER_USER = 50, 100
USER_IDS, EXPECTED = user_ids(USERS), item_ids(PER_USER)
# The pace is the stack's, not the client's: on a loaded 2-core machine the local stack writes a
# few hundred facts a second. The client's own figure, against a fast server, is in
# tests/client/test_client_burst.py (well under its default 10 s).
EXIT_TIMEOUT_S = 240.0


def test_a_burst_of_5000_adds_then_exit_is_in_the_exports_once_and_in_order(
    own_api: Api, tenant: str
) -> None:
    api = own_api  # a stack of its own: its load would hold up the other tests' (conftest.py)
    done = run_burst(api.base_url, tenant, USERS, PER_USER, EXIT_TIMEOUT_S)
    assert "unsent" not in done.stderr and "failed" not in done.stderr, done.stderr[-2000:]
    exit_s = done.exit_s
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
