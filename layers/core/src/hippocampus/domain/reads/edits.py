"""Edits by hand: replace the summary (PUT), forget the user (DELETE, with its deletion receipt),
delete one fact."""

import time
from collections.abc import Callable

from hippocampus.contracts.budgets import DeferralStore
from hippocampus.contracts.errors import (
    ConditionFailed,
    LimitExceeded,
    NotFound,
    ValidationFailed,
    VersionConflict,
)
from hippocampus.contracts.fact_ports import FactCounts, FactRemoval, Present
from hippocampus.contracts.memory_state import MemoryState
from hippocampus.contracts.models import HistoryVersion
from hippocampus.contracts.ports import ArchiveStore, JobStore, MemoryStore, MemoryWrite, Tracing
from hippocampus.contracts.prompt_format import count_words
from hippocampus.contracts.receipts import (
    ArchiveErasure,
    DeletionReceipt,
    DeletionScope,
    DynamoDbErased,
    ErasedCounts,
    JobErasure,
    MemoryErasure,
    QueueErased,
    ReceiptStore,
    S3Erased,
    VectorsErased,
)
from hippocampus.contracts.scopes import AgentRegistry, agent_scope, split_scope
from hippocampus.domain.budget import max_memory_chars
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.history import HistoryArchive
from hippocampus.domain.ingest.fact_rules import stored_size
from hippocampus.domain.ingest.fact_writes import Backoff
from hippocampus.domain.privacy.masking import Masker, UserScope
from hippocampus.domain.reads.receipts import Deletion, issue_receipt
from hippocampus.domain.reads.service import MemoryRead, memory_body
from hippocampus.domain.scopes import agent_listed
from hippocampus.observability import MetricName, record_metric


