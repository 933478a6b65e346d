"""The lists of a user's facts, episodes and jobs (GET …/memory/facts, …/episodes, …/jobs), newest
first, and of a tenant's users (GET /v1/tenants/{tenant_id}/users), by id.

A cursor is the position of the last entry given (docs/api.md "Lists"): entries written between
pages never repeat one already given.
"""

from datetime import datetime

from hippocampus.contracts.models import EpisodePlace, Fact, JobList, ListedUser, UserList
from hippocampus.contracts.ports import EpisodeStore, JobStore, MemoryStore, Tracing
from hippocampus.contracts.recall import EpisodeList, FactList
from hippocampus.domain.reads.cursors import decode_position, encode_position, invalid_cursor


def _fact_order(fact: Fact) -> tuple[float, str]:
    return (-fact.updated_at.timestamp(), fact.id)


class ListService:
    def __init__(self, store: MemoryStore, episodes: EpisodeStore, jobs: JobStore, tracing: Tracing) -> None:
        self._store = store
        self._episodes = episodes
        self._jobs = jobs
        self._tracing = tracing

    def list_users(self, tenant_id: str, limit: int, cursor: str | None) -> UserList:
        after = decode_position(cursor, (str,))[0] if cursor is not None else None
        with self._tracing.span("dynamodb.list_users", tenant_id=tenant_id):
            user_ids, more = self._store.list_users(tenant_id, limit, after)
        next_cursor = encode_position([user_ids[-1]]) if more and user_ids else None
        return UserList(items=[ListedUser(user_id=user_id) for user_id in user_ids], next_cursor=next_cursor)

    def list_jobs(self, tenant_id: str, user_id: str, limit: int, cursor: str | None) -> JobList:
        before = decode_position(cursor, (str,))[0] if cursor is not None else None
        with self._tracing.span("dynamodb.list_jobs", tenant_id=tenant_id):
            jobs, position = self._jobs.list_jobs(tenant_id, user_id, limit, before)
        next_cursor = encode_position([position]) if position is not None else None
        return JobList(items=jobs, next_cursor=next_cursor)

    def list_facts(self, tenant_id: str, user_id: str, limit: int, cursor: str | None) -> FactList:
        after = decode_position(cursor, (str, str)) if cursor is not None else None
        with self._tracing.span("dynamodb.read_memory", tenant_id=tenant_id):
            _, facts = self._store.read_memory(tenant_id, user_id, with_facts=True)
        ordered = sorted(facts, key=_fact_order)
        if after is not None:
            position = (-_instant(after[0]).timestamp(), after[1])
            ordered = [fact for fact in ordered if _fact_order(fact) > position]
        page = ordered[:limit]
        more = len(ordered) > limit
        next_cursor = encode_position([page[-1].updated_at.isoformat(), page[-1].id]) if more else None
        return FactList(facts=page, next_cursor=next_cursor)

    def list_episodes(self, tenant_id: str, user_id: str, limit: int, cursor: str | None) -> EpisodeList:
        after = _episode_place(cursor) if cursor is not None else None
        with self._tracing.span("dynamodb.list_episodes", tenant_id=tenant_id):
            generation = self._store.read_generation(tenant_id, user_id)
            page, more = self._episodes.list_episodes(tenant_id, user_id, generation, limit, after)
        next_cursor = None
        if more and page:
            last = page[-1]
            place = last.place
            next_cursor = encode_position(
                [place.occurred_at.isoformat(), place.created_at.isoformat(), place.position, place.job_id]
            )
        return EpisodeList(episodes=page, next_cursor=next_cursor)


def _episode_place(cursor: str) -> EpisodePlace:
    """The place of the last episode a cursor's page gave."""
    occurred_at, created_at, position, job_id = decode_position(cursor, (str, str, int, str))
    return EpisodePlace(_instant(occurred_at), _instant(created_at), position, job_id)


def _instant(value: str) -> datetime:
    try:
        instant = datetime.fromisoformat(value)
    except ValueError:
        raise invalid_cursor() from None
    if instant.tzinfo is None:  # every time this service writes is UTC, with its offset
        raise invalid_cursor()
    return instant
