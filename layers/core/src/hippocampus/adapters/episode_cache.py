"""What a warm recall function keeps of its users' episodes, so that a query reads only what changed
(docs/architecture.md "Recall").

Episodes are written once, appended (their sort keys grow with the time their item was accepted),
get a vector once, and leave oldest first (the cap's trim; the raw-payload TTL, filtered on read)
or all at once (a delete changes the user's generation). So each query, after reading the memory
item with the facts, reads again only the episodes from the newest one kept, or from the oldest of
the newest RECENT_EPISODES still lacking a vector of the model (the indexer's window), and checks
the copy against the memory's `episode_count` (every episode written and not trimmed):

- every episode written since the copy was made (`episodes_written`, which no trim takes off) is
  one the read found, and the count is what the copy accounts for (the count it last saw plus the
  episodes it found since, or what is left after a trim to MEMORY_MAX_EPISODES): the copy is the
  partition's;
- otherwise (an episode written out of order, e.g. redriven from the DLQ or dated in the past,
  even when a trim at the cap made the count add up again; a trim after TTL
  deletions), or with another generation (a delete), or another `episodes_revision` (an episode
  forgotten, old episodes re-indexed: changes a count cannot show): the user's episodes are read
  whole again.

The copy may also start from the one the condenser keeps in S3 (adapters/episode_snapshots.py),
checked the same way: `adopt`.

Bounded: at most MAX_EPISODES episodes for all users together, the least recently queried users
dropped first. An episode with a 256-dimension vector (kept as bytes: contracts/recall_ports.py
`Vector`) takes ~4.3 KB with what ranking keeps of it (its document and its context,
domain/recall/; measured with tracemalloc over 2,000 episodes of ~80 characters; 12.3 KB when the
vectors were tuples of Python floats): ~90 MB at most of the recall function's 1,024. The bound
counts episodes, not bytes: an episode's text may hold 16,000 characters, kept twice (the episode's,
and ranking's with its date terms), so 20,000 of the longest take about 0.7 GB by that arithmetic.
"""

from bisect import insort
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from hippocampus.adapters.dynamodb_episodes import episode_of
from hippocampus.adapters.dynamodb_items import Item
from hippocampus.adapters.vector_codec import stored_vector
from hippocampus.contracts.memory_state import MemoryState
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.recall_ports import RECENT_EPISODES, Indexed, StoredContext

MAX_EPISODES: Final = 20_000
# The condenser's copies, kept only to store them (adapters/episode_snapshots.py): two users at the
# default cap, the users of a batch that come back soon.
KEEPER_EPISODES: Final = 4_000


@dataclass
class CachedEpisode:
    entry: Indexed
    expires_at: int | None  # the item's TTL (epoch seconds)

    def alive(self, now_epoch: int) -> bool:
        return self.expires_at is None or self.expires_at > now_epoch


def cached_episode(item: Item, context: StoredContext | None = None) -> CachedEpisode:
    """An episode as the copy keeps it, from its item (the table's, or the stored copy's, which
    holds its context too)."""
    return CachedEpisode(Indexed(episode_of(item), stored_vector(item), context), item.get(TTL))


