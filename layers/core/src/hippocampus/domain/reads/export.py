"""The right of access (GET …/memory/export): everything stored about one user, in one document.

The counterpart of forgetting a user (docs/api.md "Export"): the memory and its facts, the turns
accepted as sent (while their payloads are kept), every past version of the summary and every job
record, episode and record. A document that would not fit one response comes in pages: the memory
on the first, then items, history, jobs, episodes and records in a fixed order, each page up to `page_bytes`; `next_cursor` resumes after
the last entry given, so entries written meanwhile are not given twice.
"""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from hippocampus.contracts.limits import EXPORT_PAGE_BYTES
from hippocampus.contracts.models import ExportDocument
from hippocampus.contracts.ports import ArchiveStore, EpisodeStore, JobStore, MemoryStore, Tracing
from hippocampus.contracts.records import RecordStore
from hippocampus.contracts.scopes import AgentRegistry, split_scope
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.reads.cursors import decode_position, encode_position, invalid_cursor
from hippocampus.domain.reads.service import memory_body
from hippocampus.observability import MetricName, record_metric

SECTIONS = ("items", "history", "jobs", "episodes", "records")


@dataclass(frozen=True)
class _Entry:
    section: int  # its place in SECTIONS
    key: str  # ascending within a section, in the order entries are given
    value: Any  # an item as sent, a HistoryVersion, a Job, an Episode or a record: what the document holds
    size: int  # what it adds to a page


def _entry(section: int, key: str, value: Any) -> _Entry:
    jsonable = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return _Entry(section, key, value, _size(jsonable))


def encode_cursor(section: int, key: str) -> str:
    return encode_position([section, key])


def decode_cursor(cursor: str) -> tuple[int, str]:
    """The position a cursor resumes after; 422 naming `cursor` for anything this service did not write."""
    section, key = decode_position(cursor, (int, str))
    if not 0 <= section < len(SECTIONS):
        raise invalid_cursor()
    return section, key


def _size(value: object) -> int:
    # ASCII-escaped: the most a response can take to carry it.
    return len(json.dumps(value, separators=(",", ":"), default=str))


