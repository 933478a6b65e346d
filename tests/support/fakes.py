"""In-memory fakes of every port, with the semantics the adapters guarantee.

- `FakeMemoryStore`: writes conditional on version and generation; the applied-job ledger in the
  same "transaction" as the memory write; a fact commit all or nothing, on the conditions of its
  DynamoDB transaction (each fact as expected, the generation, the counts within the limits, the
  revision and no request settling for a rebase), with the counts and the revision it bumps.
- `FakeJobStore`: completed and skipped are final; a failed job sent again is queued again.
- `FakeArchive`, `FakeQueue`, `ScriptedModel`, `RecordingTracing`, `FakeIdempotencyStore`: raw
  payloads and history, sent messages, an LLM that answers from a script (or a function of the
  prompt), the spans opened, Powertools' idempotency records.
- `FakeDeadLetters`: the DLQ, read by the scheduled pass and moved by a redrive, receive by
  receive as SQS FIFO serves it (each message group in order).

Each fake takes hooks (`before_write`, `fail_next`, ...) so tests stage races and outages
without patching anything.
"""

import itertools
import json
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from copy import deepcopy
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from functools import cached_property
from typing import Any

from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer, DataRecord

from hippocampus.adapters.dynamodb_episodes import episode_sk
from hippocampus.adapters.dynamodb_records import trim_order
from hippocampus.adapters.embeddings.offline import OfflineEmbedder
from hippocampus.adapters.pii.patterns import PatternDetector
from hippocampus.api import (
    openapi,
    read_routes,
    recall_routes,
    write_routes,
)
from hippocampus.api.entry import LambdaHandler, api_function
from hippocampus.api.idempotency import IdempotentIngest
from hippocampus.contracts import routes
from hippocampus.contracts.budgets import (
    DailyUsage,
    Deferral,
    DeferredEntry,
    TokenBudgets,
    accepted_order,
    budget_exhausted,
)
from hippocampus.contracts.errors import ConditionFailed, DependencyUnavailable, UserDeleted
from hippocampus.contracts.fact_ports import (
    MAX_FACT_ENTRIES,
    Absent,
    FactCommit,
    FactCounts,
    FactLedger,
    FactRemoval,
    Present,
    StoredFact,
)
from hippocampus.contracts.limits import EXPORT_PAGE_BYTES
from hippocampus.contracts.models import (
    IN_FLIGHT,
    USER_DELETED,
    CondenseMessage,
    EpisodePlace,
    Fact,
    HistoryVersion,
    Job,
    JobError,
    JobStatus,
)
from hippocampus.contracts.names import FACT_SETTLE_S
from hippocampus.contracts.pii import PiiValue
from hippocampus.contracts.ports import (
    Embedder,
    LanguageModel,
    LlmResult,
    MemoryState,
    MemoryWrite,
    MovedLetters,
    NewJob,
    RawForgotten,
    RawSource,
)
from hippocampus.contracts.recall import Episode, IndexMessage
from hippocampus.contracts.recall_ports import Corpus, Indexed, Unindexed, Vector
from hippocampus.contracts.receipts import (
    ArchiveErasure,
    DeletionReceipt,
    EpisodeErasure,
    JobErasure,
    MemoryErasure,
    VectorsErased,
)
from hippocampus.contracts.records import EpisodeForget, MemoryRecord
from hippocampus.contracts.scopes import user_of
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.condense.budget_gate import BudgetGate
from hippocampus.domain.condense.condenser import Condenser
from hippocampus.domain.condense.consolidation import ConsolidationService
from hippocampus.domain.condense.dead_letters import DeadLetterReconciler
from hippocampus.domain.condense.queued import QueuedItem
from hippocampus.domain.condense.redrive import DeadLetterRedrive
from hippocampus.domain.condense.release import DeferredRelease
from hippocampus.domain.ingest.service import IngestService
from hippocampus.domain.privacy.masking import Masker
from hippocampus.domain.reads.edits import EditService
from hippocampus.domain.reads.export import ExportService
from hippocampus.domain.reads.forget_episode import EpisodeForgetter
from hippocampus.domain.reads.lists import ListService
from hippocampus.domain.reads.receipts import ReceiptService
from hippocampus.domain.reads.records import RecordService
from hippocampus.domain.reads.service import ReadService
from hippocampus.domain.reads.usage import UsageService
from hippocampus.domain.recall.indexing import Indexer
from hippocampus.domain.recall.service import RecallService
from tests.support.lambda_harness import Context, api_event

FINAL: frozenset[str] = frozenset({"completed", "skipped"})
Hook = Callable[[], None]


class Outage(Exception):
    """What a failing fake raises: stands in for a throttled or unreachable AWS service."""


@dataclass
class _User:
    state: MemoryState = field(default_factory=MemoryState)
    facts: dict[str, tuple[Fact, int]] = field(default_factory=dict)
    # What the memory item holds of the facts: the bytes each was counted with (None: stored before
    # facts were counted), the counts (None: not counted yet), the revision, and until when a
    # request written in several commits may still be writing.
    sizes: dict[str, int | None] = field(default_factory=dict)
    counts: FactCounts | None = None
    revision: int = 0
    settling_until: float = 0.0
    counted_reads: set[int] = field(default_factory=set)  # revisions read with every fact
    listed: bool = False  # in the tenant's users index: a summary or facts written since the last delete


# Idempotency records of every user: (tenant, user) → Powertools key → record.
IdempotencyRecords = dict[tuple[str, str], dict[str, DataRecord]]


