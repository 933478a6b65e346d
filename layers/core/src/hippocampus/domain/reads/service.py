"""The read path (get_memory function): the memory body, its history and one job."""

from dataclasses import dataclass

from hippocampus.contracts.errors import NotFound
from hippocampus.contracts.memory_state import MemoryState
from hippocampus.contracts.models import (
    AgentMemoryBody,
    Fact,
    HistoryResponse,
    Job,
    MemoryBody,
    MemoryScopes,
)
from hippocampus.contracts.ports import ArchiveStore, JobStore, MemoryStore, Tracing
from hippocampus.contracts.scopes import agent_scope, user_of
from hippocampus.observability import MetricName, record_metric


def memory_body(tenant_id: str, user_id: str, state: MemoryState, facts: list[Fact]) -> MemoryBody:
    return MemoryBody(
        tenant_id=tenant_id,
        user_id=user_id,
        memory=state.memory,
        version=state.version,
        word_count=state.word_count,
        updated_at=state.updated_at,
        facts=facts,
    )


@dataclass(frozen=True)
class MemoryRead:
    """A memory body and the generation it belongs to: its ETag names both, so no tag of the memory
    before a delete is the tag of one after it (docs/api.md "Headers")."""

    body: MemoryBody
    generation: int


@dataclass(frozen=True)
class AgentMemoryRead:
    """An agent's memory read: the user's shared memory and the agent's private one."""

    shared: MemoryRead
    agent: MemoryRead

    @property
    def body(self) -> AgentMemoryBody:
        agent = self.agent.body
        assert agent.agent_id is not None
        return AgentMemoryBody(
            tenant_id=agent.tenant_id,
            user_id=agent.user_id,
            agent_id=agent.agent_id,
            scopes=MemoryScopes(shared=self.shared.body, agent=agent),
        )


class ReadService:
    """One key lookup (a single-partition query) per memory read."""

    def __init__(self, store: MemoryStore, jobs: JobStore, archive: ArchiveStore, tracing: Tracing) -> None:
        self._store = store
        self._jobs = jobs
        self._archive = archive
        self._tracing = tracing

    def get_memory(self, tenant_id: str, user_id: str) -> MemoryBody:
        return self.read_memory(tenant_id, user_id).body

    def read_memory(self, tenant_id: str, user_id: str) -> MemoryRead:
        with self._tracing.span("dynamodb.read_memory", tenant_id=tenant_id):
            state, facts = self._store.read_memory(tenant_id, user_id, with_facts=True)
        record_metric(MetricName.MEMORY_READS)
        if state.memory is None and not facts:
            record_metric(MetricName.MEMORY_MISSES)
        return MemoryRead(memory_body(tenant_id, user_id, state, facts), state.generation)

    def read_agent_memory(self, tenant_id: str, user_id: str, agent_id: str) -> AgentMemoryRead:
        """Two key lookups: the user's shared memory, then the agent's (docs/api.md "Agent scopes")."""
        shared = self.read_memory(tenant_id, user_id)
        return AgentMemoryRead(shared, self.read_memory(tenant_id, agent_scope(user_id, agent_id)))

    def get_history(self, tenant_id: str, user_id: str, limit: int) -> HistoryResponse:
        with self._tracing.span("dynamodb.read_generation", tenant_id=tenant_id):
            generation = self._store.read_generation(tenant_id, user_id)
        with self._tracing.span("s3.list_history", tenant_id=tenant_id):
            versions = self._archive.list_history(tenant_id, user_id, generation, limit)
        return HistoryResponse(versions=versions)

    def get_scoped_job(self, tenant_id: str, user_id: str, job_id: str) -> Job:
        """One job of an agent's scope (`user_id` its scope key), or of its user's shared memory
        (an item the agent shared); 404 for any other, another agent's included."""
        job = self.get_job(tenant_id, job_id)
        if job.scope_key not in {user_id, user_of(user_id)}:
            raise NotFound(f"job '{job_id}' was not found for this agent")
        return job

    def get_job(self, tenant_id: str, job_id: str) -> Job:
        with self._tracing.span("dynamodb.get_job", tenant_id=tenant_id, job_id=job_id):
            job = self._jobs.get_job(tenant_id, job_id)
        if job is None:
            raise NotFound(f"job '{job_id}' was not found for tenant '{tenant_id}'")
        return job
