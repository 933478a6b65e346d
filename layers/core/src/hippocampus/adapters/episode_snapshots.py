"""The stored copy of a user's episodes: one S3 object per user (or agent scope), kept by the
condenser after each pass over the user, read by a recall function's first query of that user
(docs/architecture.md "Recall").

A first query used to read the whole partition (2,000 episodes with their vectors: ~2,200 items,
8.6x a memory read). It now reads this one object, then the memory item with the facts and the
records and only the episodes written since, in one Query; the copy is checked against the memory
item exactly as a warm function's copy is (adapters/episode_cache.py: generation, episode count,
episodes revision), so a stale or missing copy costs a whole read, never a wrong answer.

`recall/<tenant>/<user>/episodes.json`: the episodes' items as the table holds them (their
vectors in base64, as adapters/vector_codec.py packs them), with the generation, episode count
and episodes revision they account for.
It holds what the table holds and no more, so it goes with it:
- a delete of the user erases it with the user's other objects (adapters/s3.py `erase_user`);
  a copy stored after the delete's sweep is erased by its writer, which reads the memory item
  again after writing (the summary history's rule, docs/architecture.md "Deletion wins");
- forgetting an episode deletes it, and bumps the episodes revision, so a copy stored meanwhile
  is erased by its writer the same way;
- its episodes expire with their items: each object is tagged with the whole days left to its
  first episode's expiry, rounded down to a power of two, and a lifecycle rule per tag expires it
  then (infra/resources.py `archive_bucket`; a last rule expires any copy after the raw retention).
  S3 expires objects at the midnight UTC after their day, so a copy can outlive its first episode
  by up to about two days, as an item outlives its TTL in DynamoDB; no read returns an expired one.
"""

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, cast

from botocore.exceptions import ClientError

from hippocampus.adapters.dynamodb_episodes import episode_attributes
from hippocampus.adapters.dynamodb_table import DAY_S
from hippocampus.adapters.episode_cache import CachedEpisode, UserEpisodes, cached_episode
from hippocampus.adapters.s3 import user_prefix
from hippocampus.adapters.vector_codec import VECTOR_ATTRIBUTE, VECTOR_MODEL_ATTRIBUTE, pack
from hippocampus.contracts.models import Episode
from hippocampus.contracts.names import RECALL_EXPIRY_TAG, RECALL_PREFIX, recall_expiry_days
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.recall_ports import ContextMaker, StoredContext

# 2: vectors a byte a dimension (adapters/vector_codec.py); a copy of format 1 is not read.
FORMAT: Final = 2
_CONTEXT: Final = "context"
# What `episode_of` reads an attribute as when the item does not hold it: left out of a row, so
# the first query has less to parse.
_UNSAID: Final[dict[str, object]] = {
    "is_markdown": False,
    "metadata": "{}",
    "additional_metadata": "{}",
    "position": 0,
}
_SAID: Final = object()


def snapshot_key(tenant_id: str, user_id: str) -> str:
    return user_prefix(RECALL_PREFIX, tenant_id, user_id) + "episodes.json"


@dataclass(frozen=True)
class CopyRules:
    """How copies are made: how long an episode lives at most (the raw payloads' retention), the
    clock (epoch seconds), and what makes the episodes' contexts stored with them."""

    longest_days: int
    epoch: Callable[[], int]
    contexts: ContextMaker


