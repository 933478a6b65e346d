"""Forget one episode (DELETE …/memory/episodes/{episode_id}, docs/api.md "Forget one episode").

At once, in one transaction while the user is at the generation read: the episode, the records it
alone taught (deleted, not invalidated: nothing of it may stay), its id dropped from the records
others taught too, and a record that only it had superseded made current again (what it taught
includes that the older statement had ended). Then its item is blanked in the raw payload and the
summary history from the version that learned it on is erased. The summary itself may hold what
the episode taught, so a job in the user's message group rebuilds it from the remaining current
records (after every item queued before it); the answer is 202 with that job.
"""

import uuid
from collections.abc import Callable, Sequence

from hippocampus.contracts.errors import ConditionFailed, DependencyUnavailable, NotFound, WriteConflict
from hippocampus.contracts.models import CondenseMessage, Episode, Job, JobsResponse
from hippocampus.contracts.ports import ArchiveStore, EpisodeStore, JobQueue, JobStore, MemoryStore, Tracing
from hippocampus.contracts.records import EpisodeForget, MemoryRecord, RecordRewrite, RecordStore
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.condense.rebuild import SummaryRebuild
from hippocampus.observability import logger

FORGET_ATTEMPTS = 3


def forget_plan(
    records: Sequence[MemoryRecord], episode_id: str
) -> tuple[list[MemoryRecord], list[RecordRewrite]]:
    """The records forgetting `episode_id` deletes, and those it rewrites."""
    deleted = [record for record in records if record.episode_ids and set(record.episode_ids) <= {episode_id}]
    gone = {record.id for record in deleted}
    rewrites: list[RecordRewrite] = []
    for record in records:
        if record.id in gone:
            continue
        changes: dict[str, object] = {}
        if episode_id in record.episode_ids:
            changes["episode_ids"] = [kept for kept in record.episode_ids if kept != episode_id]
        if record.superseded_by in gone:
            changes |= {"valid_to": None, "invalidated_at": None, "superseded_by": None}
        if changes:
            rewrites.append(RecordRewrite(record, record.model_copy(update=changes)))
    return deleted, rewrites


class EpisodeForgetter:
    def __init__(
        self,
        store: MemoryStore,
        episodes: EpisodeStore,
        records: RecordStore,
        jobs: JobStore,
        archive: ArchiveStore,
        queue: Callable[[], JobQueue],
        tracing: Tracing,
        rebuild: SummaryRebuild,
        clock: Clock = utc_now,
    ) -> None:
        self._rebuild = rebuild
        self._store = store
        self._episodes = episodes
        self._records = records
        self._jobs = jobs
        self._archive = archive
        self._queue = queue
        self._tracing = tracing
        self._clock = clock

    def forget(self, tenant_id: str, user_id: str, episode_id: str) -> JobsResponse:
        generation, episodes = self._erase(tenant_id, user_id, episode_id)
        for episode in episodes:
            self._forget_payload(tenant_id, episode)
        self._forget_history(tenant_id, user_id, generation, episodes)
        job = self._queue_rebuild(tenant_id, user_id, episode_id, generation)
        logger.info("episode forgotten", extra={"tenant_id": tenant_id, "job_id": job.job_id})
        return JobsResponse(jobs=[job])

    def _erase(self, tenant_id: str, user_id: str, episode_id: str) -> tuple[int, list[Episode]]:
        """The episode and what it alone taught, in one transaction; read again when a record
        changed meanwhile (a condensation invalidated it)."""
        for _ in range(FORGET_ATTEMPTS):
            with self._tracing.span("dynamodb.read_episode", tenant_id=tenant_id):
                generation = self._store.read_generation(tenant_id, user_id)
                found = [
                    e for e in self._episodes.episodes(tenant_id, user_id, generation) if e.id == episode_id
                ]
                if not found:
                    raise NotFound(f"episode '{episode_id}' was not found")
                records = self._records.records(tenant_id, user_id, generation)
            deleted, rewrites = forget_plan(records, episode_id)
            forget = EpisodeForget(tenant_id, user_id, generation, found, deleted, rewrites)
            try:
                with self._tracing.span("dynamodb.forget_episode", tenant_id=tenant_id):
                    self._records.forget_episode(forget)
            except ConditionFailed:
                continue
            return generation, found
        raise WriteConflict("the user's records kept changing; send the request again")

    def _forget_payload(self, tenant_id: str, episode: Episode) -> None:
        source = self._jobs.raw_source(tenant_id, episode.job_id)
        if source is not None:
            with self._tracing.span("s3.forget_raw_item", tenant_id=tenant_id):
                self._archive.forget_raw_item(source.raw_key, source.raw_index)

    def _forget_history(self, tenant_id: str, user_id: str, generation: int, episodes: list[Episode]) -> None:
        """Every summary version from the first that learned the episode on: each later one was
        written from it."""
        jobs = self._jobs.get_jobs(tenant_id, [episode.job_id for episode in episodes])
        versions = [job.memory_version for job in jobs.values() if job.memory_version is not None]
        if not versions:
            return
        with self._tracing.span("s3.forget_history", tenant_id=tenant_id):
            self._archive.delete_history_from(tenant_id, user_id, generation, min(versions))

    def _queue_rebuild(self, tenant_id: str, user_id: str, episode_id: str, generation: int) -> Job:
        now = self._clock()
        job = Job(
            job_id=f"job-{uuid.uuid4().hex}",
            tenant_id=tenant_id,
            user_id=user_id,
            item_id=episode_id,
            status="queued",
            created_at=now,
            updated_at=now,
            occurred_at=now,
        )
        job, _ = self._jobs.create_job(job, generation)
        message = CondenseMessage(
            kind="rebuild",
            job_id=job.job_id,
            tenant_id=tenant_id,
            user_id=user_id,
            item_id=episode_id,
            generation=generation,
            raw_key="",
            raw_index=0,
            queued_at=now,
        )
        try:
            self._queue().send([message], self._tracing.current_trace_header())
        except DependencyUnavailable:
            # What the episode taught is gone already: rebuild here rather than leave the summary
            # holding it (the queued items before it are condensed from the rebuilt summary).
            logger.warning("rebuild not queued; rebuilding now", extra={"job_id": job.job_id})
            if self._rebuild.rebuild(tenant_id, user_id, generation, job.job_id):
                return job.model_copy(update={"status": "completed", "updated_at": self._clock()})
            self._jobs.set_job_status(tenant_id, [job.job_id], "skipped")
            return job.model_copy(update={"status": "skipped"})
        return job
