"""Episodes packed many to an item, so that a recall function's first query of a user reads a few
items instead of every episode (docs/architecture.md "Recall").

A pack (`EPACK#<first episode's sort key>`, in the user's partition) holds PACK_EPISODES consecutive
episodes as their items are stored, vectors included, as zlib-compressed JSON. Packs are a copy:
the episode items stay the source of truth, and a reader trusts packs only as far as
adapters/episode_cache.py's check against the memory item's `episode_count` allows.

- **Written** by the condenser after indexing (`EpisodePacks.pack_new`): once PACK_EPISODES
  episodes after the last pack have vectors of the model, the next pack is written. Each write is
  one transaction: the pack, an increment of the user's pack revision (`EPACK#~revision`) on
  condition that it is as listed before the episodes were read, and a check of the generation.
- **Deleted** with what they hold: forgetting an episode deletes every pack of the user in its own
  transaction, with the same increment on the same condition: no pack written meanwhile survives
  with the forgotten turn, and no pack writer that read the turn before can write it after; deleting the user deletes them with the user's other items; a pack expires
  with the earliest of its episodes (its TTL); packs of another generation or model, and packs
  whose episodes were all trimmed, are deleted by the next packing pass.
"""

import base64
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from hippocampus.adapters.dynamodb_items import Item, decoded_all, generation_of, is_expired
from hippocampus.adapters.dynamodb_table import EPISODE_PREFIX, Table, generation_check, key, user_pk, values
from hippocampus.adapters.vector_codec import VECTOR_MODEL_ATTRIBUTE
from hippocampus.contracts.errors import ConditionFailed
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL

PACK_PREFIX: Final = "EPACK#"  # sorts before EPISODE#: no episode range ever reads a pack
# The user's pack revision, an item of its own that sorts after every pack (`~` after letters):
# every pack written, and every forget that drops them, adds one to it.
REVISION_SK: Final = PACK_PREFIX + "~revision"
REVISION: Final = "revision"
PACK_EPISODES: Final = 100
# A pack's compressed episodes; DynamoDB's item limit is 400 KB. A pack too large for it holds
# half as many episodes (one episode of 16,000 characters always fits).
PACK_MAX_BYTES: Final = 300_000
# Packs written in one pass at most: a user with thousands of episodes and no packs yet is packed
# over a few passes, so one pass stays short.
PACKS_PER_PASS: Final = 5
_BYTES_MARK: Final = "__bytes__"


def encode(items: Sequence[Item]) -> bytes:
    """Episode items as stored (bytes as base64), compressed."""
    plain = [{name: _jsonable(value) for name, value in item.items()} for item in items]
    return zlib.compress(json.dumps(plain, separators=(",", ":"), ensure_ascii=False).encode(), 6)


def decode(blob: bytes) -> list[Item]:
    return [
        {name: _restored(value) for name, value in item.items()} for item in json.loads(zlib.decompress(blob))
    ]


def _jsonable(value: Any) -> Any:
    return {_BYTES_MARK: base64.b64encode(value).decode()} if isinstance(value, bytes) else value


def _restored(value: Any) -> Any:
    if isinstance(value, dict) and _BYTES_MARK in value:
        return base64.b64decode(value[_BYTES_MARK])
    return value


@dataclass(frozen=True)
class PackListing:
    """A user's packs as listed (their keys and what a writer checks) and the revision then."""

    packs: list[Item]
    revision: int | None  # None: no pack was ever written or dropped for the user

    def keys(self, pk: str) -> list[dict[str, Any]]:
        return [key(pk, pack[SK]) for pack in self.packs]


def revision_update(table: Table, pk: str, listing: PackListing, generation: int) -> dict[str, Any]:
    """The `Update` that adds one to the revision, on condition that it is still as listed: a pack
    written or dropped since makes the transaction that holds it fail."""
    condition = "attribute_not_exists(pk)" if listing.revision is None else f"{REVISION} = :revision"
    plain: dict[str, Any] = {":one": 1, ":gen": generation}
    if listing.revision is not None:
        plain[":revision"] = listing.revision
    return {
        "Update": {
            "TableName": table.name,
            "Key": key(pk, REVISION_SK),
            "UpdateExpression": f"ADD {REVISION} :one SET #g = :gen",
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#g": "generation"},
            "ExpressionAttributeValues": values(plain),
        }
    }


