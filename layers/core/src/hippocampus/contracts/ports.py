"""Small interfaces between the domain and the outside world (storage, queue, LLM, tracing).

Adapters implement them; the composition root hands them to the domain services, and tests
hand in the in-memory fakes of tests/support/fakes.py.
"""

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from hippocampus.contracts.fact_ports import FactCommit, FactLedger, FactRemoval
from hippocampus.contracts.memory_state import MemoryState
from hippocampus.contracts.models import (
    CondenseMessage,
    EpisodePlace,
    Fact,
    HistoryVersion,
    Job,
    JobError,
    JobStatus,
)
from hippocampus.contracts.recall import Episode
from hippocampus.contracts.receipts import ArchiveErasure, EpisodeErasure, JobErasure, MemoryErasure
from hippocampus.contracts.records import EpisodeForget, RecordWrite


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

    def raw_source(self, tenant_id: str, job_id: str) -> RawSource | None:
        """Where the job's turn was archived (None: a fact's job, or a job created without it)."""
        ...

    def get_jobs(self, tenant_id: str, job_ids: Sequence[str]) -> dict[str, Job]:
        """The jobs that exist among `job_ids`, by id, in one batch read."""
        ...

    def open_jobs(self, tenant_id: str, user_id: str, limit: int) -> list[CondenseMessage]:
        """Among the user's `limit` newest jobs, the queued turns, oldest first, as queue messages."""
        ...

    def list_user_jobs(self, tenant_id: str, user_id: str) -> list[Job]:
        """Every job record kept of the user, newest first."""
        ...

    def list_jobs(
        self, tenant_id: str, user_id: str, limit: int, before: str | None
    ) -> tuple[list[Job], str | None]:
        """Up to `limit` of the user's jobs of its current life, newest first, after the position
        `before` (what the page before returned); and the position to go on from, None if no older
        job remains. A position is the store's own, opaque to the caller."""
        ...

    def erase_user(self, tenant_id: str, user_id: str, generation: int) -> JobErasure:
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


@dataclass(frozen=True)
class MemoryWrite:
    """A new summary version, `expected_version + 1`, written only if the item still has
    `expected_version` (the `MemoryState.last_version` read) and `generation`."""

    tenant_id: str
    user_id: str
    expected_version: int
    generation: int
    memory: str | None  # None: the summary is removed (rebuilt from no records at all)
    word_count: int
    updated_at: datetime
    completed_job_ids: Sequence[str] = field(default_factory=tuple)
    # The condensed turns of this version, kept for recall: written in the same transaction.
    episodes: Sequence[Episode] = field(default_factory=tuple)
    # The records this version adds or invalidates: in the same transaction too.
    records: Sequence[RecordWrite] = field(default_factory=tuple)


@dataclass(frozen=True)
class LlmResult:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class LanguageModel(Protocol):
    """One chat model behind an LLM provider (OpenAI-compatible, Bedrock, offline)."""

    name: str

    def complete(
        self,
        system: str,
        prompt: str,
        timeout_s: float | None = None,
        schema: Mapping[str, Any] | None = None,
    ) -> LlmResult:
        """One chat completion, its retry included; raises on failure or timeout.

        With `timeout_s`, the whole call returns or raises within it: no attempt is started that
        could not end in time (None: the provider's own timeout for each attempt). With `schema` (a
        JSON schema), the answer's text is a JSON object following it, as far as the provider can
        hold the model to one (OpenAI structured outputs, Bedrock tool use).
        """
        ...


