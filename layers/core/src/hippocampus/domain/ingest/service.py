"""Ingestion (POST …/memory): facts are stored at once (domain/ingest/fact_writes.py), turns are queued
for the condenser.

"Deletion wins" (docs/architecture.md) with one read of the memory item: the raw payload is
stored under the generation that read found, and a delete erases only the generations before its
own. A payload of an old generation that lands after a delete listed raw/ is erased by the
condenser, which skips its items (their messages carry the old generation).
"""

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from hippocampus.contracts.errors import (
    ConditionFailed,
    DependencyUnavailable,
    UserDeleted,
    ValidationFailed,
    WriteConflict,
)
from hippocampus.contracts.models import (
    CondenseMessage,
    IngestItem,
    IngestRequest,
    Job,
    JobError,
    JobsResponse,
)
from hippocampus.contracts.ports import (
    ArchiveStore,
    JobQueue,
    JobStore,
    MemoryStore,
    NewJob,
    RawSource,
    Tracing,
)
from hippocampus.contracts.scopes import AgentRegistry, split_scope
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.ingest.fact_writes import FactWriter
from hippocampus.domain.jobs import content_hash, job_id_for, new_job
from hippocampus.domain.privacy.masking import Masker, UserScope
from hippocampus.domain.scopes import agent_listed
from hippocampus.observability import MetricName, logger, record_metric


@dataclass(frozen=True)
class _Turn:
    """An `infer: true` item and its place in the raw payload."""

    raw_index: int
    item: IngestItem


@dataclass(frozen=True)
class _Turns:
    """A request's turns, by item index, as it accepts them: for whom, under which generation."""

    tenant_id: str
    user_id: str
    request_id: str
    generation: int  # the user's, as the request read it
    by_index: dict[int, _Turn]
    wants_index: bool  # facts were stored: the condenser embeds them (docs/architecture.md "Recall")


Queued = list[tuple[_Turn, Job]]  # the turns whose jobs were created, to be sent


def _facts_of(items: Sequence[IngestItem], indexes: Sequence[int]) -> list[tuple[int, IngestItem]]:
    return [(index, items[index]) for index in indexes if not items[index].infer]


def refuse_share(items: Sequence[IngestItem]) -> None:
    """`share` is for an agent's route: a user's route writes the shared memory already."""
    shared = [index for index, item in enumerate(items) if item.share]
    if shared:
        message = (
            "only an item sent to an agent's route can be shared: a user's route writes the shared memory"
        )
        raise ValidationFailed(
            message,
            [
                {"field": f"items[{index}].share", "message": message, "type": "value_error"}
                for index in shared
            ],
        )


def with_ids(items: Sequence[IngestItem]) -> list[IngestItem]:
    """Every item with its id: the one given, or a new one."""
    return [item if item.id else item.model_copy(update={"id": f"item-{uuid.uuid4().hex}"}) for item in items]


