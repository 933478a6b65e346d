"""Fact writes without a lock: many writers of one user never wait for each other, and the fact
limits still hold (docs/architecture.md "Fact limits").

A request reads the user's facts and counts once, decides what each of its facts does (stored as a
new fact, stored in place of the one with its id, or skipped by `upsert: false`) and what that
adds to the counts, and commits it all in one transaction that holds only if what it decided on
still holds: each fact absent or present as read, the user's generation, and the counts within
the limits after the change. A commit that lost to a concurrent writer changed nothing: the
request decides again on a new read, after a jittered pause, for FACT_WRITE_RETRY_S at most.

A request of more than MAX_FACT_ENTRIES facts takes several commits. The first one changes the
counts by the whole request, so the limits hold whatever comes after it; a later one whose fact
changed since the read leaves that fact to its later writer (this request is ordered first) and
gives back what it had counted for it, so the counts never fall below the facts.
"""

import contextlib
import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import batched

from hippocampus.contracts.errors import ConditionFailed, UserDeleted, WriteConflict
from hippocampus.contracts.fact_ports import (
    ABSENT,
    MAX_FACT_ENTRIES,
    FactCommit,
    FactCounts,
    FactEntry,
    FactLedger,
    Present,
)
from hippocampus.contracts.models import Fact, IngestItem, Job
from hippocampus.contracts.names import FACT_WRITE_RETRY_S
from hippocampus.contracts.ports import MemoryStore, Tracing
from hippocampus.domain.clock import Clock
from hippocampus.domain.ingest.fact_rules import (
    FACT_EXISTS,
    fact_limits,
    item_size,
    live_counts,
    refuse,
    stored_size,
    within_limits,
)
from hippocampus.domain.jobs import job_id_for, new_job
from hippocampus.observability import MetricName, record_metric

FIRST_PAUSE_S = 0.01
MAX_PAUSE_S = 0.2