class Embedder(Protocol):
    """One embedding model behind an embedding provider (OpenAI-compatible, Bedrock, offline)."""

    provider: str
    model: str  # recorded with every stored vector: vectors of another model are not compared
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector of `dimensions` floats per text, in order; raises on failure."""
        ...


class MemoryStore(Protocol):
    """A user's summary, facts and tombstone."""

    def read_memory(
        self, tenant_id: str, user_id: str, with_facts: bool
    ) -> tuple[MemoryState, list[Fact]]: ...

    def read_generation(self, tenant_id: str, user_id: str) -> int:
        """The user's current generation only (bumped by every delete)."""
        ...

    def list_users(self, tenant_id: str, limit: int, after: str | None) -> tuple[list[str], bool]:
        """Up to `limit` ids of the tenant's users with a summary or facts stored, in id order,
        after the id `after`; and whether more remain. Eventually consistent: a user written or
        forgotten a moment ago may not show yet."""
        ...

    def write_memory(self, write: MemoryWrite) -> None:
        """Conditional on version and generation, and marks `completed_job_ids` completed in the same
        transaction (the applied-job ledger); raises ConditionFailed when another writer won."""
        ...

    def read_facts(self, tenant_id: str, user_id: str, fact_ids: Collection[str] | None = None) -> FactLedger:
        """The user's fact counts and the live facts among `fact_ids` (one batch read, whatever
        the user holds), as a fact write decides on them. With `fact_ids` None, every live fact,
        and the memory item read before them, so that every fact counted at the revision read is
        among them: what a rebase of the counts is decided on."""
        ...

    def commit_facts(self, commit: FactCommit) -> None:
        """One atomic write of every entry (its job, and its fact when it has one) and of the change
        of the counts, if the user is still at `commit.generation` (else UserDeleted, nothing
        written), every entry's `expect` holds and the counts stay within `limits` (else
        ConditionFailed, nothing written, whose `failed` holds the entries whose `expect` failed:
        empty when it was the counts, or a concurrent transaction). At most MAX_FACT_ENTRIES."""
        ...

    def remove_fact(self, removal: FactRemoval) -> None:
        """Delete the fact and take it off the counts in one transaction, if the user is still at
        the generation and the fact as expected (else ConditionFailed, nothing changed)."""
        ...

    def erase_user(self, tenant_id: str, user_id: str) -> MemoryErasure:
        """Tombstone the user (new generation), remove its older facts, episodes and records; return
        the new generation and what was removed."""
        ...

    def forget_episode(self, forget: EpisodeForget) -> EpisodeErasure:
        """All of it in one transaction (docs/api.md "Forget one episode"); ConditionFailed when the
        memory changed since it was read (a condensation, a delete), or a record did. Returns the
        records deleted and the vectors erased with them and the episodes."""
        ...


class EpisodeStore(Protocol):
    """The condensed turns of each user, kept for recall (docs/api.md "Episodes")."""

    def put_episodes(
        self, tenant_id: str, user_id: str, generation: int, episodes: list[Episode], memory_version: int
    ) -> None:
        """Store them, and mark their jobs `completed` at `memory_version`, in one transaction, while
        the user is at `generation`; raises ConditionFailed after a delete or if a job was settled."""
        ...

    def episodes(self, tenant_id: str, user_id: str, generation: int) -> list[Episode]:
        """Every episode of the user's current life, oldest first."""
        ...

    def list_episodes(
        self, tenant_id: str, user_id: str, generation: int, limit: int, after: EpisodePlace | None
    ) -> tuple[list[Episode], bool]:
        """A page, newest first, of those before the place `after`; and whether more may follow."""
        ...

    def trim_episodes(self, tenant_id: str, user_id: str, keep: int) -> int:
        """Remove all but the newest `keep`, and set the memory's `episode_count` to what is left;
        return how many were removed."""
        ...


RawForgotten = Literal["blanked", "deleted", "absent"]


