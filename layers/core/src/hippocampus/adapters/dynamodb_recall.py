"""RecallStore on the DynamoDB table: a user's facts and episodes with their vectors.

A query reads the memory item with the facts (as a memory read does), then the episodes: all of
them the first time a function ranks the user, afterwards only what changed (adapters/episode_cache.py;
docs/architecture.md "Recall"). Vectors live on the items themselves (adapters/vector_codec.py).
"""

from typing import Any

from botocore.exceptions import ClientError

from hippocampus.adapters.dynamodb_episodes import episode_of
from hippocampus.adapters.dynamodb_items import Item, current, decoded_all, generation_of
from hippocampus.adapters.dynamodb_memory import DynamoMemoryStore, fact_of
from hippocampus.adapters.dynamodb_table import (
    EPISODE_PREFIX,
    FACT_PREFIX,
    Table,
    is_condition_failure,
    key,
    user_pk,
    values,
)
from hippocampus.adapters.episode_cache import CachedEpisode, EpisodeCache
from hippocampus.adapters.vector_codec import VECTOR_ATTRIBUTE, VECTOR_MODEL_ATTRIBUTE, pack, unpack
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.recall_ports import Corpus, Indexed, Unindexed, Vector


def _vector(item: Item) -> Vector | None:
    if VECTOR_ATTRIBUTE not in item or VECTOR_MODEL_ATTRIBUTE not in item:
        return None
    return Vector(item[VECTOR_MODEL_ATTRIBUTE], unpack(item[VECTOR_ATTRIBUTE]))


class DynamoRecallStore:
    def __init__(self, table: Table, memory: DynamoMemoryStore, cache: EpisodeCache) -> None:
        self._table = table
        self._memory = memory
        self._cache = cache

    def corpus(self, tenant_id: str, user_id: str, model: str | None) -> Corpus:
        pk = user_pk(tenant_id, user_id)
        # First the memory item and the facts (a memory read), then the episodes: read in this
        # order, the episode count on the memory item is never newer than the episodes found.
        state, facts = self._memory.memory_and_fact_items(pk)

        def read(start: str | None) -> list[tuple[str, CachedEpisode]]:
            # Expired episodes too: the cache keeps each one's TTL and drops it when it passes.
            items = decoded_all(self._table.query_partition(pk, sk_prefix=EPISODE_PREFIX, sk_from=start))
            return [
                (item[SK], CachedEpisode(Indexed(episode_of(item), _vector(item)), item.get(TTL)))
                for item in items
                if generation_of(item) == state.generation
            ]

        episodes = self._cache.episodes(
            (tenant_id, user_id), state.generation, state.episode_count, model, read
        )
        return Corpus(
            state=state,
            facts=[Indexed(fact_of(item), _vector(item)) for item in facts],
            episodes=episodes.current(self._table.epoch()),
        )

    def unindexed(
        self, tenant_id: str, user_id: str, model: str, recent_episodes: int, generation: int | None = None
    ) -> list[Unindexed]:
        pk = user_pk(tenant_id, user_id)
        if generation is None:
            generation = self._memory.read_generation(tenant_id, user_id)
        facts = decoded_all(self._table.query_partition(pk, sk_prefix=FACT_PREFIX))
        recent = decoded_all(self._table.newest(pk, EPISODE_PREFIX, recent_episodes))
        documents = current([*facts, *recent], generation, self._table.epoch())
        return [_unindexed(item) for item in documents if item.get(VECTOR_MODEL_ATTRIBUTE) != model]

    def set_vector(self, tenant_id: str, user_id: str, document: Unindexed, vector: Vector) -> bool:
        # Only on the item as it was read: a fact replaced since keeps no vector of the old text.
        condition = "attribute_exists(pk)" + (" AND updated_at = :version" if document.kind == "fact" else "")
        plain: dict[str, Any] = {":vector": pack(vector.values), ":model": vector.model}
        if document.kind == "fact":
            plain[":version"] = document.version
        try:
            self._table.client().update_item(
                TableName=self._table.name,
                Key=key(user_pk(tenant_id, user_id), document.key),
                UpdateExpression=f"SET {VECTOR_ATTRIBUTE} = :vector, {VECTOR_MODEL_ATTRIBUTE} = :model",
                ConditionExpression=condition,
                ExpressionAttributeValues=values(plain),
            )
        except ClientError as error:
            if is_condition_failure(error):
                return False
            raise
        return True


def _unindexed(item: Item) -> Unindexed:
    kind = "fact" if item[SK].startswith(FACT_PREFIX) else "episode"
    text = item["text"] if not item.get("title") else f"{item['title']}\n{item['text']}"
    return Unindexed(kind, item[SK], text, str(item.get("updated_at", item.get("created_at", ""))))