class EditService:
    def __init__(
        self,
        store: MemoryStore,
        jobs: JobStore,
        archive: ArchiveStore,
        tracing: Tracing,
        max_words: int,
        receipts: ReceiptStore,
        clock: Clock = utc_now,
        sleep: Callable[[float], None] = time.sleep,
        masker: Masker | None = None,
        deferrals: DeferralStore | None = None,
        agents: AgentRegistry | None = None,
    ) -> None:
        self._store = store
        self._agents = agents
        self._masker = masker
        self._deferrals = deferrals
        self._receipts = receipts
        self._sleep = sleep
        self._jobs = jobs
        self._archive = archive
        self._history = HistoryArchive(store, archive, tracing)
        self._tracing = tracing
        self._max_words = max_words
        self._clock = clock

    def put_memory(
        self, tenant_id: str, user_id: str, memory: str, expected_version: int | None
    ) -> MemoryRead:
        """Replace the summary if it is at `expected_version`, as the caller read it. A version read
        before a delete is never current after it: versions go on after the old life's last one."""
        if expected_version is None:
            raise ValidationFailed(
                "expected_version is required (in the body, or as an If-Match header)",
                [{"field": "expected_version", "message": "field required", "type": "missing"}],
            )
        text = memory.strip()
        self._check_budget(text)
        with agent_listed(self._agents, tenant_id, user_id):
            return self._put_memory(tenant_id, user_id, text, expected_version)

    def _put_memory(self, tenant_id: str, user_id: str, text: str, expected_version: int) -> MemoryRead:
        with self._tracing.span("dynamodb.read_memory", tenant_id=tenant_id):
            state, facts = self._store.read_memory(tenant_id, user_id, with_facts=True)
        if state.version != expected_version:
            raise VersionConflict(f"memory is at version {state.version}, not {expected_version}")
        now = self._clock()
        try:
            if (
                self._masker is not None
            ):  # the next condensation's prompt shows it (docs/architecture.md "PII masking")
                text = self._masker.mask_texts(UserScope(tenant_id, user_id, state.generation), [text])[0]
                # A placeholder may be longer than its value: what is stored keeps the budget too.
                self._check_budget(text, " once its personal data is masked")
            words = count_words(text)
            write = MemoryWrite(tenant_id, user_id, state.last_version, state.generation, text, words, now)
            with self._tracing.span("dynamodb.write_memory", tenant_id=tenant_id):
                self._store.write_memory(write)
        except ConditionFailed as error:
            record_metric(MetricName.VERSION_CONFLICTS)
            raise VersionConflict("memory changed while it was being replaced; read it again") from error
        version = state.last_version + 1
        entry = HistoryVersion(version=version, memory=text, updated_at=now, job_ids=[])
        self._history.record(tenant_id, user_id, state.generation, entry)
        new_state = MemoryState(text, version, words, now, state.generation)
        return MemoryRead(memory_body(tenant_id, user_id, new_state, facts), state.generation)

    def _check_budget(self, text: str, masked: str = "") -> None:
        """The summary's word budget and its character bound (docs/api.md "Replace the summary")."""
        words = count_words(text)
        if words > self._max_words:
            raise LimitExceeded(
                f"memory has {words} words{masked}; the limit is {self._max_words}",
                [{"field": "memory", "message": f"at most {self._max_words} words", "type": "limit"}],
            )
        max_chars = max_memory_chars(self._max_words)
        if len(text) > max_chars:
            raise LimitExceeded(
                f"memory has {len(text)} characters{masked}; the limit is {max_chars}",
                [{"field": "memory", "message": f"at most {max_chars} characters", "type": "limit"}],
            )

    def delete_memory(self, tenant_id: str, user_id: str) -> DeletionReceipt:
        """Forget a user, every agent's scope of it with it; or (`user_id` an agent's scope key:
        contracts/scopes.py) that agent's scope alone. Then the receipt of what went (docs/api.md
        "Deletion receipts"). A delete that fails half-way is safe to send again: the next one
        erases the rest, and its receipt counts what it erased."""
        requested_at = self._clock()
        user, agent_id = split_scope(user_id)
        # A listing renewed after the delete read it (a write that came after) stays for the next
        # delete (contracts/scopes.py, domain/ingest/service.py).
        if agent_id is None:
            generation, counts = self._erase_scope(tenant_id, user_id)
            # Read after the user's tombstone: every agent's write that began before it is listed.
            listed = self._agents.listed(tenant_id, user) if self._agents is not None else {}
            for agent in listed:
                counts = counts.plus(self._erase_scope(tenant_id, agent_scope(user, agent))[1])
            counts.dynamodb.agent_scopes = len(listed)
        else:
            # Read before the agent's tombstone.
            everyone = self._agents.listed(tenant_id, user) if self._agents is not None else {}
            listed = {agent_id: everyone[agent_id]} if agent_id in everyone else {}
            generation, counts = self._erase_scope(tenant_id, user_id)
        if self._agents is not None and listed:
            self._agents.unregister(tenant_id, user, listed)
        record_metric(MetricName.DELETES)
        scope: DeletionScope = "user" if agent_id is None else "agent"
        deletion = Deletion(tenant_id, user_id, scope, None, generation, requested_at)
        with self._tracing.span("dynamodb.put_receipt", tenant_id=tenant_id):
            return issue_receipt(self._receipts, deletion, counts, self._clock())

    def _erase_scope(self, tenant_id: str, user_id: str) -> tuple[int, ErasedCounts]:
        """The tombstone first (every queued item of the old generation is then skipped), then the
        jobs and request records, then S3; the new generation and what went."""
        with self._tracing.span("dynamodb.erase_user", tenant_id=tenant_id):
            memory = self._store.erase_user(tenant_id, user_id)
        with self._tracing.span("dynamodb.erase_jobs", tenant_id=tenant_id):
            jobs = self._jobs.erase_user(tenant_id, user_id, memory.generation)
        with self._tracing.span("s3.erase_user", tenant_id=tenant_id):
            archive = self._archive.erase_user(tenant_id, user_id, memory.generation)
        parked = 0
        if self._deferrals is not None:  # turns parked by the token budget: their jobs went above
            with self._tracing.span("dynamodb.erase_deferred", tenant_id=tenant_id):
                parked = self._deferrals.erase_user(tenant_id, user_id, memory.generation)
        return memory.generation, erased_counts(memory, jobs, archive, parked)

    def delete_fact(self, tenant_id: str, user_id: str, fact_id: str) -> DeletionReceipt:
        """Delete the fact and take it off the user's fact counts in one transaction; decided again
        on a new read when a concurrent writer changed it meanwhile (domain/ingest/fact_writes.py).
        Then its receipt (docs/api.md "Deletion receipts")."""
        requested_at = self._clock()
        backoff = Backoff(self._sleep)
        while True:
            with self._tracing.span("dynamodb.read_facts", tenant_id=tenant_id):
                ledger = self._store.read_facts(tenant_id, user_id, [fact_id])
            stored = ledger.facts.get(fact_id)
            if stored is None:
                raise NotFound(f"fact '{fact_id}' was not found")
            counts = FactCounts(1, stored_size(stored)) if ledger.counts is not None else None
            removal = FactRemoval(
                tenant_id, user_id, ledger.generation, fact_id, Present(stored.size), counts
            )
            try:
                with self._tracing.span("dynamodb.remove_fact", tenant_id=tenant_id):
                    self._store.remove_fact(removal)
                break
            except ConditionFailed:
                backoff.wait()
        deletion = Deletion(tenant_id, user_id, "fact", fact_id, ledger.generation, requested_at)
        erased = ErasedCounts(
            dynamodb=DynamoDbErased(facts=1), vectors=VectorsErased(facts=int(stored.has_vector))
        )
        with self._tracing.span("dynamodb.put_receipt", tenant_id=tenant_id):
            return issue_receipt(self._receipts, deletion, erased, self._clock())


def erased_counts(
    memory: MemoryErasure, jobs: JobErasure, archive: ArchiveErasure, deferred_turns: int = 0
) -> ErasedCounts:
    return ErasedCounts(
        dynamodb=DynamoDbErased(
            memory=memory.summary,
            facts=memory.facts,
            episodes=memory.episodes,
            records=memory.records,
            jobs=jobs.jobs,
            job_references=jobs.job_references,
            idempotency_records=jobs.idempotency_records,
            pii_placeholders=memory.placeholders,
        ),
        s3=S3Erased(
            raw_objects=archive.raw_objects,
            history_objects=archive.history_objects,
            episode_copies=archive.episode_copies,
        ),
        queue=QueueErased(messages_skipped=jobs.skipped, deferred_turns=deferred_turns),
        vectors=memory.vectors,
    )