class Backoff:
    """Jittered pauses between the attempts of one request, within FACT_WRITE_RETRY_S; then 409."""

    def __init__(
        self, sleep: Callable[[float], None], monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._sleep = sleep
        self._monotonic = monotonic
        self._deadline = monotonic() + FACT_WRITE_RETRY_S
        self._paused = 0.0
        self._attempts = 0

    def wait(self) -> None:
        record_metric(MetricName.FACT_WRITE_CONFLICTS)
        # The pauses count too, so a test's sleep that returns at once still ends the retries.
        if self._monotonic() >= self._deadline or self._paused >= FACT_WRITE_RETRY_S:
            raise WriteConflict("this user's facts kept changing under this request; send it again")
        pause = random.uniform(0, min(MAX_PAUSE_S, FIRST_PAUSE_S * 2**self._attempts))  # noqa: S311 (jitter)
        self._attempts += 1
        self._paused += pause
        self._sleep(pause)


class _Unsettled(Exception):
    """The counts must be rebased, and another request may still be writing: try again later."""


class _ReadAll(Exception):
    """The counts must be rebased: on a read of every fact, the counts first."""


@dataclass(frozen=True)
class _Planned:
    index: int  # the item's place in the request
    entry: FactEntry
    change: FactCounts  # what the entry adds to the counts
    superseded: FactEntry  # written instead when a later commit finds the fact changed


@dataclass(frozen=True)
class _Request:
    """The facts of one ingest request, as its commits are decided on."""

    tenant_id: str
    user_id: str
    facts: Sequence[tuple[int, IngestItem]]  # each with its place in the request
    upsert: bool


@dataclass(frozen=True)
class FactsWritten:
    generation: int  # the user's, as read by the commit that held
    jobs: dict[int, Job]  # by the item's place in the request
    stored: int  # facts stored


def _completed(request: _Request, item: IngestItem, ledger: FactLedger, now: datetime) -> Job:
    assert item.id is not None  # ids are assigned before the facts are written
    job_id = job_id_for(request.tenant_id, request.user_id, item.id, uuid.uuid4().hex, ledger.generation)
    job = new_job(request.tenant_id, request.user_id, item, job_id, now, "completed")
    return job.model_copy(update={"memory_version": ledger.version})


def _skipped(job: Job) -> Job:
    return job.model_copy(update={"status": "skipped", "error": FACT_EXISTS, "memory_version": None})


def _fact(item: IngestItem, now: datetime) -> Fact:
    assert item.id is not None and item.text is not None  # a fact always has text (IngestItem)
    return Fact(
        id=item.id,
        text=item.text,
        metadata=item.metadata,
        additional_metadata=item.additional_metadata,
        title=item.title,
        is_markdown=item.is_markdown,  # the text is stored as written, markdown or not
        updated_at=now,
    )


def plan_facts(request: _Request, ledger: FactLedger, now: datetime) -> list[_Planned]:
    """Each fact's entry, in item order. Items apply in order: with `upsert` the last item of an id
    is stored (the earlier ones' jobs are completed, replaced within the request); without it, the
    first is, unless the user has the fact already, and the others are skipped."""
    planned: list[_Planned] = []
    holder: dict[str, int] = {}  # fact id → the place in `planned` of the entry that stores or checks it
    for index, item in request.facts:
        assert item.id is not None
        stored = ledger.facts.get(item.id)
        earlier = holder.get(item.id)
        job = _completed(request, item, ledger, now)
        if not request.upsert and (stored is not None or earlier is not None):
            # Checked against the stored fact once; a later item of the same id follows the first.
            check = Present(stored.size) if stored is not None and earlier is None else None
            if check is not None:
                holder[item.id] = len(planned)
            skip = FactEntry(item.id, _skipped(job), expect=check)
            planned.append(_Planned(index, skip, FactCounts(), replace(skip, expect=None)))
            continue
        if earlier is not None:  # replaced within the request: only its job is written
            prior = planned[earlier]
            job_only = FactEntry(item.id, prior.entry.job)
            planned[earlier] = _Planned(prior.index, job_only, FactCounts(), job_only)
        size = item_size(item)
        change = FactCounts(1, size) if stored is None else FactCounts(0, size - stored_size(stored))
        expect = ABSENT if stored is None else Present(stored.size)
        entry = FactEntry(item.id, job, _fact(item, now), size, expect)
        superseded = FactEntry(item.id, job if request.upsert else _skipped(job))
        holder[item.id] = len(planned)
        planned.append(_Planned(index, entry, change, superseded))
    return planned


def first_commit(
    request: _Request, ledger: FactLedger, planned: Sequence[_Planned], read_all: bool
) -> FactCommit:
    """The commit of the first entries, changing the counts by the whole request; LimitExceeded
    before anything is written when the request would break a fact limit. `read_all`: the ledger
    holds every fact, read after the counts (a rebase needs it)."""
    more_follow = len(planned) > MAX_FACT_ENTRIES
    change = sum((p.change for p in planned), FactCounts())
    entries = [p.entry for p in planned[:MAX_FACT_ENTRIES]]
    commit = FactCommit(
        request.tenant_id, request.user_id, ledger.generation, entries, change, more_follow=more_follow
    )
    if ledger.counts is not None and within_limits(ledger.counts + change):
        grows = change.facts > 0 or change.bytes > 0
        return replace(commit, limits=fact_limits() if grows else None)
    # The counts are absent (a user counted for the first time, or since a delete) or above the
    # facts (an expired fact, a failed request): rebased on the facts read, unless a request may
    # still be writing facts it has counted.
    if ledger.settling:
        if ledger.counts is None:
            raise _Unsettled
        raise refuse(ledger.counts + change)
    if not read_all:
        raise _ReadAll
    counts = live_counts(ledger) + change
    if not within_limits(counts):
        raise refuse(counts)
    return replace(commit, change=counts, rebase_from=ledger.revision)


class FactWriter:
    """The fact path of an ingest (domain/ingest/service.py)."""

    def __init__(
        self, store: MemoryStore, tracing: Tracing, clock: Clock, sleep: Callable[[float], None]
    ) -> None:
        self._store = store
        self._tracing = tracing
        self._clock = clock
        self._sleep = sleep

    def write(
        self, tenant_id: str, user_id: str, facts: Sequence[tuple[int, IngestItem]], upsert: bool
    ) -> FactsWritten:
        request = _Request(tenant_id, user_id, facts, upsert)
        backoff = Backoff(self._sleep)
        # The request's own facts are read (what it decides on), not every fact the user holds.
        named: list[str] | None = [item.id for _, item in facts if item.id is not None]
        while True:
            with self._tracing.span("dynamodb.read_facts", tenant_id=tenant_id):
                ledger = self._store.read_facts(tenant_id, user_id, named)
            planned = plan_facts(request, ledger, self._clock())
            try:
                commit = first_commit(request, ledger, planned, read_all=named is None)
                with self._tracing.span("dynamodb.commit_facts", tenant_id=tenant_id):
                    self._store.commit_facts(commit)
                break
            except _ReadAll:
                named = None  # read again at once: every fact, the counts first
            except UserDeleted:
                raise
            except (ConditionFailed, _Unsettled):
                backoff.wait()
        done = planned[:MAX_FACT_ENTRIES]
        for chunk in batched(planned[MAX_FACT_ENTRIES:], MAX_FACT_ENTRIES):
            done += self._commit_later(request, ledger.generation, list(chunk), backoff)
        stored = sum(1 for p in done if p.entry.fact is not None)
        if stored:
            record_metric(MetricName.FACTS_WRITTEN, stored)
        skipped = sum(1 for p in done if p.entry.job.status == "skipped")
        if skipped:
            record_metric(MetricName.DUPLICATES_SKIPPED, skipped)
        return FactsWritten(ledger.generation, {p.index: p.entry.job for p in done}, stored)

    def check_limits(
        self, tenant_id: str, user_id: str, facts: Sequence[tuple[int, IngestItem]], upsert: bool
    ) -> None:
        """LimitExceeded if writing `facts` now would break a fact limit; nothing is written. For a
        request written in two parts (docs/api.md "Agent scopes"): the second part's limits are
        checked before the first is written. `write` checks them again as it commits."""
        if not facts:
            return
        request = _Request(tenant_id, user_id, facts, upsert)
        with self._tracing.span("dynamodb.read_facts", tenant_id=tenant_id):
            ledger = self._store.read_facts(tenant_id, user_id, None)
        # _Unsettled: another request is writing; `write` decides once it is done.
        with contextlib.suppress(_Unsettled):
            first_commit(request, ledger, plan_facts(request, ledger, self._clock()), read_all=True)

    def _commit_later(
        self, request: _Request, generation: int, chunk: list[_Planned], backoff: Backoff
    ) -> list[_Planned]:
        """A later commit of the request; an entry whose fact changed since the read is superseded."""
        given_back = FactCounts()
        while True:
            entries = [p.entry for p in chunk]
            commit = FactCommit(request.tenant_id, request.user_id, generation, entries, -given_back)
            try:
                with self._tracing.span("dynamodb.commit_facts", tenant_id=request.tenant_id):
                    self._store.commit_facts(commit)
                return chunk
            except UserDeleted:
                raise
            except ConditionFailed as failure:
                changed = [position for position in failure.failed if 0 <= position < len(chunk)]
                if not changed:
                    backoff.wait()
                for position in changed:
                    given_back += chunk[position].change
                    chunk[position] = replace(
                        chunk[position], entry=chunk[position].superseded, change=FactCounts()
                    )
