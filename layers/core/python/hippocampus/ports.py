"""Small interfaces between the domain logic and the outside world (AWS, the LLM, tracing).

Adapters implement them; services receive them, so tests pass moto-backed or fake ones.
"""

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from hippocampus.models import CondenseMessage, Fact, HistoryVersion, Job, JobError, JobStatus


@dataclass(frozen=True)
class MemoryState:
    """The summary item of one user, as read (version 0 = nothing stored yet)."""

    memory: str | None = None
    version: int = 0
    word_count: int = 0
    updated_at: datetime | None = None
    generation: int = 0


@dataclass(frozen=True)
class MemoryWrite:
    """A new summary version, written only if the item still has `expected_version` and `generation`."""

    tenant_id: str
    user_id: str
    expected_version: int
    generation: int
    memory: str
    word_count: int
    updated_at: datetime
    completed_job_ids: Sequence[str] = field(default_factory=tuple)


@dataclass(frozen=True)
class LlmResult:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class LlmProvider(Protocol):
    name: str

    def complete(self, system: str, prompt: str) -> LlmResult:
        """One chat completion; raises on failure or timeout."""
        ...


class MemoryStore(Protocol):
    def read_memory(
        self, tenant_id: str, user_id: str, with_facts: bool
    ) -> tuple[MemoryState, list[Fact]]: ...

    def write_memory(self, write: MemoryWrite) -> None:
        """Conditional on version and generation; raises ConditionFailed when another writer won."""
        ...

    def put_fact(self, tenant_id: str, user_id: str, fact: Fact, generation: int) -> None:
        """Insert or replace; raises ConditionFailed when the user was deleted since `generation` was read."""
        ...

    def delete_fact(self, tenant_id: str, user_id: str, fact_id: str) -> bool: ...

    def erase_user(self, tenant_id: str, user_id: str) -> int:
        """Tombstone the user (new generation), remove its older facts; return the new generation."""
        ...

    def create_job(self, job: Job, generation: int) -> tuple[Job, bool]:
        """Store a new job and return (job, True); a failed job with the same id is queued again.

        If a live job with the same id exists, return (that job, False) untouched: a duplicate.
        """
        ...

    def get_job(self, tenant_id: str, job_id: str) -> Job | None: ...

    def set_job_status(
        self,
        tenant_id: str,
        job_ids: Sequence[str],
        status: JobStatus,
        error: JobError | None = None,
        memory_version: int | None = None,
    ) -> None: ...


class ArchiveStore(Protocol):
    def put_raw(self, key: str, payload: Mapping[str, Any]) -> None: ...

    def get_raw(self, key: str) -> dict[str, Any] | None:
        """The payload, or None when it was erased."""
        ...

    def put_history(self, tenant_id: str, user_id: str, generation: int, entry: HistoryVersion) -> None: ...

    def list_history(self, tenant_id: str, user_id: str, generation: int, limit: int) -> list[HistoryVersion]:
        """Newest first."""
        ...

    def delete_raw(self, key: str) -> None: ...

    def delete_history(self, tenant_id: str, user_id: str, generation: int, version: int) -> None: ...

    def erase_user(self, tenant_id: str, user_id: str) -> None: ...


class JobQueue(Protocol):
    def send(self, messages: Sequence[CondenseMessage], trace_header: str | None) -> None: ...


class Tracing(Protocol):
    def span(self, name: str, **annotations: str | int) -> AbstractContextManager[None]: ...

    def current_trace_header(self) -> str | None:
        """The X-Ray trace header to propagate through SQS (`AWSTraceHeader`)."""
        ...

    def continue_from(self, trace_header: str | None) -> AbstractContextManager[None]:
        """Run the enclosed work as part of the trace carried by an SQS message."""
        ...


def iter_chunks[T](items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
