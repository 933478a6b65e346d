"""Many writers of one user's facts at once, on the fakes (docs/architecture.md "Fact limits"): none
waits for another, the limits hold, a request refused or out of tries writes nothing, and the
counts the limits are checked on stay those of the facts stored."""

import itertools
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from hippocampus.contracts.errors import ConditionFailed, LimitExceeded, NotFound, WriteConflict
from hippocampus.contracts.fact_ports import FactCounts
from hippocampus.contracts.models import Fact, IngestRequest, Job
from hippocampus.domain.ingest.fact_rules import live_counts
from hippocampus.domain.ingest.service import IngestService
from tests.support.fakes import Ports

T, U = "acme", "alice"
REQUEST_IDS = itertools.count()


@pytest.fixture
def ports() -> Ports:
    return Ports()


def fact(fact_id: str, text: str = "x") -> dict[str, Any]:
    return {"id": fact_id, "text": text, "infer": False}


def facts(prefix: str, count: int) -> list[dict[str, Any]]:
    return [fact(f"{prefix}{index}") for index in range(count)]


def ingest(ports: Ports, items: list[dict[str, Any]], **request: Any) -> list[Job]:
    body = IngestRequest.model_validate({"items": items, **request})
    return ports.ingest().ingest(T, U, body, f"r{next(REQUEST_IDS)}").jobs


def fill(ports: Ports, prefix: str, count: int) -> None:
    """`count` facts, in requests of 100 (the most a request holds)."""
    for start in range(0, count, 100):
        ingest(ports, [fact(f"{prefix}{index}") for index in range(start, min(count, start + 100))])


def stored_ids(ports: Ports) -> set[str]:
    return {fact.id for fact in ports.reads().get_memory(T, U).facts}


def counts(ports: Ports) -> FactCounts | None:
    return ports.store.read_facts(T, U).counts


def assert_counts_exact(ports: Ports) -> None:
    ledger = ports.store.read_facts(T, U)
    assert ledger.counts == live_counts(ledger)


def test_twenty_concurrent_writers_of_one_user_are_all_applied_and_counted(ports):
    def write(writer: int) -> list[Job]:
        return ingest(ports, [*facts(f"w{writer}-", 3), {"text": f"Writer {writer} said hello."}])

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(write, range(20)))
    assert all([job.status for job in jobs] == ["completed"] * 3 + ["queued"] for jobs in answers)
    assert stored_ids(ports) == {f"w{w}-{i}" for w in range(20) for i in range(3)}
    assert counts(ports) is not None and counts(ports).facts == 60  # type: ignore[union-attr]
    assert_counts_exact(ports)


def test_writers_racing_past_the_limit_store_exactly_the_limit_and_the_refused_write_nothing(ports):
    def write(writer: int) -> str:
        try:
            ingest(ports, facts(f"w{writer}-", 15))
        except LimitExceeded as refused:
            assert "at most 200 facts" in refused.message
            return "refused"
        return "stored"

    with ThreadPoolExecutor(max_workers=20) as pool:
        outcomes = list(pool.map(write, range(20)))
    stored = stored_ids(ports)
    assert len(stored) == 195 and outcomes.count("stored") == 13  # 13 x 15; a 14th would make 210
    # A refused request wrote nothing: every writer's facts are there whole or not at all.
    assert {fact_id.split("-")[0] for fact_id in stored} == {
        f"w{w}" for w, o in enumerate(outcomes) if o == "stored"
    }
    assert len(ports.jobs.jobs) == 195
    assert_counts_exact(ports)


def test_a_fact_written_between_the_read_and_the_commit_is_counted_once(ports):
    fill(ports, "a", 198)
    ports.store.before_fact = lambda: ingest(ports, [fact("rival")])  # 199 facts
    with pytest.raises(LimitExceeded, match="this request would make 201"):
        ingest(ports, [fact("late-1"), fact("late-2")])
    assert "late-1" not in stored_ids(ports) and len(stored_ids(ports)) == 199
    assert_counts_exact(ports)


def test_a_request_refused_for_the_limit_writes_nothing_not_even_its_turns(ports):
    fill(ports, "a", 200)
    jobs_before = dict(ports.jobs.jobs)
    with pytest.raises(LimitExceeded):
        ingest(ports, [{"text": "I sell candles."}, fact("one-more")])
    assert ports.jobs.jobs == jobs_before and ports.raw_payloads() == 0 and ports.queue.messages == []
    # Nothing lingers: replacing a stored fact goes through at once.
    assert [job.status for job in ingest(ports, [fact("a0", "Replaced.")])] == ["completed"]
    assert_counts_exact(ports)


def test_a_request_that_keeps_losing_its_commit_answers_409_having_written_nothing(ports, monkeypatch):
    losses = 0

    def always_lose(*_: Any) -> None:
        nonlocal losses
        losses += 1
        raise ConditionFailed("a concurrent writer won")

    monkeypatch.setattr(ports.store, "commit_facts", always_lose)
    pauses: list[float] = []
    # The retries without waiting: the pauses are recorded, and count towards the 3 s of tries.
    service = IngestService(
        ports.store, ports.jobs, ports.archive, lambda: ports.queue, ports.tracing, sleep=pauses.append
    )
    with pytest.raises(WriteConflict):
        service.ingest(T, U, IngestRequest.model_validate({"items": [fact("f1")]}), "r")
    # Each loss but the last is followed by a pause; the tries end within the 3 s (on a busy
    # machine the clock may end them before the pauses add up to it).
    assert losses == len(pauses) + 1 and losses > 10
    assert max(pauses) <= 0.2 and sum(pauses) <= 3.2
    assert len(set(pauses)) > 1  # jittered: writers that lost together do not come back together
    assert ports.jobs.jobs == {} and stored_ids(ports) == set()


