"""The ingestion jobs' port (contracts/ports.py re-exports it with the other ports)."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from hippocampus.contracts.models import CondenseMessage, Job, JobError, JobStatus


@dataclass(frozen=True)
class RawSource:
    """Where an accepted turn's content is: its request's raw payload and its place in it."""

    raw_key: str
    raw_index: int


@dataclass(frozen=True)
class NewJob:
    """A job to create, and where its turn's content is (None for a fact's job)."""

    job: Job
    source: RawSource | None = None


class JobStore(Protocol):
    """Ingestion jobs; `completed` doubles as the applied-job ledger."""

    def create_job(self, job: Job, generation: int, source: RawSource | None = None) -> tuple[Job, bool]:
        """Store a new job and return (job, True); a failed job with the same id is queued again.
        `source`: where a turn's content is (the condenser may then apply it before its message).

        If a live job with the same id exists, return (that job, False) untouched: a duplicate.
        """
        ...

    def create_jobs(
        self, new_jobs: Sequence[NewJob], generation: int, created: list[Job]
    ) -> list[tuple[Job, bool]]:
        """`create_job` for each of `new_jobs`, in as few writes as the store allows: each one's
        (job, created) in their order. A job id that comes again answers (the first's job, False).

        Every job stored or requeued is appended to `created` as soon as it is, so that a caller
        who gets an exception (`UserDeleted` among them) knows which ones it wrote.
        """
        ...

    def get_job(self, tenant_id: str, job_id: str) -> Job | None: ...

    def get_jobs(self, tenant_id: str, job_ids: Sequence[str]) -> dict[str, Job]:
        """The jobs that exist among `job_ids`, by id, in one batch read."""
        ...

    def open_jobs(self, tenant_id: str, user_id: str, limit: int) -> list[CondenseMessage]:
        """Among the user's `limit` newest jobs, the queued turns, oldest first, as queue messages."""
        ...

    def list_user_jobs(self, tenant_id: str, user_id: str) -> list[Job]:
        """Every job record kept of the user, newest first."""
        ...

    def erase_user(self, tenant_id: str, user_id: str, generation: int) -> None:
        """Erase the user's jobs of the generations before `generation` (a job still queued or
        processing is kept as `skipped`, its item id removed) and its Idempotency-Key records."""
        ...

    def set_job_status(
        self,
        tenant_id: str,
        job_ids: Sequence[str],
        status: JobStatus,
        error: JobError | None = None,
        memory_version: int | None = None,
    ) -> None: ...
