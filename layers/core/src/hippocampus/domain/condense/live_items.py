"""The items a condensation still has to apply, with their content read back from the archive.

With PII masking (docs/architecture.md "PII masking") the content is masked as it is read, and the
archive keeps the masked item from then on: a retry, a redrive from the DLQ and the payload's
retention never hold the original again. Once its job is completed, an item's place is erased.
Within one condensation an item read again unchanged is not masked again (`MaskedItems`).
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from hippocampus.contracts.memory_state import MemoryState
from hippocampus.contracts.models import CondenseMessage, IngestItem, JobError
from hippocampus.contracts.ports import ArchiveStore, JobStore, Tracing
from hippocampus.domain.condense.queued import QueuedItem
from hippocampus.domain.privacy.masking import Masker, UserScope
from hippocampus.observability import MetricName, logger, record_metric

PAYLOAD_MISSING = JobError(code="payload_missing", message="the accepted payload is no longer stored")


@dataclass(frozen=True)
class LiveItem:
    queued: QueuedItem
    content: IngestItem

    @property
    def job_id(self) -> str:
        return self.queued.message.job_id

    @property
    def occurred_at(self) -> datetime:
        """When it happened: its `occurred_at`, or when the API accepted it."""
        return self.content.occurred_at or self.queued.message.queued_at


@dataclass(frozen=True)
class _Masked:
    generation: int
    read: IngestItem  # as read from the archive
    masked: IngestItem  # what the archive holds from then on (unless masking made it too long)


class MaskedItems:
    """What one condensation has masked, by job. A condensation reads its items again on each pass
    (a backlog in several prompts, a write lost to another writer): an item read again as it was
    read, or as it was masked, keeps its masked copy instead of being masked again. With Amazon
    Comprehend each masking is a paid call, and each numbers its values again."""

    def __init__(self) -> None:
        self._by_job: dict[str, _Masked] = {}

    def known(self, job_id: str, generation: int, content: IngestItem) -> IngestItem | None:
        masked = self._by_job.get(job_id)
        if masked is None or masked.generation != generation or content not in (masked.read, masked.masked):
            return None
        return masked.masked

    def remember(self, job_id: str, generation: int, read: IngestItem, masked: IngestItem) -> None:
        self._by_job[job_id] = _Masked(generation, read, masked)


class ItemContents:
    def __init__(
        self, jobs: JobStore, archive: ArchiveStore, tracing: Tracing, masker: Masker | None = None
    ) -> None:
        self._jobs = jobs
        self._archive = archive
        self._tracing = tracing
        self._masker = masker

    def live(
        self, pending: Sequence[QueuedItem], state: MemoryState, masked: MaskedItems | None = None
    ) -> list[LiveItem]:
        """Items still to apply with their content; those superseded by a delete become `skipped`.
        `masked`: what this condensation masked on an earlier pass (a new memo when None)."""
        live: list[LiveItem] = []
        raw_cache: dict[str, list[dict[str, object]] | None] = {}
        for item in pending:
            message = item.message
            if message.generation < state.generation:
                # Deletion wins: the user was forgotten after this item was accepted. Its payload
                # may have landed after the delete's sweep of raw/: it goes now.
                self._jobs.set_job_status(message.tenant_id, [message.job_id], "skipped")
                self._archive.delete_raw(message.raw_key)
                record_metric(MetricName.JOBS_SKIPPED)
                continue
            content = self._raw_item(message, raw_cache)
            if content is None:
                # Not deleted, yet its payload is gone (expired before a late redrive): say so.
                self._jobs.set_job_status(message.tenant_id, [message.job_id], "failed", PAYLOAD_MISSING)
                logger.warning("accepted payload missing", extra={"job_id": message.job_id})
                continue
            live.append(LiveItem(item, content))
        if self._masker is None or not live:
            return live
        return self._masked(live, state.generation, self._masker, masked or MaskedItems())

    def completed(self, items: Sequence[QueuedItem]) -> None:
        """With masking, erase the payloads of items whose jobs were just completed (best effort:
        what is left is masked, and the archive's lifecycle rule expires it)."""
        if self._masker is None:
            return
        try:
            self._replace(_by_payload((item.message, None) for item in items))
        except Exception:
            logger.exception("could not erase the payloads of condensed items")

    def _masked(
        self, live: list[LiveItem], generation: int, masker: Masker, memo: MaskedItems
    ) -> list[LiveItem]:
        copies = {entry.job_id: memo.known(entry.job_id, generation, entry.content) for entry in live}
        unmasked = [entry for entry in live if copies[entry.job_id] is None]
        if unmasked:
            first = unmasked[0].queued.message
            scope = UserScope(first.tenant_id, first.user_id, generation)
            with self._tracing.span("pii.mask", tenant_id=first.tenant_id, job_id=first.job_id):
                masked = masker.mask_items(scope, [entry.content for entry in unmasked])
            # Before any model sees the items: from here on the archive holds them masked.
            changed = [
                (entry.queued.message, item.model_dump(mode="json"))
                for entry, item in zip(unmasked, masked, strict=True)
                if item != entry.content
            ]
            self._replace(
                _by_payload((message, dumped) for message, dumped in changed if _still_valid(dumped))
            )
            for entry, item in zip(unmasked, masked, strict=True):
                memo.remember(entry.job_id, generation, entry.content, item)
                copies[entry.job_id] = item
        return [LiveItem(entry.queued, copies[entry.job_id] or entry.content) for entry in live]

    def _replace(self, places: dict[str, dict[int, Mapping[str, Any] | None]]) -> None:
        for raw_key, replaced in places.items():
            self._archive.replace_raw_items(raw_key, replaced)

    def _raw_item(
        self, message: CondenseMessage, cache: dict[str, list[dict[str, object]] | None]
    ) -> IngestItem | None:
        if message.raw_key not in cache:
            with self._tracing.span("s3.get_raw", tenant_id=message.tenant_id, job_id=message.job_id):
                payload = self._archive.get_raw(message.raw_key)
            cache[message.raw_key] = payload.get("items") if payload else None
        stored = cache[message.raw_key]
        # A blanked place is an item forgotten since (DELETE …/memory/episodes/{id}).
        if stored is None or message.raw_index >= len(stored) or stored[message.raw_index] is None:
            return None
        return IngestItem.model_validate(stored[message.raw_index])


def _by_payload(
    places: Iterable[tuple[CondenseMessage, Mapping[str, Any] | None]],
) -> dict[str, dict[int, Mapping[str, Any] | None]]:
    """What goes in each item's place (None: blanked), by the payload that holds it."""
    grouped: dict[str, dict[int, Mapping[str, Any] | None]] = defaultdict(dict)
    for message, item in places:
        grouped[message.raw_key][message.raw_index] = item
    return grouped


def _still_valid(item: Mapping[str, Any]) -> bool:
    """Whether a masked item is still within the limits of an accepted one (a placeholder may be a
    few characters longer than its value): only then does it replace the original in the archive,
    which is read back with those limits. One that grew past them keeps its original there, masked
    again when read, until its job completes and its place is erased."""
    try:
        IngestItem.model_validate(item)
    except ValidationError:
        return False
    return True
