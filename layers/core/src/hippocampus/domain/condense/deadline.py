"""The condenser's time: a deadline for its LLM calls, and a guard for the jobs of last receives.

Every LLM call ends before the invocation's deadline, less the I/O margin kept for the write and
the job updates. Should the invocation time out anyway (storage hanging), the guard fails the jobs
whose messages would move to the DLQ, so none is left `queued` or `processing`
(docs/architecture.md "The condenser").
"""

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from hippocampus.contracts.errors import ServiceError
from hippocampus.contracts.models import JobError
from hippocampus.contracts.ports import JobStore
from hippocampus.observability import logger

# How long before the deadline the guard fails the open jobs (a few job updates).
GUARD_LEAD_S = 2.0


class OutOfTime(ServiceError):
    code = "condensation_timeout"


# What a job says when its last attempt ran out of time (deferred, or caught by the guard).
OUT_OF_TIME = JobError(
    code=OutOfTime.code,
    message="the condenser ran out of time on the item's last attempt; send the item again",
)


@dataclass(frozen=True)
class Deadline:
    """The time the LLM calls of one condensation may take: `seconds_left()` (the invocation's time
    left, less the I/O margin), and the least a call needs to be started (one LLM timeout)."""

    seconds_left: Callable[[], float]
    min_call_s: float = 0.0

    def allows_call(self) -> bool:
        left = self.seconds_left()
        return left > 0 and left >= self.min_call_s


def require_time_for_a_call(deadline: Deadline | None) -> None:
    if deadline is not None and not deadline.allows_call():
        raise OutOfTime("no time was left in the invocation for the LLM call")


class LastReceiveGuard:
    """Fails the jobs of last-receive records still open just before the invocation's deadline.

    A timed-out invocation reports nothing, so its records come back, except those on their last
    receive: their messages move to the DLQ. The job store keeps `completed` and `skipped` final,
    so a condensation that finishes after the guard fired still wins.
    """

    def __init__(
        self,
        jobs: JobStore,
        open_jobs: Mapping[str, tuple[str, str]],
        remaining_ms: Callable[[], int] | None,
    ) -> None:
        """`open_jobs`: (tenant id, job id) by message id."""
        self._jobs = jobs
        self._open = dict(open_jobs)
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        if self._open and remaining_ms is not None:
            self._timer = threading.Timer(max(0.0, remaining_ms() / 1000 - GUARD_LEAD_S), self._fail_open)
            self._timer.daemon = True
            self._timer.start()

    def settled(self, message_ids: Iterable[str]) -> None:
        """This invocation gave these records their status (or reports them for redelivery)."""
        with self._lock:
            for message_id in message_ids:
                self._open.pop(message_id, None)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _fail_open(self) -> None:
        with self._lock:
            open_jobs, self._open = list(self._open.values()), {}
        logger.warning("condenser about to time out: failing open jobs", extra={"jobs": len(open_jobs)})
        for tenant_id, job_id in open_jobs:
            try:
                self._jobs.set_job_status(tenant_id, [job_id], "failed", OUT_OF_TIME)
            except Exception:
                logger.exception("could not fail a job before the timeout", extra={"job_id": job_id})
