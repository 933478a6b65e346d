"""RecallStore on the DynamoDB table: a user's facts, current records and episodes with their vectors.

A query reads the memory item, the facts and the records, and the episodes the function's copy of
the user's episodes lacks, in one Query from the highest sort key down (they sort `EPISODE#…` <
`FACT#…` < `MEMORY` < `RECORD#…`): from the episode the copy needs next, through the records
(adapters/episode_cache.py; docs/architecture.md "Recall"). A function without a copy of the user
starts from the stored one the condenser keeps (`keep_copy`, adapters/episode_snapshots.py); without
either, it reads the facts, the memory item and the records from `FACT#` on, then all the episodes.
Vectors live on the items themselves (adapters/vector_codec.py).
"""

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from functools import partial
from typing import Any, Final

from botocore.exceptions import ClientError

from hippocampus.adapters.dynamodb_items import (
    Item,
    current,
    decoded_all,
    generation_of,
    is_expired,
    with_prefix,
)
from hippocampus.adapters.dynamodb_memory import DynamoMemoryStore, fact_of
from hippocampus.adapters.dynamodb_records import record_of
from hippocampus.adapters.dynamodb_table import (
    EPISODE_PREFIX,
    EPISODES_REVISION,
    FACT_PREFIX,
    MEMORY_SK,
    RECORD_PREFIX,
    Table,
    is_condition_failure,
    key,
    user_pk,
    values,
)
from hippocampus.adapters.episode_cache import (
    CachedEpisode,
    EpisodeCache,
    UserEpisodes,
    cached_episode,
)
from hippocampus.adapters.episode_snapshots import EpisodeSnapshots
from hippocampus.adapters.vector_codec import (
    HALF_FLOAT_VECTOR_ATTRIBUTE,
    VECTOR_ATTRIBUTE,
    VECTOR_MODEL_ATTRIBUTE,
    pack,
    stored_vector,
)
from hippocampus.contracts.memory_state import MemoryState
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.recall_ports import Corpus, Indexed, Unindexed, Vector
from hippocampus.observability import MetricName, logger, record_metric


