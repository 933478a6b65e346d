"""The recall function's copy of a user's episodes (adapters/episode_cache.py): what it reads again,
and that it never answers with an episode the partition no longer has nor misses one it has."""

from datetime import UTC, datetime

from hippocampus.adapters.episode_cache import MAX_AGE_S, CachedEpisode, EpisodeCache
from hippocampus.contracts.models import Episode
from hippocampus.contracts.recall_ports import Indexed, Vector

USER = ("acme", "alice")
MODEL = "offline-hashed-v1@256"


def episode(n: int, vector: bool = True, expires_at: int | None = None) -> tuple[str, CachedEpisode]:
    document = Episode(
        id=f"t{n}", job_id=f"job-{n}", text=f"Turn {n}", created_at=datetime(2026, 1, 1, tzinfo=UTC)
    )
    stored = Vector(MODEL, (1.0, 0.0)) if vector else None
    return f"EPISODE#{n:013d}#000#job-{n}", CachedEpisode(Indexed(document, stored), expires_at)


class Partition:
    """The episodes in the table, and every read the cache makes of them."""

    def __init__(self, *numbers: int) -> None:
        self.items = dict(episode(n) for n in numbers)
        self.reads: list[str | None] = []

    def add(self, n: int, vector: bool = True) -> None:
        self.items.update([episode(n, vector)])

    def read(self, start: str | None) -> list[tuple[str, CachedEpisode]]:
        self.reads.append(start)
        return sorted((sk, e) for sk, e in self.items.items() if start is None or sk >= start)


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def ids(cache: EpisodeCache, partition: Partition, count: int, generation: int = 0) -> list[str]:
    kept = cache.episodes(USER, generation, count, MODEL, partition.read)
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
    kept = cache.episodes(USER, 0, 4, MODEL, partition.read)
    assert partition.reads[-1] == episode(3)[0]
    assert all(entry.vector is not None for entry in kept.current(0))
    ids(cache, partition, 4)
    assert partition.reads[-1] == episode(4)[0]  # nothing waits: from the newest on


def test_a_vector_of_another_model_counts_as_none() -> None:
    cache, partition = EpisodeCache(max_kept=2000), Partition(1, 2)
    cache.episodes(USER, 0, 2, "another-model@128", partition.read)
    cache.episodes(USER, 0, 2, "another-model@128", partition.read)
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
    kept = expiring.episodes(USER, 0, 1, MODEL, lambda _: [episode(1, expires_at=500)])
    assert [e.document.id for e in kept.current(now_epoch=499)] == ["t1"]
    assert kept.current(now_epoch=500) == []


def test_a_copy_older_than_its_maximum_age_is_read_whole_again() -> None:
    clock = Clock()
    cache, partition = EpisodeCache(max_kept=2000, clock=clock), Partition(1)
    ids(cache, partition, 1)
    clock.now += MAX_AGE_S + 1
    ids(cache, partition, 1)
    assert partition.reads == [None, None]


def test_the_least_recently_queried_users_are_dropped_past_the_bound() -> None:
    cache = EpisodeCache(max_kept=2000, max_episodes=4)
    first, second = Partition(1, 2, 3), Partition(4, 5, 6)
    cache.episodes(("acme", "first"), 0, 3, MODEL, first.read)
    cache.episodes(("acme", "second"), 0, 3, MODEL, second.read)
    cache.episodes(("acme", "first"), 0, 3, MODEL, first.read)
    assert first.reads == [None, None]  # dropped when the second user came
    cache.episodes(("acme", "first"), 0, 3, MODEL, first.read)
    assert first.reads[-1] == episode(3)[0]  # kept now: the one user held
