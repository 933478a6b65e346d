"""A user's summary item and current facts, decoded from the table without the models.

The memory store (dynamodb_memory.py) builds its `Fact` models from these; the memory read's fast
lane (api/memory_lane.py) answers from them directly. Nothing here imports pydantic, so the lane's
cold start never loads it (docs/architecture.md "The memory read's fast lane").
"""

import json
from datetime import datetime

from hippocampus.adapters.dynamodb_items import (
    Item,
    current,
    decoded_all,
    generation_of,
    is_expired,
    with_prefix,
)
from hippocampus.adapters.dynamodb_table import (
    EPISODE_COUNT,
    EPISODES_REVISION,
    EPISODES_WRITTEN,
    FACT_PREFIX,
    MEMORY_SK,
    Table,
    user_pk,
)
from hippocampus.contracts.memory_state import FactFields, MemoryState, StoredMemory
from hippocampus.contracts.names import TABLE_SORT_KEY as SK


def memory_state(item: Item | None, epoch: int) -> MemoryState:
    """The summary item as read at `epoch`: an expired or emptied one keeps only its counters."""
    if not item:
        return MemoryState()
    if is_expired(item, epoch) or "memory" not in item:
        return MemoryState(
            generation=generation_of(item),
            episode_count=item.get(EPISODE_COUNT, 0),
            episodes_revision=item.get(EPISODES_REVISION, 0),
            episodes_written=item.get(EPISODES_WRITTEN, 0),
            version_floor=item.get("version", 0),
        )
    updated_at = item.get("updated_at")
    return MemoryState(
        memory=str(item["memory"]),
        version=item.get("version", 0),
        word_count=item.get("word_count", 0),
        updated_at=datetime.fromisoformat(updated_at) if updated_at else None,
        generation=generation_of(item),
        episode_count=item.get(EPISODE_COUNT, 0),
        episodes_revision=item.get(EPISODES_REVISION, 0),
        episodes_written=item.get(EPISODES_WRITTEN, 0),
    )


def memory_and_fact_items(table: Table, pk: str) -> tuple[MemoryState, list[Item]]:
    """The memory's state and its current facts as stored (recall also reads their vectors), in one
    Query from `FACT#…` to `MEMORY`: it never touches the episodes (before) nor the records (after)."""
    items = decoded_all(table.query_partition(pk, sk_from=FACT_PREFIX, sk_to=MEMORY_SK))
    epoch = table.epoch()
    state = memory_state(next((item for item in items if item[SK] == MEMORY_SK), None), epoch)
    return state, current(with_prefix(items, FACT_PREFIX), state.generation, epoch)


def fact_fields(item: Item) -> FactFields:
    return FactFields(
        id=item["id"],
        text=item["text"],
        metadata=json.loads(item.get("metadata") or "{}"),
        additional_metadata=json.loads(item.get("additional_metadata") or "{}"),
        # Facts written before titles existed hold neither attribute.
        title=item.get("title"),
        is_markdown=bool(item.get("is_markdown", False)),
        updated_at=datetime.fromisoformat(item["updated_at"]),
    )


def read_stored_memory(table: Table, tenant_id: str, user_id: str) -> StoredMemory:
    """A user's memory in one Query, as the fast lane answers it."""
    state, facts = memory_and_fact_items(table, user_pk(tenant_id, user_id))
    return StoredMemory(state, [fact_fields(item) for item in facts])