class DynamoRecallStore:
    def __init__(
        self,
        table: Table,
        memory: DynamoMemoryStore,
        cache: EpisodeCache,
        snapshots: EpisodeSnapshots,
    ) -> None:
        self._table = table
        self._memory = memory
        self._cache = cache
        self._snapshots = snapshots
        # Reads the stored copy of a user while the table is read (one at a time: one request).
        self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stored-copy")

    def _partition_head(self, items: list[Item]) -> tuple[MemoryState, list[Item], list[Item]]:
        """The memory's state, its current facts and its current records (not invalidated), among
        the items of a Query from `FACT#` on (or from an episode on: the episodes are left out)."""
        state = self._memory.memory_state(next((item for item in items if item[SK] == MEMORY_SK), None))
        epoch = self._table.epoch()
        facts = current(with_prefix(items, FACT_PREFIX), state.generation, epoch)
        records = current(with_prefix(items, RECORD_PREFIX), state.generation, epoch)
        return state, facts, [item for item in records if item.get("invalidated_at") is None]

    def corpus(self, tenant_id: str, user_id: str, model: str | None) -> Corpus:
        pk = user_pk(tenant_id, user_id)
        user = (tenant_id, user_id)
        # A user this function holds no copy of: its stored copy is read beside the Query below (S3
        # answers while DynamoDB does), and checked against the memory item that Query reads; in a
        # function without an S3 client yet, only for a user with enough episodes to be worth making
        # it for (~35 ms of a cold start), once the memory item has told how many.
        stored = self._stored_copy_reading(user) if self._snapshots.ready else None
        # A user this function ranked before: the memory item, the facts and the records, then the
        # episodes since its copy, in one Query read from the highest sort key down (the episodes
        # sort first). Otherwise the memory item first (with the facts and records), then the
        # episodes since the stored copy, or all of them. Read in this order, the episode count on
        # the memory item is never newer than the episodes found: a write committed between the two
        # reads shows as episodes the count does not account for, and the copy reads them whole
        # (adapters/episode_cache.py).
        start = self._cache.next_read(user, model)
        try:
            items = decoded_all(
                self._table.query_partition(pk, sk_from=start or FACT_PREFIX, highest_first=start is not None)
            )
        except BaseException:
            if stored is not None:
                stored.cancel()  # or, already running, let it end: its result is not needed
            raise
        state, facts, records = self._partition_head(items)
        found = [item for item in items if item[SK].startswith(EPISODE_PREFIX)]
        if stored is None and state.episode_count >= COPY_WORTH_READING:
            stored = self._stored_copy_reading(user)
        if stored is not None:
            self._adopt(user, stored.result)

        def read(since: str | None) -> list[tuple[str, CachedEpisode]]:
            if since is not None and since == start:
                return _of_generation(found, state.generation, self._table.epoch())
            return self._live_episodes(pk, state.generation, since)

        episodes = self._cache.episodes(user, state, model, read)
        return Corpus(
            state=state,
            facts=[Indexed(fact_of(item), stored_vector(item)) for item in facts],
            episodes=episodes.current(self._table.epoch()),
            records=[Indexed(record_of(item), stored_vector(item)) for item in records],
        )

    def keep_copy(self, tenant_id: str, user_id: str, model: str | None) -> None:
        """Bring the stored copy of the user's episodes up to date (adapters/episode_snapshots.py)."""
        user = (tenant_id, user_id)
        pk = user_pk(tenant_id, user_id)
        if not self._cache.holds(user):
            self._adopt(user, partial(self._snapshots.load, *user))
        state, _ = self._memory.read_memory(tenant_id, user_id, with_facts=False)  # before the episodes
        copy = self._cache.episodes(
            user, state, model, lambda since: self._live_episodes(pk, state.generation, since)
        )
        if not copy.changed:
            return
        try:
            raced = self._snapshots.store(tenant_id, user_id, copy, model) and self._raced(user, copy)
        except Exception:
            # Perhaps stored, and not checked: no copy rather than one a delete or a forget missed.
            try:
                self._drop_copy(user)
            except Exception as error:  # the failure to report is the first one
                logger.warning(
                    "stored copy of the episodes not dropped", extra={"error_type": type(error).__name__}
                )
            raise
        if raced:
            self._drop_copy(user)
        else:
            copy.mark_stored()

    def _raced(self, user: tuple[str, str], copy: UserEpisodes) -> bool:
        """Whether a delete or a forget committed while the copy was made: what it erased may be in
        the copy just stored, after the erase's own sweep (the summary history's rule, docs/
        architecture.md "Deletion wins")."""
        after, _ = self._memory.read_memory(*user, with_facts=False)
        return (after.generation, after.episodes_revision) != (copy.generation, copy.revision)

    def _drop_copy(self, user: tuple[str, str]) -> None:
        self._cache.forget(user)
        self._snapshots.delete(*user)

    def revise_episodes(self, tenant_id: str, user_id: str) -> None:
        try:
            self._table.client().update_item(
                TableName=self._table.name,
                Key=key(user_pk(tenant_id, user_id), MEMORY_SK),
                UpdateExpression=f"ADD {EPISODES_REVISION} :one",
                ConditionExpression="attribute_exists(pk)",  # a user deleted since has no copy to stale
                ExpressionAttributeValues=values({":one": 1}),
            )
        except ClientError as error:
            if not is_condition_failure(error):
                raise

    def _stored_copy_reading(self, user: tuple[str, str]) -> "Future[UserEpisodes | None] | None":
        """The stored copy of a user this function holds no copy of, being read (None: nothing to read)."""
        if self._cache.holds(user):
            return None
        return self._reader.submit(self._snapshots.load, *user)

    def _adopt(self, user: tuple[str, str], load: Callable[[], UserEpisodes | None]) -> None:
        """Start from the stored copy, if any (`load`: it read, or its read's result). One that
        cannot be read only costs a whole read (and the condenser then stores a good one over it)."""
        try:
            stored = load()
        except Exception as error:
            record_metric(MetricName.EPISODE_COPY_FAILED)
            logger.warning("stored copy of the episodes unread", extra={"error_type": type(error).__name__})
            return
        if stored is not None:
            self._cache.adopt(user, stored)

    def _live_episodes(self, pk: str, generation: int, since: str | None) -> list[tuple[str, CachedEpisode]]:
        """The user's live episodes of `generation` from the sort key `since` on (None: all)."""
        items = decoded_all(self._table.query_partition(pk, sk_prefix=EPISODE_PREFIX, sk_from=since))
        return _of_generation(items, generation, self._table.epoch())

    def unindexed(
        self, tenant_id: str, user_id: str, model: str, recent_episodes: int, generation: int | None = None
    ) -> list[Unindexed]:
        pk = user_pk(tenant_id, user_id)
        # The facts and the records in one Query, which holds the memory item too: the generation
        # when the caller does not know it, at no extra request.
        items = decoded_all(self._table.query_partition(pk, sk_from=FACT_PREFIX))
        if generation is None:
            memory = next((item for item in items if item[SK] == MEMORY_SK), None)
            generation = generation_of(memory) if memory else 0
        facts = with_prefix(items, FACT_PREFIX)
        records = [item for item in with_prefix(items, RECORD_PREFIX) if item.get("invalidated_at") is None]
        recent = decoded_all(self._table.newest(pk, EPISODE_PREFIX, recent_episodes))
        documents = current([*facts, *records, *recent], generation, self._table.epoch())
        # A vector still in half floats (written before vectors were kept a byte a dimension) is
        # made again: read, it costs ~30 µs to turn into bytes, on every query for a fact or a record.
        return [
            _unindexed(item)
            for item in documents
            if item.get(VECTOR_MODEL_ATTRIBUTE) != model or HALF_FLOAT_VECTOR_ATTRIBUTE in item
        ]

    def set_vector(self, tenant_id: str, user_id: str, document: Unindexed, vector: Vector) -> bool:
        # Only on the item as it was read: a fact replaced since keeps no vector of the old text, and
        # a record invalidated since (rewritten whole, without a vector) gets none: it is not ranked.
        condition = "attribute_exists(pk)" + _STILL_AS_READ.get(document.kind, "")
        plain: dict[str, Any] = {":vector": pack(vector), ":model": vector.model}
        if document.kind == "fact":
            plain[":version"] = document.version
        try:
            self._table.client().update_item(
                TableName=self._table.name,
                Key=key(user_pk(tenant_id, user_id), document.key),
                UpdateExpression=(
                    f"SET {VECTOR_ATTRIBUTE} = :vector, {VECTOR_MODEL_ATTRIBUTE} = :model"
                    f" REMOVE {HALF_FLOAT_VECTOR_ATTRIBUTE}"
                ),
                ConditionExpression=condition,
                ExpressionAttributeValues=values(plain),
            )
        except ClientError as error:
            if is_condition_failure(error):
                return False
            raise
        return True


