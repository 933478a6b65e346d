"""What the condenser works on: queue messages, and the user's turns queued behind them."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hippocampus.contracts.models import CondenseMessage
from hippocampus.contracts.ports import JobStore
from hippocampus.domain.clock import Clock
from hippocampus.observability import MetricName, record_metric

# At most this many of a user's other queued turns join a condensation (the prompt stays bounded).
MAX_QUEUED_BEHIND = 20
# The longest a condensation waits for a user's burst to end, in all.
BURST_MAX_WAIT_S = 2.0


@dataclass(frozen=True)
class QueuedItem:
    """One queue message, as the condenser needs it (built from an SQS record by the API layer)."""

    message_id: str
    message: CondenseMessage
    receive_count: int
    trace_header: str | None = None


def by_user(items: Sequence[QueuedItem]) -> list[list[QueuedItem]]:
    """Group records per user, keeping arrival order inside each group."""
    groups: dict[tuple[str, str], list[QueuedItem]] = {}
    for item in items:
        groups.setdefault((item.message.tenant_id, item.message.user_id), []).append(item)
    return list(groups.values())


@dataclass(frozen=True)
class BurstWait:
    """How a condensation waits for a burst still arriving: until no turn of the user has been
    accepted for `window_s` (MEMORY_BURST_WINDOW_MS, docs/configuration.md)."""

    window_s: float
    clock: Clock
    sleep: Callable[[float], None]

    def quiet_in_s(self, turns: Sequence[QueuedItem]) -> float:
        """How long until the newest of `turns` is `window_s` old (<= 0: the burst has ended)."""
        newest = max(item.message.queued_at for item in turns)
        return self.window_s - (self.clock() - newest).total_seconds()


def gathered(
    jobs: JobStore, pending: Sequence[QueuedItem], wait: BurstWait | None, may_wait_s: float
) -> list[QueuedItem]:
    """The user's other queued turns, accepted after `pending`: applied in the same LLM call and the
    same write, so their own messages, arriving later, find them applied and cost nothing (one LLM
    call per user per burst, docs/architecture.md "The condenser").

    While a burst is arriving (two turns or more open, the newest younger than the window), wait for
    it to end first, up to `may_wait_s` (what the user's time budget spares) and BURST_MAX_WAIT_S.
    A single turn is never held back: its freshness is what a conversation sees.
    """
    behind = _queued_behind(jobs, pending)
    waited_s, limit_s = 0.0, min(may_wait_s, BURST_MAX_WAIT_S)
    while wait is not None and len(pending) + len(behind) > 1:
        quiet_in_s = wait.quiet_in_s([*pending, *behind])
        if quiet_in_s <= 0 or waited_s + quiet_in_s > limit_s:
            break
        wait.sleep(quiet_in_s)
        waited_s += quiet_in_s
        behind = _queued_behind(jobs, pending)
    if behind:
        record_metric(MetricName.ITEMS_TAKEN_AHEAD, len(behind))
    return behind


def _queued_behind(jobs: JobStore, pending: Sequence[QueuedItem]) -> list[QueuedItem]:
    # A receive count of 0 keeps them out of the last-receive rules: their own messages carry those.
    if not pending:
        return []
    first = pending[0].message
    taken = {item.message.job_id for item in pending}
    return [
        QueuedItem(f"job:{message.job_id}", message, receive_count=0)
        for message in jobs.open_jobs(first.tenant_id, first.user_id, MAX_QUEUED_BEHIND)
        if message.job_id not in taken and message.generation == first.generation
    ]