class FakeJobStore:
    def __init__(self, idempotency: IdempotencyRecords | None = None) -> None:
        self.jobs: dict[str, Job] = {}
        self.generations: dict[str, int] = {}
        self.sources: dict[str, RawSource] = {}
        self.idempotency: IdempotencyRecords = idempotency if idempotency is not None else {}
        self.lock = threading.RLock()
        self.batch_reads = 0
        # The user's current generation (FakeMemoryStore sets it): a job is written only at it.
        self.generation_of: Callable[[str, str], int] = lambda tenant_id, user_id: 0

    def add(self, job: Job, generation: int) -> None:
        """Store a new job (the caller holds the lock), as the transaction with its reference would."""
        if self.generation_of(job.tenant_id, job.scope_key) != generation:
            raise UserDeleted("the user was deleted")
        self.jobs[job.job_id] = job
        self.generations[job.job_id] = generation

    def create_job(self, job: Job, generation: int, source: RawSource | None = None) -> tuple[Job, bool]:
        with self.lock:
            existing = self.jobs.get(job.job_id)
            if existing is None:
                self.add(job, generation)
                if source is not None:
                    self.sources[job.job_id] = source
                return job, True
            if existing.status != "failed":
                return existing, False
            requeued = existing.model_copy(update={"status": "queued", "error": None, "memory_version": None})
            self.jobs[job.job_id] = requeued
            return requeued, True

    def create_jobs(
        self, new_jobs: Sequence[NewJob], generation: int, created: list[Job]
    ) -> list[tuple[Job, bool]]:
        """One after the other, as the real store settles its refused jobs: a repeated id finds the
        first stored; a delete in between raises with the jobs written so far in `created`."""
        answers: list[tuple[Job, bool]] = []
        for new in new_jobs:
            job, was_created = self.create_job(new.job, generation, new.source)
            if was_created:
                created.append(job)
            answers.append((job, was_created))
        return answers

    def get_job(self, tenant_id: str, job_id: str) -> Job | None:
        job = self.jobs.get(job_id)
        return job if job is not None and job.tenant_id == tenant_id else None

    def raw_source(self, tenant_id: str, job_id: str) -> RawSource | None:
        return self.sources.get(job_id) if self.get_job(tenant_id, job_id) else None

    def get_jobs(self, tenant_id: str, job_ids: Sequence[str]) -> dict[str, Job]:
        self.batch_reads += 1
        return {job_id: job for job_id in job_ids if (job := self.get_job(tenant_id, job_id))}

    def set_job_status(
        self,
        tenant_id: str,
        job_ids: Sequence[str],
        status: JobStatus,
        error: JobError | None = None,
        memory_version: int | None = None,
    ) -> None:
        with self.lock:
            for job_id in job_ids:
                job = self.get_job(tenant_id, job_id)
                if job is None or job.status in FINAL:
                    continue
                update: dict[str, Any] = {"status": status, "error": error}
                if memory_version is not None:
                    update["memory_version"] = memory_version
                self.jobs[job_id] = job.model_copy(update=update)

    def open_jobs(self, tenant_id: str, user_id: str, limit: int) -> list[CondenseMessage]:
        open_turns: list[CondenseMessage] = []
        for job in self.list_user_jobs(tenant_id, user_id):  # newest first, to the newest settled turn
            source = self.sources.get(job.job_id)
            if source is None:
                continue  # a fact
            if job.status in ("completed", "skipped", "failed"):
                break
            if job.status == "queued":
                open_turns.append(
                    CondenseMessage(
                        job_id=job.job_id,
                        tenant_id=tenant_id,
                        user_id=user_id,
                        item_id=job.item_id or "",
                        generation=self.generations[job.job_id],
                        raw_key=source.raw_key,
                        raw_index=source.raw_index,
                        queued_at=job.created_at,
                    )
                )
        return sorted(open_turns, key=lambda m: (m.queued_at.isoformat(), m.raw_key, m.raw_index))[:limit]

    def list_user_jobs(self, tenant_id: str, user_id: str) -> list[Job]:
        mine = [job for job in self.jobs.values() if (job.tenant_id, job.scope_key) == (tenant_id, user_id)]
        return sorted(mine, key=lambda job: (job.created_at, job.job_id), reverse=True)

    def list_jobs(
        self, tenant_id: str, user_id: str, limit: int, before: str | None
    ) -> tuple[list[Job], str | None]:
        # A delete takes the references of every job of the life before it off the list (a job it
        # caught is still answered by id, `skipped`).
        generation = self.generation_of(tenant_id, user_id)
        jobs = [
            job
            for job in self.list_user_jobs(tenant_id, user_id)
            if self.generations[job.job_id] >= generation
        ]
        if before is not None:  # the position: the created_at and id of the last job given
            jobs = [job for job in jobs if f"{job.created_at.isoformat()} {job.job_id}" < before]
        position = (
            f"{jobs[limit - 1].created_at.isoformat()} {jobs[limit - 1].job_id}"
            if len(jobs) > limit
            else None
        )
        return jobs[:limit], position

    def erase_user(self, tenant_id: str, user_id: str, generation: int) -> JobErasure:
        with self.lock:
            deleted = skipped = 0
            for job in self.list_user_jobs(tenant_id, user_id):
                if self.generations[job.job_id] >= generation:
                    continue
                if job.status in IN_FLIGHT:
                    redacted = {
                        "status": "skipped",
                        "error": USER_DELETED,
                        "item_id": None,
                        "memory_version": None,
                    }
                    self.jobs[job.job_id] = job.model_copy(update=redacted)
                    skipped += 1
                else:
                    del self.jobs[job.job_id]
                    deleted += 1
            records = len(self.idempotency.pop((tenant_id, user_id), None) or {})
            return JobErasure(deleted, deleted + skipped, records, skipped)

    def status(self, job_id: str) -> str:
        return self.jobs[job_id].status


def _titled(document: Fact | Episode) -> str:
    """A fact's or an episode's text as the table's recall store hands it to the indexer."""
    return f"{document.title}\n{document.text}" if document.title else document.text


def _has_vector(vectors: dict[str, Vector], key: str, model: str) -> bool:
    return key in vectors and vectors[key].model == model


def _episode_key(place: EpisodePlace) -> str:
    """The episode's sort key in the table: the fake orders them as DynamoDB does."""
    return episode_sk(place)


