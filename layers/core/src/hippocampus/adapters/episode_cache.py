"""What a warm recall function keeps of its users' episodes, so that a query reads only what changed
(docs/architecture.md "Recall").

Episodes are written once, appended (their sort keys grow with the time their item was accepted),
get a vector once, and leave oldest first (the cap's trim; the raw-payload TTL, filtered on read)
or all at once (a delete changes the user's generation). So each query, after reading the memory
item with the facts, reads again only the episodes from the newest one kept, or from the oldest of
the newest RECENT_EPISODES still lacking a vector of the model (the indexer's window), and checks
the copy against the memory's `episode_count` (every episode written and not trimmed):

- the count is what the copy accounts for (the count it last saw plus the episodes it found
  since, or what is left after a trim to MEMORY_MAX_EPISODES): the copy is the partition's;
- otherwise (an episode written out of order, e.g. redriven from the DLQ; a trim after TTL
  deletions), or with another generation, or after MAX_AGE_S (a re-index of old episodes): the
  user's episodes are read whole again.

Bounded: at most MAX_EPISODES episodes for all users together, the least recently queried users
dropped first; ~9 KB an episode with a 256-dimension vector (Python floats: a tuple ranks twice
as fast as an array of them), ~180 MB at most of the recall function's 1,024. Ranking keeps
~1.4 KB more of a kept episode (its document and its context, domain/recall/: ~30 MB at most).
"""

import time
from bisect import insort
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from hippocampus.contracts.recall_ports import RECENT_EPISODES, Indexed

MAX_EPISODES: Final = 20_000
MAX_AGE_S: Final = 300.0


@dataclass
class CachedEpisode:
    entry: Indexed
    expires_at: int | None  # the item's TTL (epoch seconds)


@dataclass
class UserEpisodes:
    """One user's episodes as of `episode_count`, by sort key."""

    generation: int
    episode_count: int
    loaded_at: float
    by_key: dict[str, CachedEpisode] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)  # ascending: the oldest first

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
        return added

    def keep_newest(self, count: int) -> None:
        excess, self.keys = self.keys[: max(0, len(self.keys) - count)], self.keys[-count:] if count else []
        for sk in excess:
            del self.by_key[sk]

    def current(self, now_epoch: int) -> list[Indexed]:
        return [
            episode.entry
            for sk in self.keys
            if (episode := self.by_key[sk]).expires_at is None or episode.expires_at > now_epoch
        ]


EpisodeReader = Callable[[str | None], list[tuple[str, CachedEpisode]]]


class EpisodeCache:
    """Users' episodes by (tenant, user), checked against their memory item on every use."""

    def __init__(
        self,
        max_kept: int,
        max_episodes: int = MAX_EPISODES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_kept = max_kept  # MEMORY_MAX_EPISODES: what a trim leaves
        self._max_episodes = max_episodes
        self._clock = clock
        self._users: OrderedDict[tuple[str, str], UserEpisodes] = OrderedDict()

    def episodes(
        self,
        user: tuple[str, str],
        generation: int,
        episode_count: int,
        model: str | None,
        read: EpisodeReader,
    ) -> UserEpisodes:
        """The user's episodes; `read(start)` reads those from the sort key `start` on (None: all)."""
        kept = self._users.pop(user, None)
        if kept is not None and not self._refresh(kept, generation, episode_count, model, read):
            kept = None
        if kept is None:
            kept = UserEpisodes(generation, episode_count, self._clock())
            kept.merge(read(None))
        self._users[user] = kept
        self._bound()
        return kept

    def next_read(self, user: tuple[str, str], model: str | None) -> str | None:
        """Where the next `episodes` call for `user` will read from if its copy is still good (None:
        nothing kept), so a store can read those episodes in the same request as the memory item."""
        kept = self._users.get(user)
        return kept.read_from(model) if kept is not None and self._young(kept) else None

    def forget(self, user: tuple[str, str]) -> None:
        self._users.pop(user, None)

    def _refresh(
        self, kept: UserEpisodes, generation: int, episode_count: int, model: str | None, read: EpisodeReader
    ) -> bool:
        """Bring the copy up to date; False when it must be read whole instead."""
        if kept.generation != generation or not self._young(kept):
            return False
        start = kept.read_from(model)
        if start is None:
            return False
        expected = kept.episode_count + kept.merge(read(start))
        if len(kept.keys) > self._max_kept:
            kept.keep_newest(self._max_kept)
        if episode_count not in (expected, len(kept.keys)):
            return False
        kept.episode_count = episode_count
        return True

    def _young(self, kept: UserEpisodes) -> bool:
        """Read whole within MAX_AGE_S: older, it may miss a re-index of old episodes."""
        return self._clock() - kept.loaded_at <= MAX_AGE_S

    def _bound(self) -> None:
        total = sum(len(user.keys) for user in self._users.values())
        while total > self._max_episodes and len(self._users) > 1:
            _, dropped = self._users.popitem(last=False)
            total -= len(dropped.keys)