class ExportService:
    def __init__(
        self,
        store: MemoryStore,
        jobs: JobStore,
        archive: ArchiveStore,
        tracing: Tracing,
        episodes: EpisodeStore,
        records: RecordStore,
        clock: Clock = utc_now,
        page_bytes: int = EXPORT_PAGE_BYTES,
        agents: AgentRegistry | None = None,
    ) -> None:
        self._agents = agents
        self._episodes = episodes
        self._records = records
        self._store = store
        self._jobs = jobs
        self._archive = archive
        self._tracing = tracing
        self._clock = clock
        self._page_bytes = page_bytes

    def export(self, tenant_id: str, user_id: str, cursor: str | None = None) -> ExportDocument:
        after = decode_cursor(cursor) if cursor is not None else None
        with self._tracing.span("dynamodb.read_memory", tenant_id=tenant_id):
            state, facts = self._store.read_memory(tenant_id, user_id, with_facts=True)
        memory = memory_body(tenant_id, user_id, state, facts) if after is None else None
        used = _size(memory.model_dump(mode="json")) if memory else 0
        page: dict[str, list[Any]] = {name: [] for name in SECTIONS}
        given_any = memory is not None
        resume: tuple[int, str] | None = None
        position = after or (0, "")  # every key sorts after "": (0, "") is the first entry of all
        for entry in self._entries(tenant_id, user_id, state.generation, position):
            if given_any and used + entry.size > self._page_bytes:
                resume = position  # every page gives something: the memory, or one entry at least
                break
            page[SECTIONS[entry.section]].append(entry.value)
            used += entry.size
            given_any = True
            position = (entry.section, entry.key)
        record_metric(MetricName.EXPORTS)
        return ExportDocument(
            tenant_id=tenant_id,
            user_id=user_id,
            exported_at=self._clock(),
            memory=memory,
            items=page["items"],
            history=page["history"],
            jobs=page["jobs"],
            episodes=page["episodes"],
            records=page["records"],
            next_cursor=encode_cursor(*resume) if resume is not None else None,
            agents=self._agents_of(tenant_id, user_id) if after is None else [],
        )

    def _agents_of(self, tenant_id: str, user_id: str) -> list[str]:
        """A user's agents with a private scope (an agent's own export names none)."""
        if self._agents is None or split_scope(user_id)[1] is not None:
            return []
        with self._tracing.span("dynamodb.list_agents", tenant_id=tenant_id):
            return sorted(self._agents.listed(tenant_id, user_id))

    def _entries(
        self, tenant_id: str, user_id: str, generation: int, after: tuple[int, str]
    ) -> Iterator[_Entry]:
        """Every entry after `after`, section by section; a section is read only when reached."""
        start_section, start_key = after
        readers = (self._items, self._history, self._job_entries, self._episode_entries, self._record_entries)
        for section in range(start_section, len(SECTIONS)):
            for entry in readers[section](tenant_id, user_id, generation):
                if section > start_section or entry.key > start_key:
                    yield entry

    def _items(self, tenant_id: str, user_id: str, generation: int) -> list[_Entry]:
        """The turns in the order they were accepted (raw keys sort so), each once: a turn sent again
        with the same id and content (a resend beside new turns, a backfill resumed) is the same item,
        and the same job, as the first; its copy in the later payload is not given again."""
        with self._tracing.span("s3.list_raw", tenant_id=tenant_id):
            payloads = self._archive.list_raw(tenant_id, user_id, generation)
        sent = sorted(
            (f"{key}#{index:03d}", item)
            for key, payload in payloads.items()
            for index, item in enumerate(payload.get("items", []))
            if item is not None  # a place blanked when its episode was forgotten
        )
        given: set[str] = set()
        entries: list[_Entry] = []
        for place, item in sent:
            identity = json.dumps(item, sort_keys=True, separators=(",", ":"))
            if identity not in given:
                given.add(identity)
                entries.append(_entry(0, place, item))
        return entries

    def _history(self, tenant_id: str, user_id: str, generation: int) -> list[_Entry]:
        with self._tracing.span("s3.list_history", tenant_id=tenant_id):
            versions = self._archive.list_history(tenant_id, user_id, generation, None)
        # Newest first: the key counts down as the version goes up.
        return [_entry(1, f"{10**12 - v.version:012d}", v) for v in versions]

    def _job_entries(self, tenant_id: str, user_id: str, generation: int) -> list[_Entry]:
        with self._tracing.span("dynamodb.list_user_jobs", tenant_id=tenant_id):
            jobs = self._jobs.list_user_jobs(tenant_id, user_id)
        entries = [_entry(2, f"{job.created_at.isoformat()}|{job.job_id}", job) for job in jobs]
        return sorted(entries, key=lambda entry: entry.key)

    def _episode_entries(self, tenant_id: str, user_id: str, generation: int) -> list[_Entry]:
        with self._tracing.span("dynamodb.episodes", tenant_id=tenant_id):
            episodes = self._episodes.episodes(tenant_id, user_id, generation)
        # In the order they happened (an offset given with `occurred_at` is read as the same instant in UTC).
        entries = [
            _entry(3, f"{_utc(e.occurred_at)}|{_utc(e.created_at)}|{e.position:03d}|{e.job_id}", e)
            for e in episodes
        ]
        return sorted(entries, key=lambda entry: entry.key)

    def _record_entries(self, tenant_id: str, user_id: str, generation: int) -> list[_Entry]:
        """Every record, current and invalidated (their history: `superseded_by` links them), in
        the order they were recorded (ids sort so)."""
        with self._tracing.span("dynamodb.read_records", tenant_id=tenant_id):
            records = self._records.records(tenant_id, user_id, generation)
        return sorted((_entry(4, record.id, record) for record in records), key=lambda entry: entry.key)


def _utc(moment: datetime) -> str:
    """A time that sorts as text: UTC, always the same width."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")