class EpisodePacks:
    def __init__(self, table: Table) -> None:
        self._table = table

    def episodes(self, pk: str, generation: int, model: str | None) -> list[Item] | None:
        """The packed episode items of `generation` with vectors of `model`, oldest first; None when
        there is no pack to read."""
        if model is None:
            return None
        epoch = self._table.epoch()
        packs = [
            pack
            for pack in decoded_all(self._table.query_partition(pk, sk_prefix=PACK_PREFIX))
            if "episodes" in pack
            and generation_of(pack) == generation
            and pack.get(VECTOR_MODEL_ATTRIBUTE) == model
            and not is_expired(pack, epoch)
        ]
        if not packs:
            return None
        return [
            episode for pack in sorted(packs, key=lambda p: p[SK]) for episode in decode(pack["episodes"])
        ]

    def listing(self, pk: str) -> PackListing:
        """The user's packs (what a writer needs of them) and the revision, in one Query."""
        projection = f"pk, sk, last_sk, #g, {TTL}, {VECTOR_MODEL_ATTRIBUTE}, {REVISION}"
        items = decoded_all(self._table.query_partition(pk, projection, PACK_PREFIX))
        marker = next((item for item in items if item[SK] == REVISION_SK), None)
        revision = marker.get(REVISION) if marker else None
        packs = sorted((item for item in items if item[SK] != REVISION_SK), key=lambda item: item[SK])
        return PackListing(packs, None if revision is None else int(revision))

    def pack_new(self, tenant_id: str, user_id: str, generation: int, model: str, episode_count: int) -> int:
        """Write the packs the indexed episodes after the last pack make (at most PACKS_PER_PASS);
        delete the packs no reader may use. Returns how many episodes were packed. A user with
        fewer than PACK_EPISODES episodes costs no request."""
        if episode_count < PACK_EPISODES:
            return 0
        pk = user_pk(tenant_id, user_id)
        listing = self.listing(pk)
        usable, unusable = self._sorted_out(pk, listing.packs, generation, model)
        self._table.batch_delete([key(pk, pack[SK]) for pack in unusable])
        after = usable[-1]["last_sk"] if usable else None
        ready = self._indexed_after(pk, after, generation, model)
        revision = listing.revision
        packed = 0
        for _ in range(PACKS_PER_PASS):
            if len(ready) < PACK_EPISODES:
                break
            chunk = self._episodes(pk, ready[0], ready[PACK_EPISODES - 1], generation, model)
            if [item[SK] for item in chunk] != ready[:PACK_EPISODES]:
                break  # changed since: the next pass packs what is there then
            written = self._write((tenant_id, user_id), chunk, generation, PackListing(usable, revision))
            if written == 0:
                break
            packed += written
            ready = ready[written:]
            revision = (revision or 0) + 1
        return packed

    def _sorted_out(
        self, pk: str, packs: list[Item], generation: int, model: str
    ) -> tuple[list[Item], list[Item]]:
        """The packs a reader may use, oldest first, and the others: another generation or model,
        expired, or holding only episodes trimmed since (older than the oldest episode kept)."""
        epoch = self._table.epoch()
        first = decoded_all(self._table.oldest(pk, EPISODE_PREFIX, 1)) if packs else []
        oldest_sk = first[0][SK] if first else None
        usable: list[Item] = []
        unusable: list[Item] = []
        for pack in packs:
            stale = generation_of(pack) != generation or pack.get(VECTOR_MODEL_ATTRIBUTE) != model
            trimmed = oldest_sk is None or pack["last_sk"] < oldest_sk
            (unusable if stale or trimmed or is_expired(pack, epoch) else usable).append(pack)
        return usable, unusable

    def _indexed_after(self, pk: str, after: str | None, generation: int, model: str) -> list[str]:
        """The sort keys of the episodes after `after`, up to the first one without a vector of the
        model: the run a pack may take, in order."""
        projection = f"pk, sk, #g, {VECTOR_MODEL_ATTRIBUTE}"
        items = decoded_all(self._table.query_partition(pk, projection, EPISODE_PREFIX, after))
        ready: list[str] = []
        for item in items:
            if item[SK] == after or generation_of(item) != generation:
                continue
            if item.get(VECTOR_MODEL_ATTRIBUTE) != model:
                break
            ready.append(item[SK])
        return ready

    def _episodes(self, pk: str, first: str, last: str, generation: int, model: str) -> list[Item]:
        items = decoded_all(self._table.query_partition(pk, sk_from=first, sk_to=last))
        return [
            item
            for item in items
            if generation_of(item) == generation and item.get(VECTOR_MODEL_ATTRIBUTE) == model
        ]

    def _write(
        self, user: tuple[str, str], episodes: list[Item], generation: int, listing: PackListing
    ) -> int:
        """One pack of the first episodes that fit; how many it holds (0: the user changed since:
        deleted, or a pack written or dropped)."""
        pk = user_pk(*user)
        count = len(episodes)
        blob = encode(episodes)
        while len(blob) > PACK_MAX_BYTES and count > 1:
            count //= 2
            blob = encode(episodes[:count])
        held = episodes[:count]
        pack: Item = {
            PK: pk,
            SK: PACK_PREFIX + held[0][SK],
            "last_sk": held[-1][SK],
            "generation": generation,
            VECTOR_MODEL_ATTRIBUTE: held[0][VECTOR_MODEL_ATTRIBUTE],
            "count": count,
            "episodes": blob,
        }
        expiries = [item[TTL] for item in held if item.get(TTL) is not None]
        if expiries:
            pack[TTL] = min(expiries)
        put = {
            "Put": {
                "TableName": self._table.name,
                "Item": values(pack),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        try:
            self._table.transact(
                [
                    put,
                    revision_update(self._table, pk, listing, generation),
                    generation_check(self._table.name, *user, generation),
                ]
            )
        except ConditionFailed:
            return 0
        return count
