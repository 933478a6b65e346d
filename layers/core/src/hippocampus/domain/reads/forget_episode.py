"""Forget one episode (DELETE …/memory/episodes/{episode_id}, docs/api.md "Forget one episode").

First every copy of the turn in the user's raw payloads is blanked (S3; nothing else changed yet,
so a failure there is sent again whole). Then one transaction, conditional on the memory's version
and generation as read: the episode; the records it alone taught, deleted (not invalidated: nothing
of it may stay); its id dropped from the records others taught too; an ending it had caused undone
(a record it had superseded takes back the ending of the one deleted); the summary rebuilt from the
records left, as the next version, with no LLM call (the old summary may hold what the episode
taught); and the forget's job, `completed` at that version. A condensation in flight loses its own
conditional write and condenses again on top of the rebuilt summary; a delete of the user since
makes the forget read again and find nothing. Last, the summary history from the version that
condensed the episode on is erased: each later version was written from it. The stored copy of the
user's episodes (adapters/episode_snapshots.py) is dropped right after the transaction, and once
before it for a forget sent again after a failure; one stored meanwhile cannot escape: the
transaction bumped the memory's episodes revision, which its writer checks after writing.
"""

import uuid
from collections import Counter
from collections.abc import Sequence

from hippocampus.contracts.errors import ConditionFailed, NotFound, WriteConflict
from hippocampus.contracts.memory_state import MemoryState
from hippocampus.contracts.models import Episode, ForgetResponse, HistoryVersion, Job
from hippocampus.contracts.ports import (
    ArchiveStore,
    EpisodeStore,
    JobStore,
    MemoryStore,
    Tracing,
)
from hippocampus.contracts.prompt_format import count_words
from hippocampus.contracts.receipts import DynamoDbErased, ErasedCounts, ReceiptStore, S3Erased
from hippocampus.contracts.records import EpisodeForget, MemoryRecord, RecordRewrite, RecordStore
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.condense.record_ops import current_records
from hippocampus.domain.condense.record_summary import summary_from_records
from hippocampus.domain.history import HistoryArchive
from hippocampus.domain.reads.receipts import Deletion, issue_receipt
from hippocampus.observability import logger

FORGET_ATTEMPTS = 3


def forget_plan(
    records: Sequence[MemoryRecord], episode_id: str
) -> tuple[list[MemoryRecord], list[RecordRewrite]]:
    """The records forgetting `episode_id` deletes, and those it rewrites."""
    deleted = {r.id: r for r in records if r.episode_ids and set(r.episode_ids) <= {episode_id}}
    rewrites: list[RecordRewrite] = []
    for record in records:
        if record.id in deleted:
            continue
        changes: dict[str, object] = {}
        if episode_id in record.episode_ids:
            changes["episode_ids"] = [kept for kept in record.episode_ids if kept != episode_id]
        ended_by = deleted.get(record.superseded_by or "")
        if ended_by is not None:
            # Without the statement that ended it, it ends as that one did: current again if that
            # one was, else replaced by what replaced it (Paris → Berlin → Munich, Berlin forgotten:
            # Paris until Munich).
            changes |= {
                "valid_to": ended_by.valid_to,
                "invalidated_at": ended_by.invalidated_at,
                "superseded_by": ended_by.superseded_by,
            }
        if changes:
            rewrites.append(RecordRewrite(record, record.model_copy(update=changes)))
    return list(deleted.values()), rewrites


