"""The summary rebuilt from the current records, after an episode was forgotten (docs/architecture.md
"Records"): the old summary may hold what the episode taught, so it is not reused. No LLM call:
the records by priority (`record_summary.py`), conditional on the version read like every write,
and the rebuild's job `completed` in the same transaction. The next condensation rewrites it in prose.
"""

from hippocampus.contracts.errors import ConditionFailed
from hippocampus.contracts.models import HistoryVersion
from hippocampus.contracts.ports import MemoryStore, MemoryWrite
from hippocampus.contracts.prompt_format import count_words
from hippocampus.contracts.records import RecordStore
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.condense.record_ops import current_records
from hippocampus.domain.condense.record_summary import summary_from_records
from hippocampus.domain.history import HistoryArchive

REBUILD_ATTEMPTS = 3


class RebuildLost(ConditionFailed):
    """The memory kept changing under the rebuild: it is tried again later."""


class SummaryRebuild:
    def __init__(
        self,
        store: MemoryStore,
        records: RecordStore,
        history: HistoryArchive,
        max_words: int,
        clock: Clock = utc_now,
    ) -> None:
        self._store = store
        self._records = records
        self._history = history
        self._max_words = max_words
        self._clock = clock

    def rebuild(self, tenant_id: str, user_id: str, generation: int, job_id: str) -> bool:
        """Write the rebuilt summary and complete `job_id`; False when the user was forgotten after
        `generation` (nothing of the old life is written)."""
        for _ in range(REBUILD_ATTEMPTS):
            state, _ = self._store.read_memory(tenant_id, user_id, with_facts=False)
            if state.generation != generation:
                return False
            records = current_records(self._records.records(tenant_id, user_id, generation))
            summary = summary_from_records(records, self._max_words)
            now = self._clock()
            write = MemoryWrite(
                tenant_id,
                user_id,
                state.last_version,
                generation,
                summary,
                count_words(summary),
                now,
                [job_id],
            )
            try:
                self._store.write_memory(write)
            except ConditionFailed:
                continue
            entry = HistoryVersion(
                version=state.last_version + 1, memory=summary, updated_at=now, job_ids=[job_id]
            )
            self._history.record(tenant_id, user_id, generation, entry)
            return True
        raise RebuildLost("the memory kept changing during the rebuild; it will be retried")
