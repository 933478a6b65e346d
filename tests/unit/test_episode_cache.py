"""The recall function's copy of a user's episodes (adapters/episode_cache.py): what it reads again,
and that it never answers with an episode the partition no longer has nor misses one it has."""

from datetime import UTC, datetime

from hippocampus.adapters.episode_cache import CachedEpisode, EpisodeCache, UserEpisodes
from hippocampus.contracts.memory_state import MemoryState
from hippocampus.contracts.models import Episode
from hippocampus.contracts.recall_ports import Indexed, Vector

USER = ("acme", "alice")
MODEL = "offline-hashed-v1@256"


def episode(n: int, vector: bool = True, expires_at: int | None = None) -> tuple[str, CachedEpisode]:
    document = Episode(
        id=f"t{n}", job_id=f"job-{n}", text=f"Turn {n}", created_at=datetime(2026, 1, 1, tzinfo=UTC)
    )
    stored = Vector.of(MODEL, (1.0, 0.0)) if vector else None
    return f"EPISODE#{n:013d}#000#job-{n}", CachedEpisode(Indexed(document, stored), expires_at)


class Partition:
    """The episodes in the table, and every read the cache makes of them."""

    def __init__(self, *numbers: int) -> None:
        self.items = dict(episode(n) for n in numbers)
        self.written = len(numbers)  # every episode ever written: the memory's episodes_written
        self.reads: list[str | None] = []

    def add(self, n: int, vector: bool = True) -> None:
        self.written += episode(n)[0] not in self.items  # a vector given later writes no new episode
        self.items.update([episode(n, vector)])

    def read(self, start: str | None) -> list[tuple[str, CachedEpisode]]:
        self.reads.append(start)
        return sorted((sk, e) for sk, e in self.items.items() if start is None or sk >= start)


def at(count: int, generation: int = 0, revision: int = 0, written: int | None = None) -> MemoryState:
    """The memory item as read before the episodes (`written`: as many as `count` unless told)."""
    return MemoryState(
        generation=generation,
        episode_count=count,
        episodes_revision=revision,
        episodes_written=count if written is None else written,
    )


def ids(
    cache: EpisodeCache, partition: Partition, count: int, generation: int = 0, revision: int = 0
) -> list[str]:
    kept = cache.episodes(USER, at(count, generation, revision, partition.written), MODEL, partition.read)
    return [entry.document.id for entry in kept.current(now_epoch=0)]


def test_the_first_query_reads_everything_and_the_next_only_from_the_newest_episode() -> None:
    cache, partition = EpisodeCache(max_kept=2000), Partition(1, 2, 3)
    assert ids(cache, partition, 3) == ["t1", "t2", "t3"]
    partition.add(4)
    assert ids(cache, partition, 4) == ["t1", "t2", "t3", "t4"]
    assert partition.reads == [None, episode(3)[0]]


def test_an_episode_written_before_the_newest_one_kept_is_not_missed() -> None:
    cache, partition = EpisodeCache(max_kept=2000), Partition(1, 5)
    ids(cache, partition, 2)
    partition.add(3)  # e.g. redriven from the DLQ: older than the newest episode kept
    assert ids(cache, partition, 3) == ["t1", "t3", "t5"]
    assert partition.reads[-1] is None  # the count did not add up: read whole again


def test_episodes_still_waiting_for_a_vector_are_read_again_until_they_have_one() -> None:
    cache, partition = EpisodeCache(max_kept=2000), Partition(1, 2)
    partition.add(3, vector=False)
    partition.add(4, vector=False)
    ids(cache, partition, 4)
    partition.add(3)  # the indexer gave it its vector
    partition.add(4)
    kept = cache.episodes(USER, at(4, written=partition.written), MODEL, partition.read)
    assert partition.reads[-1] == episode(3)[0]
    assert all(entry.vector is not None for entry in kept.current(0))
    ids(cache, partition, 4)
    assert partition.reads[-1] == episode(4)[0]  # nothing waits: from the newest on