class FakeMemoryStore:
    def __init__(self, jobs: FakeJobStore) -> None:
        self._jobs = jobs
        jobs.generation_of = self.read_generation
        self.users: dict[tuple[str, str], _User] = {}
        self.now: Callable[[], float] = time.monotonic
        # Called just before a conditional write is checked: a test stages a concurrent writer here.
        self.before_write: Hook | None = None
        # The same for the next fact commit (or removal), and a failure a commit raises instead.
        self.before_fact: Hook | None = None
        self.fail_next_fact: Exception | None = None
        self.writes = 0
        self.fact_commits = 0
        # (tenant, user) → episode key → (episode, generation): in the user's partition, as in DynamoDB.
        self.episode_items: dict[tuple[str, str], dict[str, tuple[Episode, int]]] = {}
        self.vectors: dict[tuple[str, str], dict[str, Vector]] = {}
        self.copies_kept: list[tuple[str, str, str | None]] = []
        # (tenant, user) → record id → (record, generation).
        self.record_items: dict[tuple[str, str], dict[str, tuple[MemoryRecord, int]]] = {}

    def _user(self, tenant_id: str, user_id: str) -> _User:
        return self.users.setdefault((tenant_id, user_id), _User())

    def read_memory(self, tenant_id: str, user_id: str, with_facts: bool) -> tuple[MemoryState, list[Fact]]:
        with self._jobs.lock:
            user = self._user(tenant_id, user_id)
            facts = [fact for fact, gen in user.facts.values() if gen == user.state.generation]
            return user.state, sorted(facts, key=lambda fact: fact.id) if with_facts else []

    def read_generation(self, tenant_id: str, user_id: str) -> int:
        return self._user(tenant_id, user_id).state.generation

    def list_users(self, tenant_id: str, limit: int, after: str | None) -> tuple[list[str], bool]:
        listed = sorted(
            user_id
            for (tenant, user_id), user in self.users.items()
            if tenant == tenant_id and user.listed and (after is None or user_id > after)
        )
        return listed[:limit], len(listed) > limit

    def write_memory(self, write: MemoryWrite) -> None:
        hook, self.before_write = self.before_write, None
        if hook:
            hook()
        with self._jobs.lock:
            user = self._user(write.tenant_id, write.user_id)
            if (user.state.last_version, user.state.generation) != (write.expected_version, write.generation):
                raise ConditionFailed("version or generation changed")
            stored = self.record_items.setdefault((write.tenant_id, write.user_id), {})
            for change in write.records:
                held = stored.get(change.record.id)
                if change.is_new == (held is not None) or (held is not None and not held[0].is_current):
                    raise ConditionFailed("a record changed")
            for change in write.records:
                record = change.record
                if not change.is_new:  # an invalidation sets the ending alone, as DynamoDB's Update does
                    ending = {
                        name: getattr(record, name)
                        for name in ("valid_to", "invalidated_at", "superseded_by")
                    }
                    record = stored[record.id][0].model_copy(update=ending)
                stored[record.id] = (record, write.generation)
            version = write.expected_version + 1
            count = user.state.episode_count + len(write.episodes)
            tally = {
                "episodes_revision": user.state.episodes_revision,
                "episodes_written": user.state.episodes_written + len(write.episodes),
            }
            user.listed = True
            user.state = MemoryState(
                write.memory, version, write.word_count, write.updated_at, write.generation, count, **tally
            )
            if write.memory is None:  # no summary: as the table reads an item without one
                user.state = MemoryState(
                    generation=write.generation, episode_count=count, version_floor=version, **tally
                )
            self._jobs.set_job_status(
                write.tenant_id, write.completed_job_ids, "completed", memory_version=version
            )
            self._store_episodes(write.tenant_id, write.user_id, write.generation, write.episodes)
            self.writes += 1

    # --- RecordStore: the records live in the user's partition too ---

    def records(self, tenant_id: str, user_id: str, generation: int) -> list[MemoryRecord]:
        stored = self.record_items.get((tenant_id, user_id), {})
        return [record for _, (record, gen) in sorted(stored.items()) if gen == generation]

    def delete_record(self, tenant_id: str, user_id: str, generation: int, record_id: str) -> int | None:
        with self._jobs.lock:
            stored = self.record_items.get((tenant_id, user_id), {})
            held = stored.get(record_id)
            if (
                held is None
                or held[1] != generation
                or self.read_generation(tenant_id, user_id) != generation
            ):
                return None
            del stored[record_id]
            return int(
                self.vectors.get((tenant_id, user_id), {}).pop(f"record:{record_id}", None) is not None
            )

    def forget_episode(self, forget: EpisodeForget) -> EpisodeErasure:
        """All of it or nothing, on the conditions the DynamoDB transaction checks."""
        with self._jobs.lock:
            user = self._user(forget.tenant_id, forget.user_id)
            if (user.state.last_version, user.state.generation) != (
                forget.expected_version,
                forget.generation,
            ):
                raise ConditionFailed("version or generation changed")
            stored = self.record_items.setdefault((forget.tenant_id, forget.user_id), {})
            for rewrite in forget.rewritten_records:
                held = stored.get(rewrite.before.id)
                as_read = (rewrite.before.invalidated_at, rewrite.before.episode_ids)
                if held is None or (held[0].invalidated_at, held[0].episode_ids) != as_read:
                    raise ConditionFailed("a record changed")
            episodes = self.episode_items.get((forget.tenant_id, forget.user_id), {})
            vectors = self.vectors.get((forget.tenant_id, forget.user_id), {})
            present = sum(record.id in stored for record in forget.deleted_records)
            erased = VectorsErased(
                episodes=sum(
                    vectors.pop(f"episode:{_episode_key(e.place)}", None) is not None for e in forget.episodes
                ),
                records=sum(vectors.pop(f"record:{r.id}", None) is not None for r in forget.deleted_records),
            )
            for episode in forget.episodes:
                episodes.pop(_episode_key(episode.place), None)
            for record in forget.deleted_records:
                stored.pop(record.id, None)
            for rewrite in forget.rewritten_records:
                stored[rewrite.after.id] = (rewrite.after, forget.generation)
            version = forget.expected_version + 1
            count = user.state.episode_count - len(forget.episodes)
            revision = user.state.episodes_revision + 1
            user.listed = True
            user.state = MemoryState(
                forget.memory,
                version,
                forget.word_count,
                forget.updated_at,
                forget.generation,
                count,
                episodes_revision=revision,
                episodes_written=user.state.episodes_written,
            )
            if forget.memory is None:
                user.state = MemoryState(
                    generation=forget.generation,
                    episode_count=count,
                    episodes_revision=revision,
                    episodes_written=user.state.episodes_written,
                    version_floor=version,
                )
            self._jobs.add(forget.job, forget.generation)
            return EpisodeErasure(records=present, vectors=erased)

    def trim_records(self, tenant_id: str, user_id: str, generation: int, keep: int) -> int:
        records = self.records(tenant_id, user_id, generation)
        excess = trim_order(records)[: max(0, len(records) - keep)]
        for record in excess:
            del self.record_items[(tenant_id, user_id)][record.id]
        return len(excess)

    # --- EpisodeStore: the episodes live in the user's partition, like the memory and its facts ---

    def _store_episodes(
        self, tenant_id: str, user_id: str, generation: int, episodes: Sequence[Episode]
    ) -> None:
        stored = self.episode_items.setdefault((tenant_id, user_id), {})
        for episode in episodes:
            stored[_episode_key(episode.place)] = (episode, generation)

    def put_episodes(
        self, tenant_id: str, user_id: str, generation: int, episodes: list[Episode], memory_version: int
    ) -> None:
        with self._jobs.lock:
            user = self._user(tenant_id, user_id)
            if user.state.generation != generation:
                raise ConditionFailed("the user was deleted")
            job_ids = [episode.job_id for episode in episodes]
            if any(self._jobs.jobs[job_id].status in ("completed", "skipped") for job_id in job_ids):
                raise ConditionFailed("a job was settled")
            self._store_episodes(tenant_id, user_id, generation, episodes)
            self._jobs.set_job_status(tenant_id, job_ids, "completed", memory_version=memory_version)
            user.state = replace(
                user.state,
                episode_count=user.state.episode_count + len(episodes),
                episodes_written=user.state.episodes_written + len(episodes),
            )
            user.listed = True

    def episodes(self, tenant_id: str, user_id: str, generation: int) -> list[Episode]:
        stored = self.episode_items.get((tenant_id, user_id), {})
        return [episode for key, (episode, gen) in sorted(stored.items()) if gen == generation]

    def list_episodes(
        self, tenant_id: str, user_id: str, generation: int, limit: int, after: EpisodePlace | None
    ) -> tuple[list[Episode], bool]:
        stored = self.episode_items.get((tenant_id, user_id), {})
        start = _episode_key(after) if after is not None else None
        keys = [key for key in sorted(stored, reverse=True) if start is None or key < start]
        page = [stored[key][0] for key in keys[:limit] if stored[key][1] == generation]
        return page, len(keys) > limit

    # --- RecallStore: the same partition, with the vectors of its documents ---

    def corpus(self, tenant_id: str, user_id: str, model: str | None = None) -> Corpus:
        state, facts = self.read_memory(tenant_id, user_id, with_facts=True)
        vectors = self.vectors.get((tenant_id, user_id), {})
        episodes = self.episodes(tenant_id, user_id, state.generation)
        records = [r for r in self.records(tenant_id, user_id, state.generation) if r.is_current]
        return Corpus(
            state,
            [Indexed(fact, vectors.get(f"fact:{fact.id}")) for fact in facts],
            [Indexed(episode, vectors.get(f"episode:{_episode_key(episode.place)}")) for episode in episodes],
            [Indexed(record, vectors.get(f"record:{record.id}")) for record in records],
        )

    def unindexed(
        self, tenant_id: str, user_id: str, model: str, recent_episodes: int, generation: int | None = None
    ) -> list[Unindexed]:
        if generation is None:
            generation = self.read_generation(tenant_id, user_id)
        user = self._user(tenant_id, user_id)
        vectors = self.vectors.get((tenant_id, user_id), {})
        due = [
            Unindexed(
                "fact", f"fact:{fact.id}", _titled(fact), fact.updated_at.isoformat(), None, fact.is_markdown
            )
            for fact, gen in sorted(user.facts.values(), key=lambda entry: entry[0].id)
            if gen == generation and not _has_vector(vectors, f"fact:{fact.id}", model)
        ]
        due += [
            Unindexed("record", key, record.text, record.recorded_at.isoformat())
            for record in self.records(tenant_id, user_id, generation)
            if record.is_current and not _has_vector(vectors, key := f"record:{record.id}", model)
        ]
        recent = self.episodes(tenant_id, user_id, generation)[-recent_episodes:]
        return due + [
            Unindexed("episode", key, _titled(episode), "", episode.occurred_at, episode.is_markdown)
            for episode in recent
            if not _has_vector(vectors, key := f"episode:{_episode_key(episode.place)}", model)
        ]

    def set_vector(self, tenant_id: str, user_id: str, document: Unindexed, vector: Vector) -> bool:
        if document.kind == "record":  # as the table's condition: still there, still current
            held = self.record_items.get((tenant_id, user_id), {}).get(document.key.removeprefix("record:"))
            if held is None or not held[0].is_current:
                return False
        self.vectors.setdefault((tenant_id, user_id), {})[document.key] = vector
        return True

    def revise_episodes(self, tenant_id: str, user_id: str) -> None:
        user = self._user(tenant_id, user_id)
        user.state = replace(user.state, episodes_revision=user.state.episodes_revision + 1)

    def keep_copy(self, tenant_id: str, user_id: str, model: str | None) -> None:
        """This store reads every query whole: the copies it was asked to keep are only noted."""
        self.copies_kept.append((tenant_id, user_id, model))

    def trim_episodes(self, tenant_id: str, user_id: str, keep: int) -> int:
        stored = self.episode_items.get((tenant_id, user_id), {})
        excess = sorted(stored)[: max(0, len(stored) - keep)]
        for key in excess:
            del stored[key]
        user = self._user(tenant_id, user_id)
        user.state = replace(user.state, episode_count=len(stored))
        return len(excess)

    def read_facts(self, tenant_id: str, user_id: str, fact_ids: Collection[str] | None = None) -> FactLedger:
        with self._jobs.lock:
            user = self._user(tenant_id, user_id)
            if fact_ids is None:
                user.counted_reads.add(user.revision)
            facts = {
                fact_id: StoredFact(
                    fact,
                    user.sizes.get(fact_id),
                    f"fact:{fact_id}" in self.vectors.get((tenant_id, user_id), {}),
                )
                for fact_id, (fact, generation) in sorted(user.facts.items())
                if generation == user.state.generation and (fact_ids is None or fact_id in fact_ids)
            }
            settling = user.settling_until > self.now()
            state = user.state
            return FactLedger(state.generation, state.version, facts, user.counts, user.revision, settling)

    def commit_facts(self, commit: FactCommit) -> None:
        """All of the commit or nothing, on the conditions the DynamoDB transaction checks."""
        assert len(commit.entries) <= MAX_FACT_ENTRIES, "one DynamoDB transaction holds at most 100 writes"
        hook, self.before_fact = self.before_fact, None
        if hook:
            hook()
        failure, self.fail_next_fact = self.fail_next_fact, None
        if failure:
            raise failure
        with self._jobs.lock:
            user = self._user(commit.tenant_id, commit.user_id)
            if user.state.generation != commit.generation:
                raise UserDeleted("the user was deleted")
            changed = frozenset(
                position
                for position, entry in enumerate(commit.entries)
                if entry.expect is not None and not self._holds(user, entry.fact_id, entry.expect)
            )
            if changed or not self._counts_hold(user, commit):
                raise ConditionFailed("the facts or their counts changed", changed)
            if any(entry.job.job_id in self._jobs.jobs for entry in commit.entries):
                raise ConditionFailed("job exists")
            for entry in commit.entries:
                self._jobs.add(entry.job, commit.generation)
                if entry.fact is not None:
                    user.facts[entry.fact_id] = (entry.fact, commit.generation)
                    user.sizes[entry.fact_id] = entry.size
            base = FactCounts() if commit.rebase_from is not None else user.counts
            assert base is not None  # `_counts_hold` refused a change of counts that do not exist
            user.counts = base + commit.change
            user.revision += 1
            user.listed = True
            if commit.more_follow:
                user.settling_until = self.now() + FACT_SETTLE_S
            self.fact_commits += 1

    def remove_fact(self, removal: FactRemoval) -> None:
        hook, self.before_fact = self.before_fact, None
        if hook:
            hook()
        with self._jobs.lock:
            user = self._user(removal.tenant_id, removal.user_id)
            if user.state.generation != removal.generation:
                raise UserDeleted("the user was deleted")
            if not self._holds(user, removal.fact_id, removal.expect):
                raise ConditionFailed("the fact changed", frozenset({1}))
            if (user.counts is None) != (removal.counts is None):
                raise ConditionFailed("the counts changed", frozenset({0}))
            del user.facts[removal.fact_id]
            user.sizes.pop(removal.fact_id, None)
            if user.counts is not None and removal.counts is not None:
                user.counts = user.counts + -removal.counts
            user.revision += 1

    def _holds(self, user: _User, fact_id: str, expect: Present | Absent) -> bool:
        stored = user.facts.get(fact_id)
        live = stored is not None and stored[1] == user.state.generation
        if isinstance(expect, Absent):
            return not live
        return live and user.sizes.get(fact_id) == expect.size

    def _counts_hold(self, user: _User, commit: FactCommit) -> bool:
        if commit.rebase_from is not None:
            # Only a read of every fact, after the counts, is safe to rebase on (DynamoDB's reads
            # of several items are not one snapshot).
            assert commit.rebase_from in user.counted_reads, "a rebase decided on a partial read"
            return commit.rebase_from == user.revision and user.settling_until <= self.now()
        if user.counts is None:
            return False
        after = user.counts + commit.change
        limits = commit.limits
        return limits is None or (after.facts <= limits.facts and after.bytes <= limits.bytes)

    def erase_user(self, tenant_id: str, user_id: str) -> MemoryErasure:
        with self._jobs.lock:
            user = self._user(tenant_id, user_id)
            generation = user.state.generation + 1
            summary = int(user.state.memory is not None)
            user.state = MemoryState(generation=generation, version_floor=user.state.last_version)
            user.listed = False
            gone_facts = [k for k, v in user.facts.items() if v[1] < generation]
            user.facts = {k: v for k, v in user.facts.items() if v[1] >= generation}
            user.sizes = {k: v for k, v in user.sizes.items() if k in user.facts}
            user.counts, user.revision, user.settling_until = None, 0, 0.0
            user.counted_reads = set()
            stored = self.episode_items.get((tenant_id, user_id), {})
            gone_episodes = [k for k, v in stored.items() if v[1] < generation]
            self.episode_items[(tenant_id, user_id)] = {k: v for k, v in stored.items() if v[1] >= generation}
            held = self.record_items.get((tenant_id, user_id), {})
            gone_records = [k for k, v in held.items() if v[1] < generation]
            self.record_items[(tenant_id, user_id)] = {k: v for k, v in held.items() if v[1] >= generation}
            vectors = self.vectors.get((tenant_id, user_id), {})
            erased = {
                kind: [key for key in (f"{kind}:{name}" for name in names) if vectors.pop(key, None)]
                for kind, names in (
                    ("fact", gone_facts),
                    ("episode", gone_episodes),
                    ("record", gone_records),
                )
            }
            counts = VectorsErased(
                facts=len(erased["fact"]), episodes=len(erased["episode"]), records=len(erased["record"])
            )
            return MemoryErasure(
                generation, summary, len(gone_facts), len(gone_episodes), len(gone_records), counts
            )