@dataclass
class UserEpisodes:
    """One user's episodes as of `episode_count` and `revision`, by sort key."""

    generation: int
    episode_count: int
    revision: int
    written: int  # MemoryState.episodes_written as the copy accounts for it
    by_key: dict[str, CachedEpisode] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)  # ascending: the oldest first
    # Whether it changed since it was stored or loaded (adapters/episode_snapshots.py).
    changed: bool = True

    def read_from(self, model: str | None) -> str | None:
        """The sort key to read again from (inclusive); None when nothing is kept."""
        if not self.keys:
            return None
        start = self.keys[-1]
        if model is not None:
            for sk in self.keys[-RECENT_EPISODES:]:
                vector = self.by_key[sk].entry.vector
                if vector is None or vector.model != model:
                    return sk
        return start

    def merge(self, found: Iterable[tuple[str, CachedEpisode]]) -> int:
        """Keep the episodes read; return how many were not kept before."""
        added = 0
        for sk, episode in found:
            kept = self.by_key.get(sk)
            if kept is None:
                insort(self.keys, sk)
                added += 1
            elif kept == episode:
                continue  # read again as it was (each read starts at the newest kept): the same object stays
            self.by_key[sk] = episode
            self.changed = True
        return added

    def mark_stored(self) -> None:
        """As stored, or as loaded from storage: unchanged since."""
        self.changed = False

    def keep_newest(self, count: int) -> None:
        excess, self.keys = self.keys[: max(0, len(self.keys) - count)], self.keys[-count:] if count else []
        for sk in excess:
            del self.by_key[sk]
        self.changed = self.changed or bool(excess)

    def current(self, now_epoch: int) -> list[Indexed]:
        return [episode.entry for sk in self.keys if (episode := self.by_key[sk]).alive(now_epoch)]


EpisodeReader = Callable[[str | None], list[tuple[str, CachedEpisode]]]


class EpisodeCache:
    """Users' episodes by (tenant, user), checked against their memory item on every use."""

    def __init__(self, max_kept: int, max_episodes: int = MAX_EPISODES) -> None:
        self._max_kept = max_kept  # MEMORY_MAX_EPISODES: what a trim leaves
        self._max_episodes = max_episodes
        self._users: OrderedDict[tuple[str, str], UserEpisodes] = OrderedDict()

    def episodes(
        self, user: tuple[str, str], state: MemoryState, model: str | None, read: EpisodeReader
    ) -> UserEpisodes:
        """The user's episodes as of `state` (the memory item, read before the episodes);
        `read(start)` reads those from the sort key `start` on (None: all)."""
        kept = self._users.pop(user, None)
        if kept is not None and not self._refresh(kept, state, model, read):
            kept = None
        if kept is None:
            kept = UserEpisodes(
                state.generation, state.episode_count, state.episodes_revision, state.episodes_written
            )
            kept.merge(read(None))
        self._users[user] = kept
        self._bound()
        return kept

    def next_read(self, user: tuple[str, str], model: str | None) -> str | None:
        """Where the next `episodes` call for `user` will read from if its copy is still good (None:
        nothing kept), so a store can read those episodes in the same request as the memory item."""
        kept = self._users.get(user)
        return kept.read_from(model) if kept is not None else None

    def holds(self, user: tuple[str, str]) -> bool:
        return user in self._users

    def adopt(self, user: tuple[str, str], copy: UserEpisodes) -> None:
        """Start from a stored copy (checked against the memory item at the next `episodes` call)."""
        self._users[user] = copy
        self._bound()

    def forget(self, user: tuple[str, str]) -> None:
        self._users.pop(user, None)

    def _refresh(
        self, kept: UserEpisodes, state: MemoryState, model: str | None, read: EpisodeReader
    ) -> bool:
        """Bring the copy up to date; False when it must be read whole instead."""
        if (kept.generation, kept.revision) != (state.generation, state.episodes_revision):
            return False
        start = kept.read_from(model)
        if start is None:
            return False
        added = kept.merge(read(start))
        if state.episodes_written != kept.written + added:
            return False  # one written out of order, before where this read began
        expected = kept.episode_count + added
        if len(kept.keys) > self._max_kept:
            kept.keep_newest(self._max_kept)
        if state.episode_count not in (expected, len(kept.keys)):
            return False
        kept.changed = kept.changed or kept.episode_count != state.episode_count
        kept.episode_count, kept.written = state.episode_count, state.episodes_written
        return True

    def _bound(self) -> None:
        total = sum(len(user.keys) for user in self._users.values())
        while total > self._max_episodes and len(self._users) > 1:
            _, dropped = self._users.popitem(last=False)
            total -= len(dropped.keys)
