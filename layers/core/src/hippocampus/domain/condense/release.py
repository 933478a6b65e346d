"""Parked turns sent back to the queue by the condenser's scheduled pass (docs/architecture.md
"Token budgets").

Every few minutes, for each tenant that parked turns and whose budget of the day is not spent:
entries of jobs already done are removed, and the oldest RELEASED_PER_PASS entries not yet sent
back are marked sent, their jobs `queued` again, then sent to the queue in the order they were
accepted (each in its user's message group). An entry marked whose message never reached the queue
(a pass that died in between) is sent again RESEND_AFTER_S later; a message that arrives twice is
applied once: the condenser's job ledger drops the second.
"""

from collections.abc import Callable
from datetime import datetime, timedelta

from hippocampus.contracts.budgets import (
    RELEASED_PER_PASS,
    RESEND_AFTER_S,
    DeferralStore,
    DeferredEntry,
    accepted_order,
)
from hippocampus.contracts.models import Job
from hippocampus.contracts.ports import JobQueue, JobStore
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.condense.budget_gate import BudgetGate
from hippocampus.observability import MetricName, logger, record_metric

_DONE = frozenset({"completed", "skipped", "failed"})  # failed: its message is in the DLQ, for a redrive


class DeferredRelease:
    def __init__(
        self,
        gate: BudgetGate,
        deferrals: DeferralStore,
        jobs: JobStore,
        queue: Callable[[], JobQueue],
        clock: Clock = utc_now,
    ) -> None:
        self._gate = gate
        self._deferrals = deferrals
        self._jobs = jobs
        self._queue = queue
        self._clock = clock

    def release(self) -> int:
        """Send back what the tenants' budgets allow; how many turns were sent."""
        released = 0
        for tenant_id in self._deferrals.tenants():
            try:
                released += self._release(tenant_id)
            except Exception:  # one tenant's failure never holds the others: the next pass retries
                logger.exception("could not release a tenant's parked turns", extra={"tenant_id": tenant_id})
        return released

    def _release(self, tenant_id: str) -> int:
        entries = self._deferrals.entries(tenant_id)
        sent = [entry for entry in entries if entry.released]
        waiting = [entry for entry in entries if not entry.released][:RELEASED_PER_PASS]
        # Only the jobs of what this pass may act on are read: a large backlog costs its ledger's read.
        jobs = self._jobs.get_jobs(tenant_id, [entry.message.job_id for entry in (*sent, *waiting)])
        done = {e.message.job_id for e in (*sent, *waiting) if _done(jobs.get(e.message.job_id))}
        for entry in (*sent, *waiting):
            if entry.message.job_id in done:
                self._deferrals.retire(entry.message)
        if self._gate.spent(tenant_id):
            return 0
        now = self._clock()
        lost = [entry for entry in sent if entry.message.job_id not in done and _lost(entry, now)]
        fresh = [entry for entry in waiting if entry.message.job_id not in done]
        due = sorted([*lost, *fresh], key=lambda entry: accepted_order(entry.message))
        # Marked first, then sent: a turn parked again meanwhile is not marked, so not sent; a mark
        # whose send was lost is sent again RESEND_AFTER_S later.
        messages = self._deferrals.mark_released(tenant_id, due, now) if due else []
        if not messages:
            return 0
        self._queue().send(messages, None)
        record_metric(MetricName.DEFERRED_JOBS_RELEASED, len(messages))
        logger.info("parked turns released", extra={"tenant_id": tenant_id, "jobs": len(messages)})
        return len(messages)


def _lost(entry: DeferredEntry, now: datetime) -> bool:
    """Sent back long ago and still not condensed: its message may never have reached the queue."""
    released_at = entry.message.released_at
    return released_at is not None and now - released_at > timedelta(seconds=RESEND_AFTER_S)


def _done(job: Job | None) -> bool:
    """Nothing left to send: the job is done, or gone (expired, or its user forgotten)."""
    return job is None or job.status in _DONE