class ArchiveStore(Protocol):
    """Raw payloads of accepted items and past versions of the summary."""

    def put_raw(
        self, tenant_id: str, user_id: str, generation: int, request_id: str, payload: Mapping[str, Any]
    ) -> str:
        """Store a payload of the user's `generation`; return its key (carried by the queue messages).
        Keys sort in the order the payloads were stored."""
        ...

    def get_raw(self, key: str) -> dict[str, Any] | None:
        """The payload, or None when it was erased."""
        ...

    def delete_raw(self, key: str) -> None: ...

    def forget_raw_item(self, key: str, index: int) -> RawForgotten:
        """Blank the item at `index` of the payload (the others keep their places); the payload
        goes when nothing is left in it. Says which of the two it did (or neither: no such item)."""
        ...

    def replace_raw_items(self, key: str, places: Mapping[int, Mapping[str, Any] | None]) -> None:
        """Put each item of `places` at its index of the payload (None blanks it); the payload goes
        when nothing is left in it. A payload erased already stays erased."""
        ...

    def put_history(self, tenant_id: str, user_id: str, generation: int, entry: HistoryVersion) -> None: ...

    def list_history(
        self, tenant_id: str, user_id: str, generation: int, limit: int | None
    ) -> list[HistoryVersion]:
        """Newest first; every version when `limit` is None."""
        ...

    def list_raw(self, tenant_id: str, user_id: str, generation: int) -> dict[str, dict[str, Any]]:
        """The payloads of the user's `generation` still stored, by key."""
        ...

    def delete_history(self, tenant_id: str, user_id: str, generation: int, version: int) -> None: ...

    def delete_history_from(self, tenant_id: str, user_id: str, generation: int, version: int) -> int:
        """Delete every version from `version` on (reading none of them); return how many."""
        ...

    def erase_user(self, tenant_id: str, user_id: str, generation: int) -> ArchiveErasure:
        """Erase the user's payloads and history of every generation before `generation`, and the
        stored copy of their episodes."""
        ...

    def drop_episode_copy(self, tenant_id: str, user_id: str) -> int:
        """Erase the stored copy of the user's episodes (an episode was forgotten); how many objects."""
        ...


class JobQueue(Protocol):
    def send(
        self, messages: Sequence[CondenseMessage], trace_header: str | None, index_for: str | None = None
    ) -> None:
        """Queue `messages`; `index_for`: the id of a request whose index request (as
        `request_index`) rides in the same call, and whose failure alone is only logged."""
        ...

    def request_index(self, tenant_id: str, user_id: str, request_id: str, everything: bool = False) -> None:
        """Ask the condenser to embed the user's documents without a vector (once per request;
        `everything`: every episode too, not only the newest); raises DependencyUnavailable when
        the queue is."""
        ...


class DeadLetters(Protocol):
    """The dead-letter queue of the condenser, read without consuming it."""

    def peek(self, limit: int) -> list[CondenseMessage]:
        """Up to `limit` messages, left in the queue for a redrive (hidden a while from other readers)."""
        ...


@dataclass(frozen=True)
class MovedLetters:
    """One move of dead letters back to the ingest queue: how many are there now, the condensations
    among them (an index request, or a body of no known kind, is moved without a job), and how many
    the ingest queue refused (they stay in the DLQ, visible again)."""

    moved: int = 0
    condensations: Sequence[CondenseMessage] = ()
    refused: int = 0


class DeadLetterMover(Protocol):
    """Moves the condenser's dead letters back to its ingest queue (docs/operations.md "The dead-letter queue")."""

    def move_to_queue(self, limit: int) -> MovedLetters:
        """Move up to `limit` messages (one receive: at most 10), each message group's in order;
        `moved` 0 when none is receivable now."""
        ...

    def depth(self) -> int:
        """About how many messages the DLQ holds, visible or in flight (SQS's approximate counts)."""
        ...


class Tracing(Protocol):
    def span(self, name: str, **annotations: str | int) -> AbstractContextManager[None]: ...

    def current_trace_header(self) -> str | None:
        """The X-Ray trace header to propagate through SQS (`AWSTraceHeader`)."""
        ...

    def continue_from(self, trace_header: str | None) -> AbstractContextManager[None]:
        """Run the enclosed work as part of the trace carried by an SQS message."""
        ...
