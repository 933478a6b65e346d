"""RecallStore on the DynamoDB table: a user's facts and episodes with their vectors.

One paged `Query` of the user's partition reads the memory, the facts and the episodes at once
(docs/architecture.md "Recall"). Vectors live on the items themselves (adapters/vector_codec.py).
"""

from typing import Any

from botocore.exceptions import ClientError

from hippocampus.adapters.dynamodb_episodes import episode_of
from hippocampus.adapters.dynamodb_memory import DynamoMemoryStore, fact_of
from hippocampus.adapters.dynamodb_table import (
    EPISODE_PREFIX,
    FACT_PREFIX,
    MEMORY_SK,
    Table,
    is_condition_failure,
    key,
    plain_item,
    user_pk,
    values,
)
from hippocampus.adapters.vector_codec import VECTOR_ATTRIBUTE, VECTOR_MODEL_ATTRIBUTE, pack, unpack
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.recall_ports import Corpus, Indexed, Unindexed, Vector


def _vector(raw: dict[str, Any]) -> Vector | None:
    if VECTOR_ATTRIBUTE not in raw or VECTOR_MODEL_ATTRIBUTE not in raw:
        return None
    return Vector(raw[VECTOR_MODEL_ATTRIBUTE]["S"], unpack(bytes(raw[VECTOR_ATTRIBUTE]["B"])))


def _generation(raw: dict[str, Any]) -> int:
    return int(raw.get("generation", {}).get("N", "0"))


class DynamoRecallStore:
    def __init__(self, table: Table, memory: DynamoMemoryStore) -> None:
        self._table = table
        self._memory = memory

    def corpus(self, tenant_id: str, user_id: str) -> Corpus:
        memory_raw: dict[str, Any] | None = None
        facts: list[dict[str, Any]] = []
        episodes: list[dict[str, Any]] = []
        for raw in self._table.query_partition(user_pk(tenant_id, user_id)):
            sk = raw[SK]["S"]
            if sk == MEMORY_SK:
                memory_raw = raw
            elif self._table.expired(raw):
                continue
            elif sk.startswith(FACT_PREFIX):
                facts.append(raw)
            elif sk.startswith(EPISODE_PREFIX):
                episodes.append(raw)
        state = self._memory.memory_state(memory_raw)
        # Items of an earlier generation are ones a delete has not finished erasing: never returned.
        return Corpus(
            state=state,
            facts=[
                Indexed(fact_of(plain_item(raw)), _vector(raw))
                for raw in facts
                if _generation(raw) == state.generation
            ],
            episodes=[
                Indexed(episode_of(raw), _vector(raw))
                for raw in episodes
                if _generation(raw) == state.generation
            ],
        )

    def unindexed(self, tenant_id: str, user_id: str, model: str, recent_episodes: int) -> list[Unindexed]:
        pk = user_pk(tenant_id, user_id)
        generation = self._memory.read_generation(tenant_id, user_id)
        due = [
            raw
            for raw in self._table.query_partition(pk, sk_prefix=FACT_PREFIX)
            if self._due(raw, model, generation)
        ]
        recent = self._table.newest(pk, EPISODE_PREFIX, recent_episodes)
        due += [raw for raw in recent if self._due(raw, model, generation)]
        return [_unindexed(raw) for raw in due]

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

    def _due(self, raw: dict[str, Any], model: str, generation: int) -> bool:
        stored = raw.get(VECTOR_MODEL_ATTRIBUTE, {}).get("S")
        return stored != model and _generation(raw) == generation and not self._table.expired(raw)


def _unindexed(raw: dict[str, Any]) -> Unindexed:
    item = plain_item(raw)
    kind = "fact" if item[SK].startswith(FACT_PREFIX) else "episode"
    text = item["text"] if not item.get("title") else f"{item['title']}\n{item['text']}"
    return Unindexed(kind, item[SK], text, str(item.get("updated_at", item.get("created_at", ""))))