def test_facts_stored_before_facts_were_counted_are_counted_on_the_next_write(ports):
    ingest(ports, [fact("first")])
    user = ports.store.users[(T, U)]
    legacy = Fact(id="old", text="Stored before the counts.", updated_at=datetime(2026, 1, 1, tzinfo=UTC))
    # No size and no counts: as a user stored before the counts reads after the upgrade.
    user.facts["old"] = (legacy, user.state.generation)
    user.sizes.clear()
    user.counts = None
    ingest(ports, [fact("new")])
    assert counts(ports) is not None and counts(ports).facts == 3  # type: ignore[union-attr]
    assert_counts_exact(ports)
    assert [job.status for job in ingest(ports, [fact("old", "Replaced.")])] == ["completed"]
    assert counts(ports).facts == 3  # type: ignore[union-attr]
    assert_counts_exact(ports)


def test_counts_above_the_facts_are_rebased_instead_of_refusing(ports):
    """An expired fact or a request that failed half-way leaves the counts high: at the limit they
    are counted again from the facts, never below them."""
    ingest(ports, facts("a", 5))
    ports.store.users[(T, U)].counts = FactCounts(200, 10_000)
    assert [job.status for job in ingest(ports, [fact("b")])] == ["completed"]
    assert counts(ports) == FactCounts(6, counts(ports).bytes)  # type: ignore[union-attr]
    assert_counts_exact(ports)


def test_requests_of_several_commits_hold_the_limits_and_the_counts(ports):
    ingest(ports, facts("a", 100))  # 100 facts: in several commits (33 facts a commit)
    ingest(ports, facts("b", 60))
    jobs_before = len(ports.jobs.jobs)
    with pytest.raises(LimitExceeded, match="would make 201"):
        ingest(ports, facts("c", 41))
    assert len(ports.jobs.jobs) == jobs_before and len(stored_ids(ports)) == 160  # none of the 41
    ingest(ports, facts("c", 40))
    assert len(stored_ids(ports)) == 200
    assert_counts_exact(ports)


def test_a_later_commit_leaves_a_fact_changed_meanwhile_to_its_later_writer(ports):
    """Of a request of 40 facts, f35 is replaced by a rival after the first commit: the rival's
    text stays (this request is ordered first), both jobs say completed, the counts hold."""
    items = [fact(f"f{index}", "Mine.") for index in range(40)]

    def after_the_first_commit() -> None:
        ports.store.before_fact = lambda: ingest(ports, [fact("f35", "Rival.")])

    ports.store.before_fact = after_the_first_commit
    jobs = ingest(ports, items)
    assert [job.status for job in jobs] == ["completed"] * 40
    stored = {fact.id: fact.text for fact in ports.reads().get_memory(T, U).facts}
    assert len(stored) == 40 and stored["f35"] == "Rival." and stored["f34"] == "Mine."
    assert_counts_exact(ports)


def test_upsert_false_in_a_later_commit_skips_a_fact_a_rival_wrote_meanwhile(ports):
    items = [fact(f"f{index}", "Mine.") for index in range(40)]

    def after_the_first_commit() -> None:
        ports.store.before_fact = lambda: ingest(ports, [fact("f35", "Rival.")])

    ports.store.before_fact = after_the_first_commit
    jobs = ingest(ports, items, upsert=False)
    assert jobs[35].status == "skipped" and jobs[35].error is not None
    assert jobs[35].error.code == "fact_exists"
    assert [job.status for job in jobs[:35]] == ["completed"] * 35
    assert_counts_exact(ports)


def test_deleting_a_fact_takes_it_off_the_counts(ports):
    fill(ports, "a", 200)
    edits = ports.edits()
    edits.delete_fact(T, U, "a7")
    assert counts(ports).facts == 199  # type: ignore[union-attr]
    assert [job.status for job in ingest(ports, [fact("b")])] == ["completed"]  # room again
    with pytest.raises(NotFound):
        edits.delete_fact(T, U, "a7")
    assert_counts_exact(ports)


def test_a_delete_of_a_fact_replaced_meanwhile_is_decided_again(ports):
    ingest(ports, [fact("f1", "Short.")])
    ports.store.before_fact = lambda: ingest(ports, [fact("f1", "A much longer text than before.")])
    ports.edits().delete_fact(T, U, "f1")
    assert stored_ids(ports) == set() and counts(ports) == FactCounts(0, 0)


def test_a_forget_drops_the_counts_and_the_new_life_counts_from_nothing(ports):
    fill(ports, "a", 200)
    ports.edits().delete_memory(T, U)
    assert counts(ports) is None
    assert [job.status for job in ingest(ports, facts("b", 3))] == ["completed"] * 3
    assert counts(ports).facts == 3  # type: ignore[union-attr]
    assert_counts_exact(ports)