class FakeUsageStore:
    def __init__(self) -> None:
        self.days: dict[tuple[str, date], DailyUsage] = {}

    def add_usage(self, tenant_id: str, day: date, usage: DailyUsage) -> None:
        before = self.usage(tenant_id, day)
        self.days[(tenant_id, day)] = DailyUsage(
            before.calls + usage.calls,
            before.prompt_tokens + usage.prompt_tokens,
            before.completion_tokens + usage.completion_tokens,
        )

    def usage(self, tenant_id: str, day: date) -> DailyUsage:
        return self.days.get((tenant_id, day), DailyUsage())


class FakeDeferralStore:
    """The deferral ledgers, written with the episodes and the jobs as the real transactions are, under
    the same conditions (adapters/dynamodb_budgets.py)."""

    def __init__(self, store: "FakeMemoryStore", jobs: FakeJobStore) -> None:
        self._store = store
        self._jobs = jobs
        self.registered: set[str] = set()
        self.ledger: dict[str, dict[tuple[str, str, int, str], DeferredEntry]] = {}  # by the real sort key

    def defer(self, deferral: Deferral) -> None:
        self.registered.add(deferral.tenant_id)
        with self._jobs.lock:
            user = self._store._user(deferral.tenant_id, deferral.user_id)
            if user.state.generation != deferral.generation:
                raise ConditionFailed("the user was deleted", frozenset({0}))
            job_ids = [message.job_id for message in deferral.messages]
            if any(self._jobs.jobs[job_id].status in FINAL for job_id in job_ids):
                raise ConditionFailed("a job was settled")
            self._store._store_episodes(
                deferral.tenant_id, deferral.user_id, deferral.generation, list(deferral.episodes)
            )
            user.state = replace(
                user.state,
                episode_count=user.state.episode_count + len(deferral.episodes),
                episodes_written=user.state.episodes_written + len(deferral.episodes),
            )
            self._jobs.set_job_status(deferral.tenant_id, job_ids, "deferred", budget_exhausted())
            entries = self.ledger.setdefault(deferral.tenant_id, {})
            for message in deferral.messages:
                entries[_entry_key(message)] = DeferredEntry(message, released=False)

    def user_entries(self, tenant_id: str, user_id: str) -> list[DeferredEntry]:
        return [entry for entry in self.entries(tenant_id) if entry.message.user_id == user_id]

    def tenants(self) -> list[str]:
        return sorted(self.registered)

    def entries(self, tenant_id: str) -> list[DeferredEntry]:
        entries = self.ledger.get(tenant_id, {}).values()
        return sorted(entries, key=lambda entry: accepted_order(entry.message))

    def count(self, tenant_id: str) -> int:
        return len(self.ledger.get(tenant_id, {}))

    def mark_released(
        self, tenant_id: str, entries: Sequence[DeferredEntry], at: datetime
    ) -> list[CondenseMessage]:
        marked: list[CondenseMessage] = []
        with self._jobs.lock:
            for entry in entries:
                stored = self.ledger.get(tenant_id, {}).get(_entry_key(entry.message))
                job = self._jobs.jobs.get(entry.message.job_id)
                was = "queued" if entry.released else "deferred"
                if stored != entry or job is None or job.status != was:
                    continue
                message = entry.message.model_copy(update={"released_at": at})
                self.ledger[tenant_id][_entry_key(message)] = DeferredEntry(message, released=True)
                self._jobs.jobs[job.job_id] = job.model_copy(update={"status": "queued", "error": None})
                marked.append(message)
        return marked

    def retire(self, message: CondenseMessage) -> None:
        self.ledger.get(message.tenant_id, {}).pop(_entry_key(message), None)

    def erase_user(self, tenant_id: str, user_id: str, generation: int) -> int:
        older = [e for e in self.user_entries(tenant_id, user_id) if e.message.generation < generation]
        for entry in older:
            self.retire(entry.message)
        return len(older)


