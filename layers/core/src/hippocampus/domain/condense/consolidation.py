"""The condenser's work: fold one user's queued items into that user's memory, exactly once.

Per user and batch: skip jobs already applied (the ledger) or superseded by a delete, make ONE
LLM call for the rest, and write the new version conditionally on the version read, together
with the applied-job ledger. A concurrent writer makes the write lose; we read again and retry.
No LLM call runs past the invocation's deadline less the I/O margin, and no job whose message
leaves for the DLQ is left `queued` or `processing` (docs/architecture.md "The condenser").
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from hippocampus.contracts.budgets import DailyUsage
from hippocampus.contracts.errors import ConditionFailed, ServiceError
from hippocampus.contracts.memory_state import MemoryState
from hippocampus.contracts.models import HistoryVersion, JobError, JobStatus
from hippocampus.contracts.names import (
    CONDENSATION_IO_MARGIN_S,
    DLQ_MAX_RECEIVE_COUNT,
    LLM_TIMEOUTS_PER_CONDENSATION,
    condensation_budget_s,
)
from hippocampus.contracts.ports import (
    ArchiveStore,
    EpisodeStore,
    JobStore,
    MemoryStore,
    MemoryWrite,
    Tracing,
)
from hippocampus.contracts.prompt_format import count_words
from hippocampus.contracts.recall import Episode
from hippocampus.contracts.records import DEFAULT_MAX_RECORDS, MemoryRecord, RecordOperation, RecordStore
from hippocampus.contracts.scopes import split_scope
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.condense.budget_gate import BudgetGate
from hippocampus.domain.condense.condenser import Condenser
from hippocampus.domain.condense.deadline import (
    OUT_OF_TIME,
    Deadline,
    LastReceiveGuard,
    require_time_for_a_call,
)
from hippocampus.domain.condense.episodes import DEFAULT_MAX_EPISODES, episode_of
from hippocampus.domain.condense.live_items import ItemContents, MaskedItems
from hippocampus.domain.condense.prompt import CondenseInput
from hippocampus.domain.condense.prompt_budget import DEFAULT_PROMPT_MAX_CHARS, fitting
from hippocampus.domain.condense.queued import BURST_MAX_WAIT_S, BurstWait, QueuedItem, by_user, gathered
from hippocampus.domain.condense.record_ops import (
    Burst,
    RecordChanges,
    SourceItem,
    apply_operations,
    current_records,
    records_for_prompt,
)
from hippocampus.domain.condense.record_summary import summary_from_records
from hippocampus.domain.history import HistoryArchive
from hippocampus.domain.privacy.masking import Masker
from hippocampus.observability import MetricName, logger, record_metric, record_tenant_usage

WRITE_ATTEMPTS = 3
# DynamoDB's TransactWriteItems takes at most 100 writes: the memory, each job, each episode, records.
TRANSACTION_MAX_ITEMS = 100


class CondensationFailed(ServiceError):
    code = "condensation_failed"


class Deferred(Exception):
    """Not enough time left in this invocation for one more user: SQS delivers the records again."""


@dataclass(frozen=True)
class Attempt:
    """One conditional write being prepared: the items of the chunk, their prompt inputs and
    episodes, the memory and records as read, and the records its prompt lists."""

    pending: list[QueuedItem]
    inputs: list[CondenseInput]
    episodes: list[Episode]
    state: MemoryState
    records: list[MemoryRecord]
    shown: list[MemoryRecord]  # the current records the prompt lists


@dataclass(frozen=True)
class BatchOutcome:
    """What a batch did: the failure of each message that must be retried, and each user whose
    work is done with the generation its memory was written at (None: nothing was written), so
    the indexer indexes what was committed without reading it back."""

    failures: dict[str, Exception] = field(default_factory=dict)
    condensed: dict[tuple[str, str], int | None] = field(default_factory=dict)


class ConsolidationService:
    def __init__(
        self,
        store: MemoryStore,
        jobs: JobStore,
        archive: ArchiveStore,
        condenser: Callable[[], Condenser],
        tracing: Tracing,
        *,
        episodes: EpisodeStore,
        records: RecordStore,
        max_records: int = DEFAULT_MAX_RECORDS,
        clock: Clock = utc_now,
        max_receive_count: int = DLQ_MAX_RECEIVE_COUNT,
        llm_timeout_s: float = 0.0,
        prompt_max_chars: int = DEFAULT_PROMPT_MAX_CHARS,
        max_episodes: int = DEFAULT_MAX_EPISODES,
        burst_window_s: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
        masker: Masker | None = None,
        gate: BudgetGate | None = None,
    ) -> None:
        self._gate = gate
        self._prompt_max_chars = prompt_max_chars
        self._contents = ItemContents(jobs, archive, tracing, masker)
        self._episodes = episodes
        self._records = records
        self._max_records = max_records
        self._max_episodes = max_episodes
        self._burst = BurstWait(burst_window_s, clock, sleep) if burst_window_s > 0 else None
        self._store = store
        self._jobs = jobs
        self._archive = archive
        self._history = HistoryArchive(store, archive, tracing)
        self._condenser = condenser
        self._tracing = tracing
        self._clock = clock
        self._max_receive_count = max_receive_count
        self._llm_timeout_s = llm_timeout_s
        # A user is started with time for its worst case; on its last receive, for one LLM call.
        self._user_budget_ms = condensation_budget_s(llm_timeout_s) * 1000
        self._last_chance_ms = (llm_timeout_s + CONDENSATION_IO_MARGIN_S) * 1000

    def process_batch(
        self, items: Sequence[QueuedItem], remaining_ms: Callable[[], int] | None = None
    ) -> BatchOutcome:
        """Condense a batch; return the failure of each message that must be retried, and the
        users condensed.

        Users with the most receives go first (users are independent; each keeps its order). The
        first user always runs; another starts when its worst case fits the time left, or, on its
        last receive, when one LLM call does. A deferred record on its last receive fails its job.
        """
        outcome = BatchOutcome()
        groups = sorted(by_user(items), key=lambda group: -max(item.receive_count for item in group))
        last = {
            item.message_id: (item.message.tenant_id, item.message.job_id)
            for item in items
            if self._is_last(item)
        }
        guard = LastReceiveGuard(self._jobs, last, remaining_ms)
        try:
            for index, group in enumerate(groups):
                if index and not self._may_start(group, remaining_ms):
                    self._defer(group)
                    outcome.failures.update({item.message_id: Deferred() for item in group})
                else:
                    try:
                        written = self.process_user(group, self._deadline(remaining_ms))
                    except Exception as error:
                        outcome.failures.update({item.message_id: error for item in group})
                    else:
                        outcome.condensed[group[0].message.tenant_id, group[0].message.user_id] = written
                guard.settled(item.message_id for item in group)
        finally:
            guard.cancel()
        return outcome

    def _is_last(self, item: QueuedItem) -> bool:
        """The last receive: if this attempt does not settle the job, SQS moves the message to the DLQ."""
        return item.receive_count >= self._max_receive_count

    def _may_start(self, group: Sequence[QueuedItem], remaining_ms: Callable[[], int] | None) -> bool:
        if remaining_ms is None:
            return True
        left_ms = remaining_ms()
        if left_ms >= self._user_budget_ms:
            return True
        # Deferred, it would fail: its LLM calls are capped by the deadline, so it may run short.
        return any(self._is_last(item) for item in group) and left_ms >= self._last_chance_ms

    def _defer(self, group: Sequence[QueuedItem]) -> None:
        logger.info("deferring a user to the next delivery", extra={"records": len(group)})
        last = [item.message.job_id for item in group if self._is_last(item)]
        if last:  # their messages move to the DLQ: the jobs must not stay open
            self._jobs.set_job_status(group[0].message.tenant_id, last, "failed", OUT_OF_TIME)

    def _deadline(self, remaining_ms: Callable[[], int] | None) -> Deadline | None:
        """What the LLM calls may use: the time left, less the margin for the write and job updates."""
        if remaining_ms is None:
            return None
        return Deadline(lambda: remaining_ms() / 1000 - CONDENSATION_IO_MARGIN_S, self._llm_timeout_s)

    def process_user(self, items: Sequence[QueuedItem], deadline: Deadline | None = None) -> int | None:
        """Condense one user's items; return the generation its memory was written at (None:
        nothing was written, every item already applied or superseded)."""
        first = items[0].message
        # Every log line of this user's work carries its tenant and job ids (correlation ids).
        logger.append_keys(tenant_id=first.tenant_id, job_ids=[item.message.job_id for item in items])
        try:
            with (
                self._tracing.continue_from(items[0].trace_header),
                self._tracing.span("condense.user", tenant_id=first.tenant_id, job_id=first.job_id),
            ):
                pending = self._unapplied(items)
                pending += gathered(self._jobs, pending, self._burst, self._may_wait_s(deadline))
                try:
                    return self._condense(pending, deadline)
                except Exception as error:
                    self._report_failure(pending, error)
                    raise
        finally:
            logger.remove_keys(["tenant_id", "job_ids"])

    def _may_wait_s(self, deadline: Deadline | None) -> float:
        """What waiting for a burst may take: the time left beyond the user's worst case of LLM calls."""
        if deadline is None:
            return BURST_MAX_WAIT_S
        return deadline.seconds_left() - LLM_TIMEOUTS_PER_CONDENSATION * self._llm_timeout_s

    def _unapplied(self, items: Sequence[QueuedItem]) -> list[QueuedItem]:
        """Drop redeliveries of jobs already applied or settled (the ledger), without an LLM call.

        One batch read of the jobs for the whole group."""
        tenant_id = items[0].message.tenant_id
        jobs = self._jobs.get_jobs(tenant_id, [item.message.job_id for item in items])
        pending: list[QueuedItem] = []
        seen: set[str] = set()
        for item in items:
            job_id = item.message.job_id
            job = jobs.get(job_id)
            # The same job twice in one batch (sent again, or redriven) is applied once.
            if job_id in seen or job is None or job.status in {"completed", "skipped"}:
                record_metric(MetricName.DUPLICATES_SKIPPED)
                continue
            seen.add(job_id)
            pending.append(item)
        return pending

    def _condense(self, pending: list[QueuedItem], deadline: Deadline | None) -> int | None:
        lost = 0  # conditional writes lost in a row
        written: int | None = None  # the generation of the last write that won
        masked = MaskedItems()  # each item masked once, however many passes it takes
        while pending:
            tenant_id, user_id = pending[0].message.tenant_id, pending[0].message.user_id
            state, _ = self._store.read_memory(tenant_id, user_id, with_facts=False)
            records = self._records.records(tenant_id, user_id, state.generation)
            live = self._contents.live(pending, state, masked)
            if not live:
                break
            # Oldest first by when they happened (docs/architecture.md "Condensation"): a backfill
            # of older turns arriving after newer ones still reads in its own order.
            live.sort(key=lambda entry: entry.occurred_at)
            from_ledger: frozenset[str] = frozenset()
            if self._gate is not None:  # a tenant over its token budget: the turns are parked
                try:
                    admitted = self._gate.admitted(live, state.generation)
                except ConditionFailed:  # a delete since: the next read skips the user's items
                    lost += 1
                    if lost >= WRITE_ATTEMPTS:
                        raise CondensationFailed(
                            "the user kept changing while its turns were parked"
                        ) from None
                    pending = self._unapplied(pending)
                    continue
                live, from_ledger = admitted.live, admitted.from_ledger
                if not live:
                    break
            pending = [entry.queued for entry in live]
            inputs = [
                CondenseInput.from_item(entry.content, entry.queued.message.item_id, entry.occurred_at)
                for entry in live
            ]
            episodes = [episode_of(entry.queued.message, entry.content) for entry in live]
            # As many of the oldest items as one prompt holds; the rest go in the next call.
            # The records the prompt lists count in its size as much as the items do.
            shown = records_for_prompt(current_records(records), inputs)
            render = partial(self._condenser().build_prompt, state.memory, records=shown)
            count, cut = fitting(inputs, render, self._prompt_max_chars)
            chunk, inputs = pending[:count], [cut] if cut else inputs[:count]
            # Checked before `processing`, so a job is never marked so with no time left to finish.
            require_time_for_a_call(deadline)
            self._jobs.set_job_status(tenant_id, [item.message.job_id for item in chunk], "processing")
            if self._apply(Attempt(chunk, inputs, episodes[:count], state, records, shown), deadline):
                self._contents.completed(chunk)
                if self._gate is not None:
                    self._gate.condensed(chunk, from_ledger)
                pending, lost, written = pending[count:], 0, state.generation
                if state.episode_count + count > self._max_episodes:
                    self._trim_episodes(tenant_id, user_id)
                if len(records) + 2 * len(chunk) > self._max_records:
                    self._trim_records(tenant_id, user_id, state.generation)
                continue
            lost += 1
            if lost >= WRITE_ATTEMPTS:
                raise CondensationFailed("the memory kept changing during condensation; it will be retried")
            # Another writer won: the items it applied drop out, the rest are condensed again.
            record_metric(MetricName.VERSION_CONFLICTS)
            pending = self._unapplied(pending)
        return written

    def _apply(self, attempt: Attempt, deadline: Deadline | None) -> bool:
        """One LLM call, one conditional write; False when another writer got there first."""
        pending, state = attempt.pending, attempt.state
        tenant_id, user_id = pending[0].message.tenant_id, pending[0].message.user_id
        job_ids = [item.message.job_id for item in pending]
        current = current_records(attempt.records)
        started = time.perf_counter()
        with self._tracing.span("llm.condense", tenant_id=tenant_id, job_id=job_ids[0]):
            outcome = self._condenser().condense(state.memory, attempt.inputs, deadline, attempt.shown)
        record_metric(MetricName.LLM_LATENCY_MS, (time.perf_counter() - started) * 1000)
        record_metric(MetricName.PROMPT_TOKENS, outcome.prompt_tokens)
        record_metric(MetricName.COMPLETION_TOKENS, outcome.completion_tokens)
        record_tenant_usage(tenant_id, outcome.llm_calls, outcome.prompt_tokens, outcome.completion_tokens)
        if self._gate is not None:
            self._gate.used(
                tenant_id, DailyUsage(outcome.llm_calls, outcome.prompt_tokens, outcome.completion_tokens)
            )
        if outcome.budget_cut:
            record_metric(MetricName.BUDGET_CUTS)
        if outcome.schema_retried:
            record_metric(MetricName.ANSWER_SCHEMA_RETRIES)
        now = self._clock()
        changes = self._record_changes(attempt, current, outcome.operations, now)
        memory = outcome.memory
        if memory is None and changes.changed:
            # Records learned with no summary written: the summary is made of them.
            memory = summary_from_records(_after(current, changes), self._condenser().max_words)
        if (not outcome.changed and not changes.changed) or memory is None:
            # Nothing worth keeping: the current version stays; the turns become episodes and their
            # jobs `completed` in one transaction (a delete since wins: they are condensed again).
            try:
                self._episodes.put_episodes(
                    tenant_id, user_id, state.generation, attempt.episodes, state.version
                )
            except ConditionFailed:
                return False
            record_metric(MetricName.CONDENSATIONS_OK)
            return True
        write = MemoryWrite(
            tenant_id,
            user_id,
            state.last_version,
            state.generation,
            memory,
            count_words(memory),
            now,
            job_ids,
            attempt.episodes,
            [*changes.writes],
        )
        try:
            with self._tracing.span("dynamodb.write_memory", tenant_id=tenant_id, job_id=job_ids[0]):
                self._store.write_memory(write)
        except ConditionFailed:
            return False
        record_metric(MetricName.RECORD_OPERATIONS_APPLIED, changes.applied)
        entry = HistoryVersion(
            version=write.expected_version + 1,
            memory=memory,
            updated_at=now,
            job_ids=job_ids,
            occurred_at=max(episode.occurred_at for episode in attempt.episodes),
        )
        self._history.record(tenant_id, user_id, state.generation, entry)
        record_metric(MetricName.CONDENSATIONS_OK)
        record_metric(MetricName.SUMMARY_WORDS, write.word_count)
        logger.info(
            "memory condensed",
            extra={
                "version": entry.version,
                "llm_calls": outcome.llm_calls,
                "record_writes": len(changes.writes),
            },
        )
        return True

    def _record_changes(
        self,
        attempt: Attempt,
        current: list[MemoryRecord],
        operations: Sequence[RecordOperation],
        now: datetime,
    ) -> RecordChanges:
        """The answer's operations checked against the current records and the burst's items; what
        is dropped is counted, never applied half (domain/condense/record_ops.py)."""
        sources = [
            SourceItem(episode.id, episode.occurred_at, episode.job_id) for episode in attempt.episodes
        ]
        room = TRANSACTION_MAX_ITEMS - 1 - len(attempt.pending) - len(attempt.episodes)
        agent_id = split_scope(attempt.pending[0].message.user_id)[1]
        changes = apply_operations(operations, Burst(current, sources, now, room, agent_id))
        if changes.dropped:
            record_metric(MetricName.RECORD_OPERATIONS_DROPPED, changes.dropped)
            logger.info("record operations dropped", extra={"dropped": changes.dropped})
        return changes

    def _trim_records(self, tenant_id: str, user_id: str, generation: int) -> None:
        # Best effort, like the episodes: a record over the cap until the next condensation harms nothing.
        try:
            trimmed = self._records.trim_records(tenant_id, user_id, generation, self._max_records)
        except Exception:
            logger.exception("could not trim the user's records")
            return
        if trimmed:
            record_metric(MetricName.RECORDS_TRIMMED, trimmed)

    def _trim_episodes(self, tenant_id: str, user_id: str) -> None:
        # Best effort: an episode over the cap until the next condensation harms nothing.
        try:
            self._episodes.trim_episodes(tenant_id, user_id, self._max_episodes)
        except Exception:
            logger.exception("could not trim the user's episodes")

    def _report_failure(self, pending: Sequence[QueuedItem], error: Exception) -> None:
        record_metric(MetricName.CONDENSATIONS_FAILED)
        # A service error's message is ours (never content); any other names only the exception type.
        if isinstance(error, ServiceError):
            failure = JobError(code=error.code, message=str(error))
        else:
            failure = JobError(
                code="llm_or_dependency_error", message=f"{type(error).__name__}: condensation failed"
            )
        for item in pending:
            # Until the last attempt the job stays queued (with the error) for SQS to redeliver.
            status: JobStatus = "failed" if self._is_last(item) else "queued"
            self._jobs.set_job_status(item.message.tenant_id, [item.message.job_id], status, failure)
        logger.warning("condensation failed", extra={"error_type": type(error).__name__})


def _after(current: list[MemoryRecord], changes: RecordChanges) -> list[MemoryRecord]:
    """The current records once `changes` are applied."""
    changed = {write.record.id: write.record for write in changes.writes}
    kept = [changed.get(record.id, record) for record in current]
    added = [record for record_id, record in changed.items() if record_id not in {r.id for r in current}]
    return [record for record in [*kept, *added] if record.is_current]