# Below this many episodes a whole read costs about what the stored copy does (adapters/episode_snapshots.py).
COPY_WORTH_READING: Final = 100


def _of_generation(items: list[Item], generation: int, now_epoch: int) -> list[tuple[str, CachedEpisode]]:
    """The live episodes of `generation` among `items`: one expired (DynamoDB deletes it within
    days) is never ranked, nor counted as one the copy found since it was made, since the stored
    copy leaves it out while still counting it as written (adapters/episode_cache.py)."""
    return [
        (item[SK], cached_episode(item))
        for item in items
        if generation_of(item) == generation and not is_expired(item, now_epoch)
    ]


_STILL_AS_READ = {"fact": " AND updated_at = :version", "record": " AND attribute_not_exists(invalidated_at)"}


def _kind(sk: str) -> str:
    if sk.startswith(FACT_PREFIX):
        return "fact"
    return "record" if sk.startswith(RECORD_PREFIX) else "episode"


def _unindexed(item: Item) -> Unindexed:
    text = item["text"] if not item.get("title") else f"{item['title']}\n{item['text']}"
    version = item.get("updated_at", item.get("created_at", item.get("recorded_at", "")))
    kind = _kind(item[SK])
    # An episode stored before items had dates happened when it was accepted (episode_of says so too).
    occurred = item.get("occurred_at") or item.get("created_at") if kind == "episode" else None
    return Unindexed(
        kind,
        item[SK],
        text,
        str(version),
        datetime.fromisoformat(occurred) if occurred else None,
        bool(item.get("is_markdown", False)),
    )
