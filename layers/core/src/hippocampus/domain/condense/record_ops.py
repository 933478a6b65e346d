"""The record operations of one answer, checked and turned into writes (docs/architecture.md "Records").

An operation is applied whole or not at all: one that names an unknown or already invalidated
record, carries an over-long or empty text or an unknown category, repeats a current record, or
would not fit the transaction is dropped (and counted); the others still apply. Nothing is
overwritten: an invalidated record keeps its text and gets `valid_to`, `invalidated_at` and, when
a statement replaces it, `superseded_by`. Validity follows the world's time, not the order of
arrival: a replacement that became true before the record it names (a backfill of older turns
after newer ones) is kept as already superseded by it, and the newer record stays current.
"""

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time
from typing import Final

from hippocampus.contracts.models import rfc_3339
from hippocampus.contracts.records import (
    MAX_RECORD_CHARS,
    MAX_RECORD_OPERATIONS,
    NEW_RECORD_REFERENCE,
    RECORD_CATEGORIES,
    RECORD_ID_PREFIX,
    MemoryRecord,
    RecordOperation,
    RecordWrite,
)
from hippocampus.contracts.words import tokens, words
from hippocampus.domain.condense.prompt import CondenseInput

# The writes one invalidation with a replacement takes: the record it ends and the new one.
WRITES_PER_REPLACEMENT = 2


@dataclass(frozen=True)
class SourceItem:
    """An item of the burst that operations may cite: its id (the episode's) and when it happened."""

    item_id: str
    occurred_at: datetime
    job_id: str


@dataclass(frozen=True)
class RecordChanges:
    writes: list[RecordWrite]
    applied: int = 0
    dropped: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.writes)


def new_record_id(now: datetime) -> str:
    """`rec_` + the time in milliseconds (hex) + randomness: ids sort by when they were recorded."""
    return f"{RECORD_ID_PREFIX}{int(now.timestamp() * 1000):012x}{secrets.token_hex(4)}"


@dataclass(frozen=True)
class Burst:
    """What the operations of one answer are checked against."""

    current: Sequence[MemoryRecord]
    sources: Sequence[SourceItem]
    now: datetime
    max_writes: int
    agent_id: str | None = None  # the agent whose private scope the records are of (None: shared)


def apply_operations(
    operations: Sequence[RecordOperation],
    burst: Burst,
    new_id: Callable[[datetime], str] = new_record_id,
) -> RecordChanges:
    """The writes the operations make against the current records; the rest dropped and counted."""
    builder = _Changes(burst, new_id)
    for number, operation in enumerate(operations[:MAX_RECORD_OPERATIONS], start=1):
        builder.apply(number, operation)
    dropped = builder.dropped + max(0, len(operations) - MAX_RECORD_OPERATIONS)
    return RecordChanges(list(builder.writes.values()), builder.applied, dropped)