class IngestService:
    def __init__(
        self,
        store: MemoryStore,
        jobs: JobStore,
        archive: ArchiveStore,
        queue: Callable[[], JobQueue],
        tracing: Tracing,
        clock: Clock = utc_now,
        sleep: Callable[[float], None] = time.sleep,
        masker: Masker | None = None,
        agents: AgentRegistry | None = None,
    ) -> None:
        self._store = store
        self._masker = masker
        self._agents = agents
        self._facts = FactWriter(store, tracing, clock, sleep)
        self._jobs = jobs
        self._archive = archive
        self._queue = queue
        self._tracing = tracing
        self._clock = clock

    def ingest(self, tenant_id: str, user_id: str, request: IngestRequest, request_id: str) -> JobsResponse:
        """`user_id` is a scope key (contracts/scopes.py): on an agent's route, the items that say
        `share` go to the user's shared memory and the others to the agent's (docs/api.md "Agent
        scopes"), each part accepted as a request of its own scope."""
        items = with_ids(request.items)
        user, agent_id = split_scope(user_id)
        if agent_id is None:
            refuse_share(items)
            return self._ingest_scope(tenant_id, user_id, items, request_id, request.upsert)
        assert self._agents is not None, "an agent's route needs the agent registry"
        shared = [i for i, item in enumerate(items) if item.share]
        private = [i for i, item in enumerate(items) if not item.share]
        if shared and private:
            # Two commits: the private part's fact limits are checked before the shared part is
            # written, so a request refused for a fact limit writes nothing.
            self._facts.check_limits(tenant_id, user_id, _facts_of(items, private), request.upsert)
        jobs: dict[int, Job] = {}
        if shared:  # as if sent to the user's route (the flag said where it goes: it is not stored)
            routed = [items[i].model_copy(update={"share": False}) for i in shared]
            part = self._ingest_scope(tenant_id, user, routed, request_id, request.upsert)
            jobs |= dict(zip(shared, part.jobs, strict=True))
        if private:
            with agent_listed(self._agents, tenant_id, user_id):
                part = self._ingest_scope(
                    tenant_id, user_id, [items[i] for i in private], request_id, request.upsert
                )
            jobs |= dict(zip(private, part.jobs, strict=True))
        return JobsResponse(jobs=[jobs[i] for i in range(len(items))])

    def _ingest_scope(
        self, tenant_id: str, user_id: str, items: list[IngestItem], request_id: str, upsert: bool
    ) -> JobsResponse:
        try:
            return self._ingest(tenant_id, user_id, items, request_id, upsert)
        except UserDeleted:
            # A delete came between this request's read and its writes: what it wrote of the old
            # generation is the delete's to erase, and the request is applied after the delete.
            logger.info(
                "user deleted during ingest; applying after the delete", extra={"tenant_id": tenant_id}
            )
        try:
            return self._ingest(tenant_id, user_id, items, request_id, upsert)
        except UserDeleted as error:
            raise WriteConflict("the user was deleted twice while this request ran; send it again") from error

    def _ingest(
        self, tenant_id: str, user_id: str, items: list[IngestItem], request_id: str, upsert: bool
    ) -> JobsResponse:
        by_index: dict[int, _Turn] = {}
        for index, item in enumerate(items):
            if item.infer:
                by_index[index] = _Turn(len(by_index), item)
        facts = [(index, item) for index, item in enumerate(items) if index not in by_index]
        fact_jobs: dict[int, Job] = {}
        stored_facts = 0
        if facts and self._masker is not None:
            facts = self._masked_facts(tenant_id, user_id, facts, self._masker)
        if facts:  # first: a request refused for a fact limit writes nothing, its turns included
            written = self._facts.write(tenant_id, user_id, facts, upsert)
            generation, fact_jobs, stored_facts = written.generation, written.jobs, written.stored
        else:
            with self._tracing.span("dynamodb.read_memory", tenant_id=tenant_id):
                generation = self._store.read_memory(tenant_id, user_id, with_facts=False)[0].generation
        turns = _Turns(tenant_id, user_id, request_id, generation, by_index, wants_index=stored_facts > 0)
        turn_jobs, sent = self._accept(turns) if by_index else ({}, False)
        if turns.wants_index and not sent:  # else the index request went with the turns
            self._request_index(tenant_id, user_id, request_id)
        record_metric(MetricName.ITEMS_INGESTED, len(items))
        logger.info("items accepted", extra={"tenant_id": tenant_id, "items": len(items)})
        # Every item's job, in item order.
        return JobsResponse(
            jobs=[turn_jobs[i] if i in turn_jobs else fact_jobs[i] for i in range(len(items))]
        )

    def _masked_facts(
        self, tenant_id: str, user_id: str, facts: list[tuple[int, IngestItem]], masker: Masker
    ) -> list[tuple[int, IngestItem]]:
        """Facts are stored as sent, so they are masked here (turns are masked by the condenser,
        before any model sees them: docs/architecture.md "PII masking")."""
        generation = self._store.read_generation(tenant_id, user_id)
        try:
            with self._tracing.span("pii.mask", tenant_id=tenant_id):
                masked = masker.mask_items(UserScope(tenant_id, user_id, generation), [i for _, i in facts])
        except ConditionFailed as error:
            raise UserDeleted("the user was deleted while its facts were masked") from error
        return [(index, item) for (index, _), item in zip(facts, masked, strict=True)]

    def _accept(self, turns: _Turns) -> tuple[dict[int, Job], bool]:
        """Store the turns' raw payload, create their jobs together and queue the new ones, with the
        facts' index request when one is wanted; each turn's job by item index, and whether anything
        was queued. A failure on the way undoes what it did."""
        raw_key = self._store_raw(turns)
        queued: Queued = []
        try:
            turn_jobs = self._create_turn_jobs(turns, raw_key, queued)
        except Exception:
            self._undo(turns.tenant_id, queued, raw_key)
            raise
        if not queued:
            self._archive.delete_raw(raw_key)  # every turn was a duplicate: nothing reads this payload
            return turn_jobs, False
        if self._masker is not None and len(queued) < len(turns.by_index):
            # With masking no original is kept that nothing will mask: a duplicate's place, which no
            # message points to, goes now (the condenser masks the others, then erases them).
            sent = {turn.raw_index for turn, _ in queued}
            duplicates = {t.raw_index: None for t in turns.by_index.values() if t.raw_index not in sent}
            try:
                self._archive.replace_raw_items(raw_key, duplicates)
            except Exception:  # best effort: the new turns are queued all the same
                logger.exception("could not erase the places of turns sent again")
        try:
            self._send(turns, raw_key, queued)
        except Exception:
            # Some messages may be on the queue already: they still need the payload.
            self._undo(turns.tenant_id, queued, None)
            raise
        return turn_jobs, True

    def _request_index(self, tenant_id: str, user_id: str, request_id: str) -> None:
        # Vectors are made off the request path (docs/architecture.md "Recall"); without this
        # message the user's next condensation makes them.
        try:
            self._queue().request_index(tenant_id, user_id, request_id)
        except DependencyUnavailable:
            logger.warning("could not ask for the facts' vectors", extra={"tenant_id": tenant_id})

    def _store_raw(self, turns: _Turns) -> str:
        payload = {"items": [turn.item.model_dump(mode="json") for turn in turns.by_index.values()]}
        with self._tracing.span("s3.put_raw", tenant_id=turns.tenant_id):
            return self._archive.put_raw(
                turns.tenant_id, turns.user_id, turns.generation, turns.request_id, payload
            )

    def _create_turn_jobs(self, turns: _Turns, raw_key: str, queued: Queued) -> dict[int, Job]:
        """Each turn's job, by item index; a job created is in `queued` as soon as it is written,
        so that a failure on the way undoes it."""
        now = self._clock()
        new_jobs = {
            index: NewJob(self._turn_job(turns, turn.item, now), RawSource(raw_key, turn.raw_index))
            for index, turn in turns.by_index.items()
        }
        created: list[Job] = []
        try:
            with self._tracing.span("dynamodb.create_job", tenant_id=turns.tenant_id, jobs=len(new_jobs)):
                outcomes = self._jobs.create_jobs(list(new_jobs.values()), turns.generation, created)
        except Exception:
            turn_of = {new.job.job_id: turns.by_index[index] for index, new in reversed(new_jobs.items())}
            queued += [(turn_of[job.job_id], job) for job in created]
            raise
        turn_jobs: dict[int, Job] = {}
        for index, (job, was_created) in zip(new_jobs, outcomes, strict=True):
            if was_created:
                queued.append((turns.by_index[index], job))
            else:
                record_metric(MetricName.DUPLICATES_SKIPPED)
            turn_jobs[index] = job
        return turn_jobs

    @staticmethod
    def _turn_job(turns: _Turns, item: IngestItem, now: datetime) -> Job:
        assert item.id is not None
        job_id = job_id_for(turns.tenant_id, turns.user_id, item.id, content_hash(item), turns.generation)
        return new_job(turns.tenant_id, turns.user_id, item, job_id, now)

    def _send(self, turns: _Turns, raw_key: str, queued: Queued) -> None:
        messages = [
            CondenseMessage(
                job_id=job.job_id,
                tenant_id=turns.tenant_id,
                user_id=turns.user_id,
                item_id=turn.item.id,
                generation=turns.generation,
                raw_key=raw_key,
                raw_index=turn.raw_index,
                queued_at=job.updated_at,
            )
            for turn, job in queued
        ]
        with self._tracing.span("sqs.send", tenant_id=turns.tenant_id, job_id=messages[0].job_id):
            index_for = turns.request_id if turns.wants_index else None
            self._queue().send(messages, self._tracing.current_trace_header(), index_for)

    def _undo(self, tenant_id: str, unqueued: Queued, raw_key: str | None) -> None:
        """After a failure: jobs created but not queued turn `failed` (sending the items again queues
        them anew), and a raw payload that no message points to is erased."""
        failure = JobError(code="dependency_unavailable", message="the item could not be queued")
        try:
            job_ids = [job.job_id for _, job in unqueued]
            self._jobs.set_job_status(tenant_id, job_ids, "failed", failure)
            if raw_key is not None:
                self._archive.delete_raw(raw_key)
        except Exception:
            logger.exception("clean-up after a failed ingest did not finish", extra={"tenant_id": tenant_id})