class EpisodeSnapshots:
    def __init__(
        self, bucket: str, client: Callable[[], Any], rules: CopyRules, client_made: Callable[[], bool]
    ) -> None:
        self._bucket = bucket
        self._client = client
        self._rules = rules
        self._tags = recall_expiry_days(rules.longest_days)
        self._client_made = client_made

    @property
    def ready(self) -> bool:
        """Whether reading a copy costs only the request (the process has made its S3 client)."""
        return self._client_made()

    def load(self, tenant_id: str, user_id: str) -> UserEpisodes | None:
        """The stored copy; None when there is none (or of a format this code does not read)."""
        try:
            answer = self._client().get_object(Bucket=self._bucket, Key=snapshot_key(tenant_id, user_id))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise
        stored = json.loads(answer["Body"].read())
        if stored.get("format") != FORMAT:
            return None
        copy = UserEpisodes(
            stored["generation"],
            stored["episode_count"],
            stored["episodes_revision"],
            stored["episodes_written"],
        )
        made_with = (stored.get("context_model"), stored.get("context_rules"))
        copy.merge(
            (row[SK], cached_episode(_item(row), _context(row, made_with))) for row in stored["episodes"]
        )
        copy.mark_stored()
        return copy

    def store(self, tenant_id: str, user_id: str, copy: UserEpisodes, model: str | None) -> bool:
        """Store the copy's unexpired episodes, with their contexts of `model`'s vectors; True when
        it was stored, False when it held none and the stored copy was deleted instead."""
        now_epoch = self._rules.epoch()
        kept = [(sk, cached) for sk in copy.keys if (cached := copy.by_key[sk]).alive(now_epoch)]
        key = snapshot_key(tenant_id, user_id)
        contexts: list[StoredContext | None] = [None] * len(kept)
        if model is not None:
            contexts = self._rules.contexts([cached.entry for _, cached in kept], model)
        rows = [_row(sk, cached, context) for (sk, cached), context in zip(kept, contexts, strict=True)]
        if not rows:
            self._client().delete_object(Bucket=self._bucket, Key=key)
            return False
        document = {
            "format": FORMAT,
            "generation": copy.generation,
            "episode_count": copy.episode_count,
            "episodes_revision": copy.revision,
            "episodes_written": copy.written,
            "context_model": model,
            "context_rules": next((context.rules for context in contexts if context is not None), None),
            "episodes": rows,
        }
        first_expiry = min((row[TTL] for row in rows if row.get(TTL) is not None), default=None)
        self._client().put_object(
            Bucket=self._bucket,
            Key=key,
            Body=json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode(),
            ContentType="application/json",
            Tagging=f"{RECALL_EXPIRY_TAG}={self._tag(first_expiry, now_epoch)}",
        )
        return True

    def delete(self, tenant_id: str, user_id: str) -> None:
        self._client().delete_object(Bucket=self._bucket, Key=snapshot_key(tenant_id, user_id))

    def _tag(self, first_expiry: int | None, now_epoch: int) -> int:
        """The longest tag's days that end before the first episode expires (at least one day)."""
        if first_expiry is None:
            return self._tags[-1]
        days_left = (first_expiry - now_epoch) // DAY_S
        return max([days for days in self._tags if days <= days_left], default=1)


def _row(sk: str, cached: CachedEpisode, context: StoredContext | None) -> dict[str, Any]:
    """One episode as its item holds it, the vector in base64, and its context: 1 / its length,
    its neighbours' jobs, its window's offsets."""
    attributes = episode_attributes(cast(Episode, cached.entry.document))
    if attributes["occurred_at"] == attributes["created_at"]:
        del attributes["occurred_at"]  # read back as when it was accepted (`episode_of`)
    row: dict[str, Any] = {
        SK: sk,
        **{name: value for name, value in attributes.items() if _UNSAID.get(name, _SAID) != value},
    }
    if cached.expires_at is not None:
        row[TTL] = cached.expires_at
    vector = cached.entry.vector
    if vector is not None:
        row[VECTOR_ATTRIBUTE] = base64.b64encode(pack(vector)).decode()
        row[VECTOR_MODEL_ATTRIBUTE] = vector.model
    if context is not None:
        # Flat, one list: fewer objects for the reader to make (4 neighbours, then the offsets).
        row[_CONTEXT] = [context.inverse_length, *context.neighbours, *context.offsets]
    return row


def _context(row: dict[str, Any], made_with: tuple[str | None, str | None]) -> StoredContext | None:
    stored = row.get(_CONTEXT)
    model, rules = made_with
    if model is None or rules is None or stored is None:
        return None
    return StoredContext(model, rules, tuple(stored[1:5]), tuple(stored[5:]), stored[0])


def _item(row: dict[str, Any]) -> dict[str, Any]:
    if VECTOR_ATTRIBUTE in row:
        row[VECTOR_ATTRIBUTE] = base64.b64decode(row[VECTOR_ATTRIBUTE])
    return row
