"""A warm recall function reads again only what changed in the user's partition, and still answers
as a whole read would (adapters/episode_cache.py, docs/architecture.md "Recall"), on moto."""

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from hippocampus import wiring
from hippocampus.adapters import aws_clients
from hippocampus.adapters.dynamodb_table import Table
from hippocampus.contracts.models import Episode
from tests.support.lambda_harness import Service
from tests.support.recall_turns import MEMORY, T, U, found, ingest


def test_the_next_query_reads_only_the_new_turn_and_finds_it(service: Service, items_read: list[int]) -> None:
    ingest(service, *(f"Turn {n} about the candle shop." for n in range(30)))
    assert found(service, "candle shop")
    items_read.clear()
    ingest(service, "We now also sell soap in Porto.")
    items_read.clear()
    assert found(service, "soap in Porto")[0] == "We now also sell soap in Porto."
    # One Query: the newest episode kept and the new one, then the memory item and the one record
    # the stand-in learned (no facts).
    assert items_read == [4]


def test_a_turn_written_out_of_order_is_found(service: Service, aws: Any) -> None:
    ingest(service, "The shop opened in Lyon.")
    assert found(service, "Lyon")
    state, _ = wiring.memory_store().read_memory(T, U, with_facts=False)
    late = Episode(
        id="late",
        job_id="job-late",
        text="Redriven: the supplier in Porto was paid.",
        created_at=datetime(2020, 1, 1, tzinfo=UTC),  # sorts before every episode kept
    )
    # As the condenser writes an episode: the item, and the memory's episode count.
    table = Table(aws.table_name, lambda: aws_clients.client("dynamodb"))
    table.transact(wiring.episode_store().counted_puts(T, U, state.generation, [late]))
    assert found(service, "supplier Porto paid")[0] == "Redriven: the supplier in Porto was paid."


def test_a_trimmed_turn_is_never_returned(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_MAX_EPISODES", "2")
    wiring.reset()
    capped = Service(aws.queue_url, boto3.client("sqs"))
    for n in range(4):
        ingest(capped, f"Turn {n} about candles.")
        assert len(found(capped, "candles")) == min(n + 1, 2)
    assert found(capped, "candles") == ["Turn 3 about candles.", "Turn 2 about candles."]


def test_after_a_delete_nothing_of_the_user_comes_back(service: Service) -> None:
    ingest(service, "The shop opened in Lyon.")
    assert found(service, "Lyon")
    assert service.call("DELETE", MEMORY).status == 204
    assert found(service, "Lyon") == []
    ingest(service, "A new start in Nantes.")
    assert found(service, "Lyon Nantes") == ["A new start in Nantes."]


def test_a_turn_condensed_while_a_query_reads_leaves_no_trimmed_turn_behind(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm query's one Query crosses a page boundary (between the memory item and the episodes)
    while a condensation at the episode cap commits its turn and trims the oldest."""
    monkeypatch.setenv("MEMORY_MAX_EPISODES", "3")
    wiring.reset()
    capped = Service(aws.queue_url, boto3.client("sqs"))
    for n in range(3):
        ingest(capped, f"Turn {n} about candles.")
    assert len(found(capped, "candles")) == 3
    read_partition = Table.query_partition
    boundary = {"armed": True}

    def one_page_then_a_condensation(self: Table, pk: str, **options: Any) -> Any:
        pages = read_partition(self, pk, **options)
        if not (boundary["armed"] and options.get("highest_first")):
            yield from pages
            return
        boundary["armed"] = False
        yield from (raw for raw in pages if raw["sk"]["S"] >= "FACT#")  # the records, memory, facts
        ingest(capped, "Turn 3 about candles.")  # commits while the Query is between two pages
        episodes = {**options, "sk_prefix": "EPISODE#"}
        yield from read_partition(self, pk, **episodes)

    monkeypatch.setattr(Table, "query_partition", one_page_then_a_condensation)
    during = found(capped, "candles")
    assert not boundary["armed"]  # the boundary was crossed
    assert "Turn 0 about candles." not in during  # trimmed by the condensation
    assert "Turn 3 about candles." in during
    assert sorted(found(capped, "candles")) == [f"Turn {n} about candles." for n in (1, 2, 3)]
