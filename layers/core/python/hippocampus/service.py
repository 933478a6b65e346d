"""Read and write operations of the memory API (DESIGN §2), independent of HTTP and Lambda."""

import hashlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from botocore.exceptions import BotoCoreError, ClientError

from hippocampus.adapters.s3 import raw_key
from hippocampus.condense import count_words
from hippocampus.errors import (
    ConditionFailed,
    DependencyUnavailable,
    LimitExceeded,
    NotFound,
    ServiceError,
    ValidationFailed,
    VersionConflict,
)
from hippocampus.models import (
    MAX_FACT_BYTES_PER_USER,
    MAX_FACTS_PER_USER,
    CondenseMessage,
    Fact,
    HistoryResponse,
    HistoryVersion,
    IngestItem,
    IngestRequest,
    Job,
    JobError,
    JobsResponse,
    MemoryBody,
    compact_json_size,
)
from hippocampus.observability import MetricName, logger, record_metric
from hippocampus.ports import ArchiveStore, JobQueue, MemoryState, MemoryStore, MemoryWrite, Tracing

FACT_FIELDS = {"id", "text", "metadata", "additional_metadata"}

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def memory_body(tenant_id: str, user_id: str, state: MemoryState, facts: list[Fact]) -> MemoryBody:
    return MemoryBody(
        tenant_id=tenant_id,
        user_id=user_id,
        memory=state.memory,
        version=state.version,
        word_count=state.word_count,
        updated_at=state.updated_at,
        facts=facts,
    )


class ReadService:
    """The read path (get_memory function): one key lookup per request."""

    def __init__(self, store: MemoryStore, archive: ArchiveStore, tracing: Tracing) -> None:
        self._store = store
        self._archive = archive
        self._tracing = tracing

    def get_memory(self, tenant_id: str, user_id: str) -> MemoryBody:
        with self._tracing.span("dynamodb.read_memory", tenant_id=tenant_id):
            state, facts = self._store.read_memory(tenant_id, user_id, with_facts=True)
        record_metric(MetricName.MEMORY_READS)
        if state.memory is None and not facts:
            record_metric(MetricName.MEMORY_MISSES)
        return memory_body(tenant_id, user_id, state, facts)

    def get_history(self, tenant_id: str, user_id: str, limit: int) -> HistoryResponse:
        with self._tracing.span("dynamodb.read_memory", tenant_id=tenant_id):
            state, _ = self._store.read_memory(tenant_id, user_id, with_facts=False)
        with self._tracing.span("s3.list_history", tenant_id=tenant_id):
            versions = self._archive.list_history(tenant_id, user_id, state.generation, limit)
        return HistoryResponse(versions=versions)

    def get_job(self, tenant_id: str, job_id: str) -> Job:
        with self._tracing.span("dynamodb.get_job", tenant_id=tenant_id, job_id=job_id):
            job = self._store.get_job(tenant_id, job_id)
        if job is None:
            raise NotFound(f"job '{job_id}' was not found for tenant '{tenant_id}'")
        return job


@dataclass(frozen=True)
class _Accepted:
    index: int
    item: IngestItem
    job: Job


def content_hash(item: IngestItem) -> str:
    return hashlib.sha256(item.model_dump_json(exclude={"id"}).encode()).hexdigest()


def job_id_for(tenant_id: str, user_id: str, item_id: str, digest: str, generation: int) -> str:
    """Deterministic: the same item (id and content) sent again maps to the same job."""
    seed = "\x1f".join([tenant_id, user_id, item_id, digest, str(generation)])
    return "job-" + hashlib.sha256(seed.encode()).hexdigest()[:32]


def check_fact_limits(items: Sequence[IngestItem], existing: list[Fact]) -> None:
    """At most MAX_FACTS_PER_USER facts, MAX_FACT_BYTES_PER_USER in all: checked before anything is written."""
    sizes = {fact.id: compact_json_size(fact.model_dump(mode="json")) for fact in existing}
    for index, item in enumerate(items):
        if item.infer:
            continue
        # Facts sent without an id each get a new one.
        fact_id = item.id or f"new-{index}"
        sizes[fact_id] = compact_json_size(item.model_dump(mode="json", include=FACT_FIELDS)) + 32
    if len(sizes) > MAX_FACTS_PER_USER:
        raise LimitExceeded(
            f"a user holds at most {MAX_FACTS_PER_USER} facts; this request would make {len(sizes)}",
            [{"field": "items", "message": f"at most {MAX_FACTS_PER_USER} facts per user", "type": "limit"}],
        )
    if sum(sizes.values()) > MAX_FACT_BYTES_PER_USER:
        raise LimitExceeded(
            f"a user's facts hold at most {MAX_FACT_BYTES_PER_USER} bytes in all (they come back in every read)",
            [{"field": "items", "message": "facts too large in total", "type": "limit"}],
        )


