"""EpisodeStore on the DynamoDB table: one item per condensed turn, in the user's partition.

`EPISODE#<occurred ms>#<accepted ms>#<place in its request>#<job id>` sorts them by when they
happened, then by acceptance (turns of one date sent in order), so the newest come first in a query.
Each carries the user's generation (a delete's sweep removes the older ones, and reads never show
them) and the TTL of the raw payloads it was rendered from (docs/architecture.md "Storage layout").
"""

import json
from typing import Any

from hippocampus.adapters.dynamodb_items import Item, current, decoded_all
from hippocampus.adapters.dynamodb_jobs import job_update
from hippocampus.adapters.dynamodb_table import (
    DAY_S,
    EPISODE_COUNT,
    EPISODE_PREFIX,
    EPISODES_WRITTEN,
    MEMORY_SK,
    Table,
    generation_check,
    iso,
    key,
    listing,
    user_pk,
    values,
)
from hippocampus.contracts.models import EpisodePlace
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.recall import Episode


def episode_sk(place: EpisodePlace) -> str:
    """`EPISODE#<occurred, ms>#<accepted, ms>#<place in its request>#<job id>`: in the order they happened."""
    occurred_ms = max(0, int(place.occurred_at.timestamp() * 1000))  # 1970 at the earliest
    accepted_ms = int(place.created_at.timestamp() * 1000)
    return f"{EPISODE_PREFIX}{occurred_ms:013d}#{accepted_ms:013d}#{place.position:03d}#{place.job_id}"


def episode_put(
    table: Table, tenant_id: str, user_id: str, generation: int, episode: Episode, ttl_s: int
) -> dict[str, Any]:
    """The `Put` of one episode (idempotent: a retried condensation writes the same item again)."""
    item: dict[str, Any] = {
        PK: user_pk(tenant_id, user_id),
        SK: episode_sk(episode.place),
        **episode_attributes(episode),
        "generation": generation,
        TTL: table.epoch() + ttl_s,
    }
    return {"Put": {"TableName": table.name, "Item": values(item)}}


def episode_attributes(episode: Episode) -> dict[str, Any]:
    """What an episode's item holds of it (`episode_of` reads them back)."""
    attributes: dict[str, Any] = {
        "id": episode.id,
        "job_id": episode.job_id,
        "text": episode.text,
        "is_markdown": episode.is_markdown,
        # JSON text, as for facts: metadata may hold floats, which DynamoDB maps cannot take as they are.
        "metadata": json.dumps(episode.metadata, separators=(",", ":")),
        "additional_metadata": json.dumps(episode.additional_metadata, separators=(",", ":")),
        "created_at": iso(episode.created_at),
        "occurred_at": iso(episode.occurred_at),
        "position": episode.position,
    }
    if episode.title is not None:
        attributes["title"] = episode.title
    return attributes


def episode_of(item: Item) -> Episode:
    return Episode(
        id=item["id"],
        job_id=item["job_id"],
        text=item["text"],
        title=item.get("title"),
        is_markdown=bool(item.get("is_markdown", False)),
        metadata=_object(item.get("metadata")),
        additional_metadata=_object(item.get("additional_metadata")),
        created_at=item["created_at"],
        occurred_at=item.get("occurred_at"),  # None (stored before items had dates): when accepted
        position=item.get("position", 0),
    )


def _object(stored: str | None) -> dict[str, Any]:
    """Metadata stored as JSON text; most episodes have none (`{}`), read without the parser: a
    user's first query in a function decodes 2,000 episodes."""
    if not stored or stored == "{}":
        return {}
    decoded: dict[str, Any] = json.loads(stored)
    return decoded


class DynamoEpisodeStore:
    def __init__(self, table: Table, retention_days: int) -> None:
        self._table = table
        self.ttl_s = retention_days * DAY_S

    def put_episodes(
        self, tenant_id: str, user_id: str, generation: int, episodes: list[Episode], memory_version: int
    ) -> None:
        now = self._table.now()
        jobs = [
            job_update(self._table, tenant_id, episode.job_id, "completed", None, memory_version, now)
            for episode in episodes
        ]
        self._table.transact([*self.counted_puts(tenant_id, user_id, generation, episodes), *jobs])

    def counted_puts(
        self, tenant_id: str, user_id: str, generation: int, episodes: list[Episode]
    ) -> list[dict[str, Any]]:
        """The transaction items that write `episodes` only while the user is at `generation` (a
        delete since then wins) and add them to the memory's episode count."""
        check = generation_check(self._table.name, tenant_id, user_id, generation)["ConditionCheck"]
        listed, listed_values = listing(tenant_id, user_id)  # a user with episodes only is a user too
        count = {
            "Update": {
                **check,
                # The generation too, when this creates the memory item (a first turn with nothing to
                # keep): every later check of the generation reads it, as after any other first write.
                "UpdateExpression": (
                    f"SET #g = if_not_exists(#g, :gen), {listed} "
                    f"ADD {EPISODE_COUNT} :episodes, {EPISODES_WRITTEN} :episodes"
                ),
                "ExpressionAttributeValues": check["ExpressionAttributeValues"]
                | values({":episodes": len(episodes), **listed_values}),
            }
        }
        puts = [
            episode_put(self._table, tenant_id, user_id, generation, episode, self.ttl_s)
            for episode in episodes
        ]
        return [count, *puts]

    def episodes(self, tenant_id: str, user_id: str, generation: int) -> list[Episode]:
        items = decoded_all(
            self._table.query_partition(user_pk(tenant_id, user_id), sk_prefix=EPISODE_PREFIX)
        )
        return [episode_of(item) for item in current(items, generation, self._table.epoch())]

    def list_episodes(
        self, tenant_id: str, user_id: str, generation: int, limit: int, after: EpisodePlace | None
    ) -> tuple[list[Episode], bool]:
        """Newest first, `limit` at most, older than `after`; and whether more may follow."""
        kwargs: dict[str, Any] = {
            "TableName": self._table.name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": values(
                {":pk": user_pk(tenant_id, user_id), ":prefix": EPISODE_PREFIX}
            ),
            "ConsistentRead": True,
            "ScanIndexForward": False,
            "Limit": limit + 1,  # one more than the page: whether another page follows
        }
        if after is not None:
            kwargs["ExclusiveStartKey"] = key(user_pk(tenant_id, user_id), episode_sk(after))
        response = self._table.client().query(**kwargs)
        items = decoded_all(response.get("Items", []))
        episodes = [episode_of(item) for item in current(items[:limit], generation, self._table.epoch())]
        return episodes, len(items) > limit

    def trim_episodes(self, tenant_id: str, user_id: str, keep: int) -> int:
        """Remove the oldest episodes beyond the newest `keep`; return how many went."""
        pk = user_pk(tenant_id, user_id)
        keys = [
            {PK: raw[PK], SK: raw[SK]}
            for raw in self._table.query_partition(pk, projection="pk, sk, #g", sk_prefix=EPISODE_PREFIX)
        ]
        excess = keys[: max(0, len(keys) - keep)]  # ascending: the oldest first
        self._table.batch_delete(excess)
        # What is left, so the next condensations do not trim again until the cap is passed.
        self._table.client().update_item(
            TableName=self._table.name,
            Key=key(pk, MEMORY_SK),
            UpdateExpression=f"SET {EPISODE_COUNT} = :left",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues=values({":left": len(keys) - len(excess)}),
        )
        return len(excess)