def _entry_key(message: CondenseMessage) -> tuple[str, str, int, str]:
    return (message.user_id, message.queued_at.isoformat(), message.raw_index, message.job_id)


class FakePlaceholderStore:
    """A user's placeholder numbers, per life: numbering checks the user's generation as the real
    store's transaction does."""

    def __init__(self, store: FakeMemoryStore) -> None:
        self._store = store
        self.numbered: dict[tuple[str, str], tuple[int, dict[PiiValue, int]]] = {}

    def numbers(
        self, tenant_id: str, user_id: str, generation: int, values: Sequence[PiiValue]
    ) -> dict[PiiValue, int]:
        if user_of(user_id) != user_id:  # an agent's scope numbers with its user, as the real store
            user_id = user_of(user_id)
            generation = self._store.read_generation(tenant_id, user_id)
        if self._store.read_generation(tenant_id, user_id) != generation:
            raise ConditionFailed("the user was deleted", frozenset({0}))
        life, known = self.numbered.get((tenant_id, user_id), (generation, {}))
        known = known if life == generation else {}
        for value in values:
            if value not in known:
                known[value] = 1 + sum(1 for numbered in known if numbered.kind == value.kind)
        self.numbered[(tenant_id, user_id)] = (generation, known)
        return {value: known[value] for value in values}

    def known_numbers(self, tenant_id: str, user_id: str, values: Sequence[PiiValue]) -> dict[PiiValue, int]:
        user_id = user_of(user_id)
        life, known = self.numbered.get((tenant_id, user_id), (-1, {}))
        if life != self._store.read_generation(tenant_id, user_id):
            return {}
        return {value: known[value] for value in values if value in known}