def archive_history(
    store: MemoryStore,
    archive: ArchiveStore,
    tracing: Tracing,
    tenant_id: str,
    user_id: str,
    generation: int,
    entry: HistoryVersion,
) -> None:
    """Archive a version already written. Best effort: the memory is the data, history its audit trail."""
    try:
        with tracing.span("s3.put_history", tenant_id=tenant_id):
            archive.put_history(tenant_id, user_id, generation, entry)
        if store.read_memory(tenant_id, user_id, with_facts=False)[0].generation != generation:
            # A delete ran meanwhile and may have listed history/ before this version landed.
            archive.delete_history(tenant_id, user_id, generation, entry.version)
    except Exception:
        logger.exception(
            "history version not archived", extra={"tenant_id": tenant_id, "version": entry.version}
        )


class WriteService:
    """The write path (ingest function): ingest, replace, forget."""

    def __init__(
        self,
        store: MemoryStore,
        archive: ArchiveStore,
        queue: Callable[[], JobQueue],
        tracing: Tracing,
        max_words: int,
        clock: Clock = utc_now,
    ) -> None:
        self._store = store
        self._archive = archive
        self._queue = queue
        self._tracing = tracing
        self._max_words = max_words
        self._clock = clock

    # -- ingest -----------------------------------------------------------------------------

    def ingest(self, tenant_id: str, user_id: str, request: IngestRequest, request_id: str) -> JobsResponse:
        needs_facts = any(not item.infer for item in request.items)
        with self._tracing.span("dynamodb.read_memory", tenant_id=tenant_id):
            state, facts = self._store.read_memory(tenant_id, user_id, with_facts=needs_facts)
        if needs_facts:
            check_fact_limits(request.items, facts)
        now = self._clock()
        jobs: list[Job] = []
        to_condense: list[_Accepted] = []
        try:
            for index, item in enumerate(request.items):
                job, created = self._create_job(tenant_id, user_id, item, state.generation, now)
                if not created:
                    record_metric(MetricName.DUPLICATES_SKIPPED)
                elif item.infer:
                    to_condense.append(_Accepted(index, item, job))
                else:
                    job = self._write_fact(tenant_id, user_id, item, job, state)
                jobs.append(job)
            if to_condense:
                self._enqueue(tenant_id, user_id, to_condense, state.generation, request_id)
        except Exception:
            # Jobs created but never queued are marked failed, so sending the items again requeues them.
            failure = JobError(code="dependency_unavailable", message="the item could not be queued")
            self._store.set_job_status(
                tenant_id, [entry.job.job_id for entry in to_condense], "failed", failure
            )
            raise
        record_metric(MetricName.ITEMS_INGESTED, len(request.items))
        logger.info("items accepted", extra={"tenant_id": tenant_id, "items": len(request.items)})
        return JobsResponse(jobs=jobs)

    def _create_job(
        self, tenant_id: str, user_id: str, item: IngestItem, generation: int, now: datetime
    ) -> tuple[Job, bool]:
        item_id = item.id or f"item-{uuid.uuid4().hex}"
        if item.id is None:
            item = item.model_copy(update={"id": item_id})
        # Re-sending a fact always writes it (it may have been deleted since); turns are deduplicated.
        digest = content_hash(item) if item.infer else uuid.uuid4().hex
        job = Job(
            job_id=job_id_for(tenant_id, user_id, item_id, digest, generation),
            tenant_id=tenant_id,
            user_id=user_id,
            item_id=item_id,
            status="queued",
            created_at=now,
            updated_at=now,
        )
        with self._tracing.span("dynamodb.create_job", tenant_id=tenant_id, job_id=job.job_id):
            return self._store.create_job(job, generation)

    def _write_fact(
        self, tenant_id: str, user_id: str, item: IngestItem, job: Job, state: MemoryState
    ) -> Job:
        assert item.text is not None  # a fact always has text (IngestItem validation)
        fact = Fact(
            id=job.item_id,
            text=item.text,
            metadata=item.metadata,
            additional_metadata=item.additional_metadata,
            updated_at=job.created_at,
        )
        try:
            with self._tracing.span("dynamodb.put_fact", tenant_id=tenant_id, job_id=job.job_id):
                self._store.put_fact(tenant_id, user_id, fact, state.generation)
        except ConditionFailed:
            # The user was deleted after this request read it: deletion wins.
            self._store.set_job_status(tenant_id, [job.job_id], "skipped")
            return job.model_copy(update={"status": "skipped"})
        self._store.set_job_status(tenant_id, [job.job_id], "completed", memory_version=state.version)
        record_metric(MetricName.FACTS_WRITTEN)
        return job.model_copy(update={"status": "completed", "memory_version": state.version})

    def _enqueue(
        self, tenant_id: str, user_id: str, accepted: list[_Accepted], generation: int, request_id: str
    ) -> None:
        key = raw_key(tenant_id, user_id, request_id)
        messages = [
            CondenseMessage(
                job_id=entry.job.job_id,
                tenant_id=tenant_id,
                user_id=user_id,
                item_id=entry.job.item_id,
                generation=generation,
                raw_key=key,
                raw_index=position,
                queued_at=entry.job.updated_at,
            )
            for position, entry in enumerate(accepted)
        ]
        payload = {"items": [entry.item.model_dump(mode="json") for entry in accepted]}
        try:
            with self._tracing.span("s3.put_raw", tenant_id=tenant_id):
                self._archive.put_raw(key, payload)
            with self._tracing.span("sqs.send", tenant_id=tenant_id, job_id=messages[0].job_id):
                self._queue().send(messages, self._tracing.current_trace_header())
        except (BotoCoreError, ClientError) as error:
            raise DependencyUnavailable("the ingestion queue is unavailable; retry the request") from error
        if self._store.read_memory(tenant_id, user_id, with_facts=False)[0].generation != generation:
            # A delete ran meanwhile and may have listed raw/ before this payload landed: erase it too.
            self._archive.delete_raw(key)

    # -- replace, forget ----------------------------------------------------------------------

    def put_memory(
        self, tenant_id: str, user_id: str, memory: str, expected_version: int | None
    ) -> MemoryBody:
        if expected_version is None:
            raise ValidationFailed(
                "expected_version is required (in the body, or as an If-Match header)",
                [{"field": "expected_version", "message": "field required", "type": "missing"}],
            )
        text = memory.strip()
        words = count_words(text)
        if words > self._max_words:
            raise LimitExceeded(
                f"memory has {words} words; the limit is {self._max_words}",
                [{"field": "memory", "message": f"at most {self._max_words} words", "type": "limit"}],
            )
        state, facts = self._store.read_memory(tenant_id, user_id, with_facts=True)
        if state.version != expected_version:
            raise VersionConflict(f"memory is at version {state.version}, not {expected_version}")
        now = self._clock()
        write = MemoryWrite(tenant_id, user_id, expected_version, state.generation, text, words, now)
        try:
            with self._tracing.span("dynamodb.write_memory", tenant_id=tenant_id):
                self._store.write_memory(write)
        except ConditionFailed as error:
            record_metric(MetricName.VERSION_CONFLICTS)
            raise VersionConflict("memory changed while it was being replaced; read it again") from error
        entry = HistoryVersion(version=expected_version + 1, memory=text, updated_at=now, job_ids=[])
        archive_history(
            self._store, self._archive, self._tracing, tenant_id, user_id, state.generation, entry
        )
        new_state = MemoryState(text, expected_version + 1, words, now, state.generation)
        return memory_body(tenant_id, user_id, new_state, facts)

    def delete_memory(self, tenant_id: str, user_id: str) -> None:
        with self._tracing.span("dynamodb.erase_user", tenant_id=tenant_id):
            self._store.erase_user(tenant_id, user_id)
        with self._tracing.span("s3.erase_user", tenant_id=tenant_id):
            self._archive.erase_user(tenant_id, user_id)
        record_metric(MetricName.DELETES)
        logger.info("user forgotten", extra={"tenant_id": tenant_id})

    def delete_fact(self, tenant_id: str, user_id: str, fact_id: str) -> None:
        with self._tracing.span("dynamodb.delete_fact", tenant_id=tenant_id):
            deleted = self._store.delete_fact(tenant_id, user_id, fact_id)
        if not deleted:
            raise NotFound(f"fact '{fact_id}' was not found")


__all__ = ["ReadService", "ServiceError", "WriteService", "content_hash", "job_id_for", "memory_body"]
