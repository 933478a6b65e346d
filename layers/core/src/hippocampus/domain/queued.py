"""What the condenser works on: queue messages, and the user's turns queued behind them."""

from collections.abc import Sequence
from dataclasses import dataclass

from hippocampus.contracts.models import CondenseMessage
from hippocampus.contracts.ports import JobStore
from hippocampus.observability import MetricName, record_metric

# At most this many of a user's other queued turns join a condensation (the prompt stays bounded).
MAX_QUEUED_BEHIND = 20


@dataclass(frozen=True)
class QueuedItem:
    """One queue message, as the condenser needs it (built from an SQS record by the API layer)."""

    message_id: str
    message: CondenseMessage
    receive_count: int
    trace_header: str | None = None


def queued_behind(jobs: JobStore, pending: Sequence[QueuedItem]) -> list[QueuedItem]:
    """The user's other queued turns, accepted after `pending`: applied in the same LLM call and the
    same write, so their own messages, arriving later, find them applied and cost nothing (one LLM
    call per user per burst, docs/architecture.md "The condenser"). A receive count of 0 keeps
    them out of the last-receive rules: their own messages still carry those."""
    if not pending:
        return []
    first = pending[0].message
    taken = {item.message.job_id for item in pending}
    behind = [
        QueuedItem(f"job:{message.job_id}", message, receive_count=0)
        for message in jobs.open_jobs(first.tenant_id, first.user_id, MAX_QUEUED_BEHIND)
        if message.job_id not in taken and message.generation == first.generation
    ]
    if behind:
        record_metric(MetricName.ITEMS_TAKEN_AHEAD, len(behind))
    return behind