class FakeAgentRegistry:
    """The agents with a private scope of each user, each listing with its token
    (adapters/dynamodb_agents.py)."""

    def __init__(self) -> None:
        self.tokens: dict[tuple[str, str], dict[str, str]] = {}
        self._issued = itertools.count()

    def register(self, tenant_id: str, user_id: str, agent_id: str) -> None:
        self.tokens.setdefault((tenant_id, user_id), {})[agent_id] = f"t{next(self._issued)}"

    def listed(self, tenant_id: str, user_id: str) -> dict[str, str]:
        return dict(self.tokens.get((tenant_id, user_id), {}))

    def unregister(self, tenant_id: str, user_id: str, listed: Mapping[str, str]) -> None:
        held = self.tokens.get((tenant_id, user_id), {})
        for agent_id, token in listed.items():
            if held.get(agent_id) == token:
                del held[agent_id]

    @property
    def listed_agents(self) -> dict[tuple[str, str], set[str]]:
        return {user: set(agents) for user, agents in self.tokens.items()}


class FakeArchive:
    def __init__(self) -> None:
        self.raw: dict[str, dict[str, Any]] = {}
        self._raw_order = itertools.count()
        self.history: dict[tuple[str, str, int], dict[int, HistoryVersion]] = {}
        # The stored copy of a user's episodes (recall/), by user: what a test put there.
        self.episode_copies: dict[tuple[str, str], object] = {}
        self.before_history: Hook | None = None
        self.fail_put_raw: Exception | None = None
        self.before_raw: Hook | None = None

    def put_raw(
        self, tenant_id: str, user_id: str, generation: int, request_id: str, payload: Mapping[str, Any]
    ) -> str:
        hook, self.before_raw = self.before_raw, None
        if hook:
            hook()
        if self.fail_put_raw:
            raise self.fail_put_raw
        # Keys sort in the order payloads were stored, as the S3 archive's do.
        key = f"raw/{tenant_id}/{user_id}/g{generation:06d}/{next(self._raw_order):013d}-{request_id}.json"
        self.raw[key] = deepcopy(dict(payload))
        return key

    def get_raw(self, key: str) -> dict[str, Any] | None:
        return deepcopy(self.raw.get(key))

    def delete_raw(self, key: str) -> None:
        self.raw.pop(key, None)

    def delete_history_from(self, tenant_id: str, user_id: str, generation: int, version: int) -> int:
        versions = self.history.get((tenant_id, user_id, generation), {})
        doomed = [found for found in versions if found >= version]
        for found in doomed:
            del versions[found]
        return len(doomed)

    def forget_raw_item(self, key: str, index: int) -> RawForgotten:
        items = self.raw.get(key, {}).get("items")
        if not isinstance(items, list) or index >= len(items) or items[index] is None:
            return "absent"
        self.replace_raw_items(key, {index: None})
        return "blanked" if key in self.raw else "deleted"

    def replace_raw_items(self, key: str, places: Mapping[int, Mapping[str, Any] | None]) -> None:
        items = self.raw.get(key, {}).get("items")
        if not isinstance(items, list):
            return
        for index, item in places.items():
            if index < len(items) and items[index] is not None:
                items[index] = None if item is None else deepcopy(dict(item))
        if all(item is None for item in items):
            self.delete_raw(key)

    def put_history(self, tenant_id: str, user_id: str, generation: int, entry: HistoryVersion) -> None:
        hook, self.before_history = self.before_history, None
        if hook:
            hook()
        self.history.setdefault((tenant_id, user_id, generation), {})[entry.version] = entry

    def list_history(
        self, tenant_id: str, user_id: str, generation: int, limit: int | None
    ) -> list[HistoryVersion]:
        versions = self.history.get((tenant_id, user_id, generation), {})
        return [versions[v] for v in sorted(versions, reverse=True)][:limit]

    def list_raw(self, tenant_id: str, user_id: str, generation: int) -> dict[str, dict[str, Any]]:
        prefix = f"raw/{tenant_id}/{user_id}/g{generation:06d}/"
        return {key: deepcopy(payload) for key, payload in sorted(self.raw.items()) if key.startswith(prefix)}

    def delete_history(self, tenant_id: str, user_id: str, generation: int, version: int) -> None:
        self.history.get((tenant_id, user_id, generation), {}).pop(version, None)

    def erase_user(self, tenant_id: str, user_id: str, generation: int) -> ArchiveErasure:
        prefix = f"raw/{tenant_id}/{user_id}/g"
        raw_before, history_before = len(self.raw), self.history_count()
        self.raw = {
            key: payload
            for key, payload in self.raw.items()
            if not key.startswith(prefix) or int(key[len(prefix) : len(prefix) + 6]) >= generation
        }
        self.history = {
            key: versions
            for key, versions in self.history.items()
            if key[:2] != (tenant_id, user_id) or key[2] >= generation
        }
        copies = self.drop_episode_copy(tenant_id, user_id)
        return ArchiveErasure(raw_before - len(self.raw), history_before - self.history_count(), copies)

    def drop_episode_copy(self, tenant_id: str, user_id: str) -> int:
        """The stored copies of episodes are the recall store's (`episode_copies`): one per user."""
        return int(self.episode_copies.pop((tenant_id, user_id), None) is not None)

    def history_count(self) -> int:
        return sum(len(versions) for versions in self.history.values())


