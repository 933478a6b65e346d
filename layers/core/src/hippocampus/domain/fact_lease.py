"""One writer of a user's facts at a time, so the fact limits hold under concurrency (docs/api.md "Limits").

A request that writes facts holds them with a lease on the user's memory item, then reads the
facts, checks the limits and writes; every fact write is conditional on the lease. The lease
outlives the ingest function's timeout, so a holder never loses it while it runs; one that
crashed holding it blocks the user's fact writes until it expires.
"""

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hippocampus.contracts.errors import WriteConflict
from hippocampus.contracts.names import FACT_WRITE_LEASE_S
from hippocampus.contracts.ports import MemoryStore
from hippocampus.observability import MetricName, record_metric

# How long a request waits for another one writing the same user's facts, and its pauses.
LEASE_WAIT_S = 5.0
LEASE_FIRST_PAUSE_S = 0.05
LEASE_MAX_PAUSE_S = 0.5


@contextmanager
def facts_held(
    store: MemoryStore, tenant_id: str, user_id: str, sleep: Callable[[float], None]
) -> Iterator[str]:
    """The user's facts held for the enclosed work; yields the lease. 409 after LEASE_WAIT_S."""
    lease = uuid.uuid4().hex
    pause, waited = LEASE_FIRST_PAUSE_S, 0.0
    while not store.hold_facts(tenant_id, user_id, lease, FACT_WRITE_LEASE_S):
        if waited >= LEASE_WAIT_S:
            record_metric(MetricName.FACT_WRITE_CONFLICTS)
            raise WriteConflict("another request is writing this user's facts; send the request again")
        sleep(pause)
        waited += pause
        pause = min(pause * 2, LEASE_MAX_PAUSE_S)
    try:
        yield lease
    finally:
        store.release_facts(tenant_id, user_id, lease)
