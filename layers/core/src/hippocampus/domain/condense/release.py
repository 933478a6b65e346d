"""Parked turns sent back to the queue by the condenser's scheduled pass (docs/architecture.md
"Token budgets").

Every few minutes, for each tenant whose ledger holds entries and whose budget of the day is not
spent: entries of jobs already done are removed, and the oldest RELEASED_PER_PASS entries not yet
sent back are sent to the queue, in the order they were accepted (each in its user's message
group), their jobs `queued` again. A message sent twice (a pass that died between sending and
marking) is applied once: the condenser's job ledger drops the second.
"""

import contextlib
from collections.abc import Callable

from hippocampus.contracts.budgets import RELEASED_PER_PASS, DeferralStore
from hippocampus.contracts.errors import ConditionFailed
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
        jobs = self._jobs.get_jobs(tenant_id, [entry.message.job_id for entry in entries])
        done = [entry for entry in entries if _done(jobs.get(entry.message.job_id))]
        for entry in done:
            with contextlib.suppress(ConditionFailed):  # removed meanwhile by its condensation
                self._deferrals.retire(entry.message)
        if self._gate.spent(tenant_id):
            return 0
        waiting = [entry for entry in entries if not entry.released and entry not in done]
        if not waiting:
            return 0
        now = self._clock()
        messages = [
            entry.message.model_copy(update={"released_at": now}) for entry in waiting[:RELEASED_PER_PASS]
        ]
        self._queue().send(messages, None)
        self._deferrals.mark_released(tenant_id, messages)
        record_metric(MetricName.DEFERRED_JOBS_RELEASED, len(messages))
        logger.info("parked turns released", extra={"tenant_id": tenant_id, "jobs": len(messages)})
        return len(messages)


def _done(job: Job | None) -> bool:
    """Nothing left to send: the job is done, or gone (expired, or its user forgotten)."""
    return job is None or job.status in _DONE