class FakeReceiptStore:
    def __init__(self) -> None:
        self.receipts: dict[tuple[str, str], DeletionReceipt] = {}

    def put_receipt(self, receipt: DeletionReceipt) -> None:
        self.receipts[(receipt.tenant_id, receipt.receipt_id)] = receipt

    def get_receipt(self, tenant_id: str, receipt_id: str) -> DeletionReceipt | None:
        return self.receipts.get((tenant_id, receipt_id))


class FakeQueue:
    def __init__(self) -> None:
        self.messages: list[tuple[CondenseMessage, str | None]] = []
        self.index_requests: list[tuple[str, str]] = []
        self.fail_next: Exception | None = None

    def send(
        self, messages: Sequence[CondenseMessage], trace_header: str | None, index_for: str | None = None
    ) -> None:
        failure, self.fail_next = self.fail_next, None
        if failure:
            raise DependencyUnavailable("the ingestion queue is unavailable; retry the request") from failure
        self.messages += [(message, trace_header) for message in messages]
        if index_for is not None:
            self.index_requests.append((messages[0].tenant_id, messages[0].user_id))

    def request_index(self, tenant_id: str, user_id: str, request_id: str, everything: bool = False) -> None:
        failure, self.fail_next = self.fail_next, None
        if failure:
            raise DependencyUnavailable("the ingestion queue is unavailable") from failure
        self.index_requests.append((tenant_id, user_id))


DeadLetter = CondenseMessage | IndexMessage


class FakeDeadLetters:
    """The DLQ: messages a test puts there (condensations, index requests), in the order they were
    dead-lettered; `peek` leaves them where they are. `move_to_queue` is a redrive's move as SQS
    FIFO serves it: one receive of at most 10, filled with as many of one message group as it
    holds, in order, then with the next groups'; the moved ones go to `moved`. `refuse_next`: the
    ingest queue refuses the last n of the next move (they stay, in their place)."""

    def __init__(self) -> None:
        self.messages: list[DeadLetter] = []
        self.moved: list[DeadLetter] = []
        self.move_limits: list[int] = []
        self.refuse_next = 0

    def peek(self, limit: int) -> list[CondenseMessage]:
        return [message for message in self.messages[:limit] if isinstance(message, CondenseMessage)]

    def move_to_queue(self, limit: int) -> MovedLetters:
        self.move_limits.append(limit)
        taken = self._receive(min(10, limit))
        refused, self.refuse_next = min(self.refuse_next, len(taken)), 0
        sent = taken[: len(taken) - refused]
        self.messages = [message for message in self.messages if all(message is not s for s in sent)]
        self.moved += sent
        condensations = [message for message in sent if isinstance(message, CondenseMessage)]
        return MovedLetters(len(sent), condensations, refused)

    def depth(self) -> int:
        return len(self.messages)

    def _receive(self, count: int) -> list[DeadLetter]:
        by_group: dict[tuple[str, ...], list[DeadLetter]] = {}
        for message in self.messages:
            by_group.setdefault(group_of(message), []).append(message)
        taken: list[DeadLetter] = []
        for messages in by_group.values():
            taken += messages[: count - len(taken)]
        return taken


def group_of(message: DeadLetter) -> tuple[str, ...]:
    """The message group, as SqsJobQueue names it: the user's, and the user's index requests' own."""
    user = (message.tenant_id, user_of(message.user_id))
    return (*user, "index") if isinstance(message, IndexMessage) else user


class ScriptedModel:
    """A `LanguageModel` answering from `answers` in turn (the last one repeats), or `reply(prompt)`.

    `timeouts` records the `timeout_s` each call was given."""

    name = "scripted"

    def __init__(self, *answers: str | Exception, reply: Callable[[str], str] | None = None) -> None:
        self._answers = list(answers)
        self._reply = reply
        self.prompts: list[str] = []
        self.timeouts: list[float | None] = []

    def complete(
        self, system: str, prompt: str, timeout_s: float | None = None, schema: object = None
    ) -> LlmResult:
        self.prompts.append(prompt)
        self.timeouts.append(timeout_s)
        if self._reply is not None:
            return LlmResult(self._reply(prompt), prompt_tokens=len(prompt.split()), completion_tokens=1)
        answer = self._answers.pop(0) if len(self._answers) > 1 else self._answers[0]
        if isinstance(answer, Exception):
            raise answer
        return LlmResult(answer, prompt_tokens=len(prompt.split()), completion_tokens=len(answer.split()))

    @property
    def calls(self) -> int:
        return len(self.prompts)


class RecordingTracing:
    """A `Tracing` that records its spans and the trace headers it continued from."""

    def __init__(self, header: str | None = "Root=1-00000000-000000000000000000000001") -> None:
        self.header = header
        self.spans: list[tuple[str, dict[str, str | int]]] = []
        self.continued: list[str | None] = []

    @contextmanager
    def span(self, name: str, **annotations: str | int) -> Iterator[None]:
        self.spans.append((name, annotations))
        yield

    def current_trace_header(self) -> str | None:
        return self.header

    @contextmanager
    def continue_from(self, trace_header: str | None) -> Iterator[None]:
        self.continued.append(trace_header)
        yield

    def names(self) -> list[str]:
        return [name for name, _ in self.spans]


class FakeIdempotencyStore(BasePersistenceLayer):
    """Powertools' idempotency persistence of one user in a dict (the DynamoDB one, minus DynamoDB):
    a record erased by a delete is not written back."""

    def __init__(self, records: dict[str, DataRecord]) -> None:
        super().__init__()
        self.records = records

    def _get_record(self, idempotency_key: str) -> DataRecord:
        try:
            return self.records[idempotency_key]
        except KeyError:
            raise IdempotencyItemNotFoundError from None

    def _put_record(self, data_record: DataRecord) -> None:
        existing = self.records.get(data_record.idempotency_key)
        if existing is not None and not existing.is_expired:
            raise IdempotencyItemAlreadyExistsError
        self.records[data_record.idempotency_key] = data_record

    def _update_record(self, data_record: DataRecord) -> None:
        if data_record.idempotency_key in self.records:
            self.records[data_record.idempotency_key] = data_record

    def _delete_record(self, data_record: DataRecord) -> None:
        self.records.pop(data_record.idempotency_key, None)