class EpisodeForgetter:
    def __init__(
        self,
        store: MemoryStore,
        episodes: EpisodeStore,
        records: RecordStore,
        jobs: JobStore,
        archive: ArchiveStore,
        tracing: Tracing,
        max_words: int,
        receipts: ReceiptStore,
        clock: Clock = utc_now,
    ) -> None:
        self._receipts = receipts
        self._store = store
        self._episodes = episodes
        self._records = records
        self._jobs = jobs
        self._archive = archive
        self._history = HistoryArchive(store, archive, tracing)
        self._tracing = tracing
        self._max_words = max_words
        self._clock = clock

    def forget(self, tenant_id: str, user_id: str, episode_id: str) -> ForgetResponse:
        requested_at = self._clock()
        # First too: a forget that failed after its transaction is sent again, finds no episode
        # (404), and must still leave no copy holding it.
        copies = self._drop_copy(tenant_id, user_id)
        state, found = self._find(tenant_id, user_id, episode_id)
        raw = self._forget_payloads(tenant_id, user_id, state.generation, episode_id)
        for _ in range(FORGET_ATTEMPTS):
            forget = self._plan(tenant_id, user_id, state, found)
            try:
                with self._tracing.span("dynamodb.forget_episode", tenant_id=tenant_id):
                    erasure = self._store.forget_episode(forget)
            except ConditionFailed:
                # A condensation, an edit or a delete got there first: decide again on what is there.
                state, found = self._find(tenant_id, user_id, episode_id)
                continue
            # One stored while this forget ran holds the episode: the next pass stores one without it.
            copies += self._drop_copy(tenant_id, user_id)
            history = self._forget_history(forget)
            logger.info("episode forgotten", extra={"tenant_id": tenant_id, "job_id": forget.job.job_id})
            deletion = Deletion(tenant_id, user_id, "episode", episode_id, forget.generation, requested_at)
            erased = ErasedCounts(
                dynamodb=DynamoDbErased(episodes=len(forget.episodes), records=erasure.records),
                s3=S3Erased(
                    raw_objects=raw["deleted"],
                    raw_items_blanked=raw["blanked"],
                    history_objects=history,
                    episode_copies=copies,
                ),
                vectors=erasure.vectors,
            )
            with self._tracing.span("dynamodb.put_receipt", tenant_id=tenant_id):
                receipt = issue_receipt(self._receipts, deletion, erased, self._clock())
            return ForgetResponse(jobs=[forget.job], receipt_id=receipt.receipt_id)
        raise WriteConflict("the user's memory kept changing; send the request again")

    def _drop_copy(self, tenant_id: str, user_id: str) -> int:
        with self._tracing.span("s3.drop_episode_copy", tenant_id=tenant_id):
            return self._archive.drop_episode_copy(tenant_id, user_id)

    def _find(self, tenant_id: str, user_id: str, episode_id: str) -> tuple[MemoryState, list[Episode]]:
        with self._tracing.span("dynamodb.read_episode", tenant_id=tenant_id):
            state, _ = self._store.read_memory(tenant_id, user_id, with_facts=False)
            found = [
                e for e in self._episodes.episodes(tenant_id, user_id, state.generation) if e.id == episode_id
            ]
        if not found:
            raise NotFound(f"episode '{episode_id}' was not found")
        return state, found

    def _plan(self, tenant_id: str, user_id: str, state: MemoryState, found: list[Episode]) -> EpisodeForget:
        records = self._records.records(tenant_id, user_id, state.generation)
        deleted, rewrites = forget_plan(records, found[0].id)
        rewritten = {rewrite.after.id: rewrite.after for rewrite in rewrites}
        gone = {record.id for record in deleted}
        left = [rewritten.get(r.id, r) for r in records if r.id not in gone]
        summary = summary_from_records(current_records(left), self._max_words)
        now = self._clock()
        job = Job(
            job_id=f"job-{uuid.uuid4().hex}",
            tenant_id=tenant_id,
            user_id=user_id,
            item_id=found[0].id,
            status="completed",
            memory_version=state.last_version + 1,
            created_at=now,
            updated_at=now,
            occurred_at=now,
        )
        return EpisodeForget(
            tenant_id=tenant_id,
            user_id=user_id,
            generation=state.generation,
            expected_version=state.last_version,
            episodes=found,
            deleted_records=deleted,
            rewritten_records=rewrites,
            memory=summary,
            word_count=count_words(summary),
            updated_at=now,
            job=job,
        )

    def _forget_payloads(
        self, tenant_id: str, user_id: str, generation: int, episode_id: str
    ) -> Counter[str]:
        """Blank every place of the user's raw payloads that holds the turn (a turn sent again beside
        new ones is stored again in the later payload); how many were blanked, and how many payloads
        went with it (it was all they held)."""
        done: Counter[str] = Counter()
        with self._tracing.span("s3.forget_raw_items", tenant_id=tenant_id):
            for raw_key, payload in self._archive.list_raw(tenant_id, user_id, generation).items():
                items = payload.get("items") or []
                for index, item in enumerate(items):
                    if isinstance(item, dict) and item.get("id") == episode_id:
                        done[self._archive.forget_raw_item(raw_key, index)] += 1
            if self._store.read_generation(tenant_id, user_id) != generation:
                # A delete of the user swept raw/ meanwhile: a payload written back after it goes too.
                self._archive.erase_user(tenant_id, user_id, generation + 1)
        return done

    def _forget_history(self, forget: EpisodeForget) -> int:
        """Every summary version from the first that condensed the episode on, then the rebuilt one;
        how many versions were deleted."""
        jobs = self._jobs.get_jobs(forget.tenant_id, [episode.job_id for episode in forget.episodes])
        versions = [job.memory_version for job in jobs.values() if job.memory_version is not None]
        place = (forget.tenant_id, forget.user_id, forget.generation)
        deleted = 0
        if versions:
            with self._tracing.span("s3.forget_history", tenant_id=forget.tenant_id):
                deleted = self._archive.delete_history_from(*place, min(versions))
        entry = HistoryVersion(
            version=forget.expected_version + 1,
            memory=forget.memory,
            updated_at=forget.updated_at,
            job_ids=[forget.job.job_id],
        )
        self._history.record(*place, entry)
        return deleted
