"""The audit trail: every new summary version is archived after it is written."""

from hippocampus.contracts.models import HistoryVersion
from hippocampus.contracts.ports import ArchiveStore, MemoryStore, Tracing
from hippocampus.observability import logger


class HistoryArchive:
    def __init__(self, store: MemoryStore, archive: ArchiveStore, tracing: Tracing) -> None:
        self._store = store
        self._archive = archive
        self._tracing = tracing

    def record(self, tenant_id: str, user_id: str, generation: int, entry: HistoryVersion) -> None:
        """Archive a version already written. Best effort: the memory is the data, history its audit trail.

        A delete may have listed history/ before this version landed; the one look at the
        generation afterwards catches that, and the late copy is erased (docs/architecture.md
        "Deletion wins").
        """
        try:
            with self._tracing.span("s3.put_history", tenant_id=tenant_id):
                self._archive.put_history(tenant_id, user_id, generation, entry)
            if self._store.read_generation(tenant_id, user_id) != generation:
                self._archive.delete_history(tenant_id, user_id, generation, entry.version)
        except Exception:
            logger.exception(
                "history version not archived", extra={"tenant_id": tenant_id, "version": entry.version}
            )
