"""Jobs whose message reached the dead-letter queue never stay open (docs/architecture.md "The condenser").

The condenser marks the jobs of a last delivery `failed` itself; a condenser that crashed on that
delivery, or could not reach DynamoDB then, leaves them `queued` or `processing` while SQS moves
the message to the DLQ. A scheduled pass reads the DLQ without consuming it (the messages stay
there for a redrive) and closes those jobs.
"""

from collections import defaultdict

from hippocampus.contracts.models import JobError
from hippocampus.contracts.ports import DeadLetters, JobStore
from hippocampus.observability import MetricName, logger, record_metric

DEAD_LETTERED = JobError(
    code="dead_lettered",
    message="the item's last condensation attempt did not finish; its message is in the DLQ",
)
# One pass reads at most this many messages; the next pass reads on.
MAX_MESSAGES_PER_PASS = 1000


class DeadLetterReconciler:
    def __init__(self, jobs: JobStore, dead_letters: DeadLetters) -> None:
        self._jobs = jobs
        self._dead_letters = dead_letters

    def reconcile(self) -> int:
        """Turn `failed` every open job of a dead-lettered message; return how many."""
        by_tenant: dict[str, list[str]] = defaultdict(list)
        for message in self._dead_letters.peek(MAX_MESSAGES_PER_PASS):
            by_tenant[message.tenant_id].append(message.job_id)
        closed = 0
        for tenant_id, job_ids in by_tenant.items():
            for job in self._jobs.get_jobs(tenant_id, job_ids).values():
                if job.status not in ("queued", "processing"):
                    continue  # final, or failed with its own reason already
                # A job queued again after a failed attempt keeps that attempt's error.
                error = job.error or DEAD_LETTERED
                self._jobs.set_job_status(tenant_id, [job.job_id], "failed", error)
                closed += 1
        if closed:
            record_metric(MetricName.DEAD_LETTERED_JOBS_CLOSED, closed)
            logger.warning("jobs of dead-lettered messages closed", extra={"jobs": closed})
        return closed