def test_a_vector_of_another_model_counts_as_none() -> None:
    cache, partition = EpisodeCache(max_kept=2000), Partition(1, 2)
    cache.episodes(USER, at(2, 0), "another-model@128", partition.read)
    cache.episodes(USER, at(2, 0), "another-model@128", partition.read)
    assert partition.reads[-1] == episode(1)[0]


def test_a_delete_a_trim_and_expiry_never_leave_an_episode_behind() -> None:
    cache, partition = EpisodeCache(max_kept=2), Partition(1, 2)
    ids(cache, partition, 2)
    partition.add(3)
    del partition.items[episode(1)[0]]  # the condenser's trim to the newest 2
    assert ids(cache, partition, 2) == ["t2", "t3"]
    partition.items = dict([episode(7)])
    assert ids(cache, partition, 1, generation=1) == ["t7"]  # deleted: another generation
    assert partition.reads[-1] is None
    expiring = EpisodeCache(max_kept=10)
    kept = expiring.episodes(USER, at(1), MODEL, lambda _: [episode(1, expires_at=500)])
    assert [e.document.id for e in kept.current(now_epoch=499)] == ["t1"]
    assert kept.current(now_epoch=500) == []


def test_an_episode_forgotten_at_the_cap_is_never_returned_even_when_the_count_adds_up() -> None:
    cache, partition = EpisodeCache(max_kept=3), Partition(1, 2, 3)
    ids(cache, partition, 3)
    del partition.items[episode(2)[0]]  # forgotten: the count goes down, the revision up
    partition.add(4)  # then a turn: the count is 3 again, as a trim of the oldest would leave it
    assert ids(cache, partition, 3, revision=1) == ["t1", "t3", "t4"]
    assert partition.reads[-1] is None


def test_an_episode_dated_before_the_copy_at_the_cap_is_found_and_the_trimmed_one_is_not() -> None:
    cache, partition = EpisodeCache(max_kept=3), Partition(1, 3, 5)
    ids(cache, partition, 3)
    partition.add(2)  # a turn dated in the past: its key falls between those kept
    del partition.items[episode(1)[0]]  # the trim at the cap takes the oldest: the count is 3 again
    assert ids(cache, partition, 3) == ["t2", "t3", "t5"]
    assert partition.reads[-1] is None  # the read from the newest found fewer than were written


def test_a_re_index_of_old_episodes_makes_the_copy_read_whole_again() -> None:
    cache, partition = EpisodeCache(max_kept=2000), Partition(1, 2)
    ids(cache, partition, 2)
    ids(cache, partition, 2, revision=1)
    assert partition.reads == [None, None]


def test_a_stored_copy_is_read_from_its_newest_episode_only_when_it_still_holds() -> None:
    cache, partition = EpisodeCache(max_kept=2000), Partition(1, 2, 3)
    stored = UserEpisodes(generation=0, episode_count=2, revision=0, written=2)
    stored.merge([episode(1), episode(2)])
    cache.adopt(USER, stored)
    assert ids(cache, partition, 3) == ["t1", "t2", "t3"]
    assert partition.reads == [episode(2)[0]]
    cache.forget(USER)
    cache.adopt(USER, stored)
    assert ids(cache, partition, 3, generation=1) == ["t1", "t2", "t3"]  # another life: read whole
    assert partition.reads[-1] is None


def test_the_least_recently_queried_users_are_dropped_past_the_bound() -> None:
    cache = EpisodeCache(max_kept=2000, max_episodes=4)
    first, second = Partition(1, 2, 3), Partition(4, 5, 6)
    cache.episodes(("acme", "first"), at(3, 0), MODEL, first.read)
    cache.episodes(("acme", "second"), at(3, 0), MODEL, second.read)
    cache.episodes(("acme", "first"), at(3, 0), MODEL, first.read)
    assert first.reads == [None, None]  # dropped when the second user came
    cache.episodes(("acme", "first"), at(3, 0), MODEL, first.read)
    assert first.reads[-1] == episode(3)[0]  # kept now: the one user held