class _Changes:
    def __init__(self, burst: Burst, new_id: Callable[[datetime], str]) -> None:
        self._burst = burst
        self._new_id = new_id
        self._current = {record.id: record for record in burst.current if record.is_current}
        self._known_texts = {_text_key(record.text) for record in self._current.values()}
        self.writes: dict[str, RecordWrite] = {}
        # `new:N`: the record the answer's N-th operation added (or put in place of another).
        self._made_by: dict[str, str] = {}
        self.applied = 0
        self.dropped = 0

    def apply(self, number: int, operation: RecordOperation) -> None:
        made = self._add(operation) if operation.op == "add" else self._invalidate(operation)
        new_writes = [write for write in made or [] if write.record.id not in self.writes]
        if made is None or len(self.writes) + len(new_writes) > self._burst.max_writes:
            self.dropped += 1
            return
        created = [write.record.id for write in made if write.is_new and write.record.is_current]
        if created:
            self._made_by[f"{NEW_RECORD_REFERENCE}{number}"] = created[-1]
        for write in made:
            self.writes[write.record.id] = write
            if write.record.is_current:
                self._current[write.record.id] = write.record
                self._known_texts.add(_text_key(write.record.text))
            else:
                self._current.pop(write.record.id, None)
        self.applied += 1

    def _add(self, operation: RecordOperation) -> list[RecordWrite] | None:
        record = self._new_record(operation, default_category=None)
        return [RecordWrite(record, is_new=True)] if record is not None else None

    def _invalidate(self, operation: RecordOperation) -> list[RecordWrite] | None:
        named = operation.record_id or ""
        old = self._current.get(self._made_by.get(named, named))
        if old is None:
            return None
        now = self._burst.now
        if operation.text is None:
            end = max(self._valid_from(operation), old.valid_from)
            return [self._rewrite(old, valid_to=end, invalidated_at=now)]
        replacement = self._new_record(operation, default_category=old.category)
        if replacement is None:
            return None
        if replacement.valid_from < old.valid_from:
            # Learned now, but true before the record it names: that record stays current.
            older = replacement.model_copy(
                update={"valid_to": old.valid_from, "invalidated_at": now, "superseded_by": old.id}
            )
            return [RecordWrite(older, is_new=True)]
        return [
            self._rewrite(
                old, valid_to=replacement.valid_from, invalidated_at=now, superseded_by=replacement.id
            ),
            RecordWrite(replacement, is_new=True),
        ]

    def _rewrite(self, old: MemoryRecord, **changes: object) -> RecordWrite:
        # A record written earlier in this answer is still new: it is put once, as it ends up.
        is_new = old.id in self.writes and self.writes[old.id].is_new
        return RecordWrite(old.model_copy(update=changes), is_new=is_new)

    def _new_record(self, operation: RecordOperation, default_category: str | None) -> MemoryRecord | None:
        text = " ".join((operation.text or "").split())
        category = operation.category or default_category
        if not text or len(text) > MAX_RECORD_CHARS or category not in RECORD_CATEGORIES:
            return None
        if _text_key(text) in self._known_texts:
            return None  # a current record says it already
        sources = self._sources(operation)
        now = self._burst.now
        return MemoryRecord.model_validate(
            {
                "id": self._new_id(now),
                "text": text,
                "category": category,
                "valid_from": self._valid_from(operation, sources),
                "recorded_at": now,
                "episode_ids": sorted({source.item_id for source in sources}),
                "job_id": sources[-1].job_id,
                "agent_id": self._burst.agent_id,
            }
        )

    def _sources(self, operation: RecordOperation) -> list[SourceItem]:
        """The items it cites; when it cites none of the burst's, every item of the burst (so that
        forgetting one of them never leaves a record it alone taught: docs/api.md "Records")."""
        cited = [source for source in self._burst.sources if source.item_id in set(operation.source_items)]
        return cited or list(self._burst.sources)

    def _valid_from(
        self, operation: RecordOperation, sources: Sequence[SourceItem] | None = None
    ) -> datetime:
        """The date the answer gives (a day, or an RFC 3339 time), else when its first item happened;
        never after now."""
        sources = sources if sources is not None else self._sources(operation)
        fallback = min(source.occurred_at for source in sources) if sources else self._burst.now
        given = _parse_when(operation.valid_from)
        if given is None or given > self._burst.now:
            return fallback
        return given


# The earliest date an answer may give: an older one is a model's mistake, and a year 1 with an
# offset cannot even be written in UTC.
EARLIEST_VALID_FROM: Final = datetime(1900, 1, 1, tzinfo=UTC)


def _parse_when(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        if len(value) == len("2023-05-08"):
            moment = datetime.combine(datetime.strptime(value, "%Y-%m-%d").date(), time(), UTC)
        else:
            moment = rfc_3339(value)
        return moment if moment.astimezone(UTC) >= EARLIEST_VALID_FROM else None
    except (ValueError, OverflowError):
        return None


def _text_key(text: str) -> tuple[str, ...]:
    return tuple(words(text))


def current_records(records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    return [record for record in records if record.is_current]


# What the prompt lists of a user's current records: every record of the categories a person has
# one of at a time (so a move or a new job always finds the record it replaces), then those sharing
# the most words with the new content, then the newest; at most this many, and this many characters.
PROMPT_RECORDS = 80
PROMPT_RECORD_CHARS = 16_000
_ONE_AT_A_TIME = frozenset({"identity", "location", "work"})


def records_for_prompt(
    current: Sequence[MemoryRecord], inputs: Sequence[CondenseInput]
) -> list[MemoryRecord]:
    """The current records an answer may name, in the order they were recorded."""
    content = set(tokens(" ".join(item.render() for item in inputs)))

    def priority(record: MemoryRecord) -> tuple[bool, int]:
        return (record.category not in _ONE_AT_A_TIME, -len(content.intersection(tokens(record.text))))

    newest_first = sorted(current, key=lambda record: record.id, reverse=True)
    chosen: list[MemoryRecord] = []
    chars = 0
    for record in sorted(newest_first, key=priority):  # stable: the newest first among equals
        if len(chosen) == PROMPT_RECORDS or chars + len(record.text) > PROMPT_RECORD_CHARS:
            break
        chosen.append(record)
        chars += len(record.text)
    return sorted(chosen, key=lambda record: record.id)
