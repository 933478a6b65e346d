"""Redrive: the condenser's dead letters back to its ingest queue, and their jobs queued again
(docs/operations.md "The dead-letter queue").

The queue adapter keeps each message group's order (a user's turns); this service moves batch
after batch, then turns the `failed` job of each moved message back to `queued`. The job keeps its
error: a queued job with an error is one retried after a failure (docs/api.md "Jobs"), and should
the message dead-letter again, the scheduled pass closes the job with that error. Completed and
skipped jobs are final and stay as they are; queued and processing ones are already open.

The jobs are queued again after their messages moved, never before: a job is never `queued`
while its message still sits in the DLQ. Should the job update fail, the message is moved
anyway, and the condenser condenses a `failed` job's message all the same.
"""

from collections import defaultdict
from collections.abc import Callable, Sequence

from hippocampus.contracts.errors import DependencyUnavailable
from hippocampus.contracts.models import CondenseMessage
from hippocampus.contracts.ports import DeadLetterMover, JobStore
from hippocampus.contracts.redrive import RedriveResult
from hippocampus.observability import MetricName, logger, record_metric

# No batch is started with less of the invocation left: its move, its job updates and the answer fit.
STOP_WITH_MS_LEFT = 10_000


class DeadLetterRedrive:
    def __init__(self, jobs: JobStore, mover: DeadLetterMover) -> None:
        self._jobs = jobs
        self._mover = mover

    def redrive(self, limit: int, remaining_ms: Callable[[], int] | None = None) -> RedriveResult:
        """Move up to `limit` dead letters back, batch after batch, until the DLQ has none receivable."""
        moved = requeued = 0
        try:
            while moved < limit and not _out_of_time(remaining_ms):
                batch = self._mover.move_to_queue(limit - moved)
                moved += batch.moved
                requeued += self._requeue(batch.condensations)
                if batch.refused:
                    raise DependencyUnavailable(
                        f"the ingest queue refused {batch.refused} message(s) after {moved} moved; "
                        "they stay in the dead-letter queue: redrive again"
                    )
                if not batch.moved:
                    break
        finally:
            _report(moved, requeued)
        return RedriveResult(moved=moved, jobs_requeued=requeued, remaining=self._mover.depth())

    def _requeue(self, messages: Sequence[CondenseMessage]) -> int:
        """Turn `queued` the failed jobs of `messages`, their error kept; return how many."""
        by_tenant: dict[str, list[str]] = defaultdict(list)
        for message in messages:
            by_tenant[message.tenant_id].append(message.job_id)
        requeued = 0
        for tenant_id, job_ids in by_tenant.items():
            for job in self._jobs.get_jobs(tenant_id, job_ids).values():
                if job.status == "failed":
                    self._jobs.set_job_status(tenant_id, [job.job_id], "queued", job.error)
                    requeued += 1
        return requeued


def _out_of_time(remaining_ms: Callable[[], int] | None) -> bool:
    return remaining_ms is not None and remaining_ms() < STOP_WITH_MS_LEFT


def _report(moved: int, requeued: int) -> None:
    """Counts only: a dead letter's body is never logged."""
    record_metric(MetricName.DEAD_LETTERS_REDRIVEN, moved)
    record_metric(MetricName.REDRIVEN_JOBS_REQUEUED, requeued)
    logger.info("dead letters redriven", extra={"moved": moved, "jobs_requeued": requeued})