@dataclass
class Ports:
    """One fake of every port, wired together as the composition root wires the real ones."""

    jobs: FakeJobStore = field(default_factory=FakeJobStore)
    archive: FakeArchive = field(default_factory=FakeArchive)
    queue: FakeQueue = field(default_factory=FakeQueue)
    tracing: RecordingTracing = field(default_factory=RecordingTracing)
    dead_letters: FakeDeadLetters = field(default_factory=FakeDeadLetters)
    receipts: FakeReceiptStore = field(default_factory=FakeReceiptStore)
    agents: FakeAgentRegistry = field(default_factory=FakeAgentRegistry)
    store: FakeMemoryStore = field(init=False)
    embedder: Embedder | None = field(default_factory=OfflineEmbedder)
    pii: bool = False  # MEMORY_PII=mask, with the pattern detector
    placeholders: FakePlaceholderStore = field(init=False)
    masker: Masker | None = field(init=False, default=None)
    budgets: TokenBudgets = field(default_factory=TokenBudgets)  # MEMORY_TENANT_DAILY_TOKENS
    usage: FakeUsageStore = field(default_factory=FakeUsageStore)
    deferrals: FakeDeferralStore = field(init=False)
    clock: Clock = utc_now  # what the budgets' days are counted by

    def __post_init__(self) -> None:
        self.store = FakeMemoryStore(self.jobs)
        self.deferrals = FakeDeferralStore(self.store, self.jobs)
        self.placeholders = FakePlaceholderStore(self.store)
        if self.pii:
            self.masker = Masker(PatternDetector(), self.placeholders)

    @property
    def idempotency(self) -> IdempotencyRecords:
        return self.jobs.idempotency

    def idempotency_records(self, tenant_id: str, user_id: str) -> BasePersistenceLayer:
        return FakeIdempotencyStore(self.idempotency.setdefault((tenant_id, user_id), {}))

    def reads(self) -> ReadService:
        return ReadService(self.store, self.jobs, self.archive, self.tracing)

    def lists(self) -> ListService:
        return ListService(self.store, self.store, self.jobs, self.tracing)

    def forgetter(self) -> EpisodeForgetter:
        return EpisodeForgetter(
            self.store,
            self.store,
            self.store,
            self.jobs,
            self.archive,
            self.tracing,
            50,
            receipts=self.receipts,
        )

    def records(self) -> RecordService:
        return RecordService(self.store, self.store, self.tracing, self.receipts)

    def recall(self) -> RecallService:
        return RecallService(self.store, lambda: self.embedder, self.tracing, masker=self.masker)

    def indexer(self) -> Indexer:
        return Indexer(self.store, lambda: self.embedder)

    def api_functions(self) -> dict[str, LambdaHandler]:
        """The get_memory and ingest handlers on these fakes, wired as `hippocampus.wiring` wires them."""
        edits, ingest, recall = self.edits(), self.idempotent_ingest(), self.recall()
        return {
            "get_memory": api_function(
                [read_routes.router, openapi.router],
                {
                    read_routes.read_service: self.reads,
                    read_routes.export_service: self.exports,
                    read_routes.list_service: self.lists,
                    read_routes.record_service: self.records,
                    read_routes.receipt_service: lambda: ReceiptService(self.receipts, self.tracing),
                    read_routes.usage_service: self.usage_service,
                },
            ),
            "ingest": api_function(
                [write_routes.router],
                {
                    write_routes.idempotent_ingest: lambda: ingest,
                    write_routes.edit_service: lambda: edits,
                    write_routes.record_service: self.records,
                    write_routes.episode_forgetter: self.forgetter,
                },
            ),
            "recall": api_function(
                [recall_routes.router],
                {recall_routes.recall_service: lambda: recall},
            ),
        }

    def call(
        self, method: str, path: str, body: Any = None, **kwargs: Any
    ) -> tuple[int, dict[str, str], Any]:
        """One API Gateway request to these handlers (GET to get_memory, the rest to ingest):
        status, headers (multi-value ones joined) and the JSON body (None without one)."""
        functions = self._handlers
        route = routes.match(method, path)
        handler = functions[route.function] if route else functions["get_memory"]
        response = handler(api_event(method, path, body, **kwargs), Context())
        headers = dict(response.get("headers") or {})
        headers |= {
            name: ", ".join(values) for name, values in (response.get("multiValueHeaders") or {}).items()
        }
        text = response.get("body")
        return response["statusCode"], headers, json.loads(text) if text else None

    @cached_property
    def _handlers(self) -> dict[str, LambdaHandler]:
        return self.api_functions()

    def gate(self) -> BudgetGate:
        return BudgetGate(self.budgets, self.usage, self.deferrals, self.clock)

    def release(self) -> DeferredRelease:
        return DeferredRelease(self.gate(), self.deferrals, self.jobs, lambda: self.queue, self.clock)

    def usage_service(self) -> UsageService:
        return UsageService(self.budgets, self.usage, self.deferrals, self.clock)

    def reconciler(self) -> DeadLetterReconciler:
        return DeadLetterReconciler(self.jobs, self.dead_letters)

    def redrive(self) -> DeadLetterRedrive:
        return DeadLetterRedrive(self.jobs, self.dead_letters)

    def exports(self, page_bytes: int = EXPORT_PAGE_BYTES) -> ExportService:
        return ExportService(
            self.store,
            self.jobs,
            self.archive,
            self.tracing,
            self.store,
            self.store,
            page_bytes=page_bytes,
            agents=self.agents,
        )

    def ingest(self, clock: Clock = utc_now) -> IngestService:
        return IngestService(
            self.store,
            self.jobs,
            self.archive,
            lambda: self.queue,
            self.tracing,
            clock=clock,
            masker=self.masker,
            agents=self.agents,
        )

    def idempotent_ingest(self) -> IdempotentIngest:
        return IdempotentIngest(self.ingest(), self.idempotency_records, ttl_s=3600)

    def edits(self, max_words: int = 50) -> EditService:
        return EditService(
            self.store,
            self.jobs,
            self.archive,
            self.tracing,
            max_words,
            receipts=self.receipts,
            masker=self.masker,
            deferrals=self.deferrals,
            agents=self.agents,
        )

    def consolidation(
        self, model: LanguageModel, max_words: int = 50, **options: Any
    ) -> ConsolidationService:
        condenser = Condenser(model, max_words)
        options.setdefault("episodes", self.store)
        options.setdefault("records", self.store)
        options.setdefault("masker", self.masker)
        options.setdefault("gate", self.gate())
        return ConsolidationService(
            self.store, self.jobs, self.archive, lambda: condenser, self.tracing, **options
        )

    def raw_payloads(self) -> int:
        return len(self.archive.raw)

    def queued(self, receive_count: int = 1) -> list[QueuedItem]:
        """Every message sent so far, as the condenser receives them (the queue keeps them)."""
        return [
            QueuedItem(f"m{index}", message, receive_count, header)
            for index, (message, header) in enumerate(self.queue.messages)
        ]
