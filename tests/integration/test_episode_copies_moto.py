"""The stored copy of a user's episodes that a recall function's first query starts from
(adapters/episode_snapshots.py, docs/architecture.md "Recall"), on moto: kept by the condenser,
read by a function that has not ranked the user, and gone with what it copies."""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from hippocampus import wiring
from hippocampus.adapters import aws_clients, dynamodb_recall
from hippocampus.adapters.dynamodb_recall import DynamoRecallStore
from hippocampus.adapters.episode_snapshots import EpisodeSnapshots, snapshot_key
from hippocampus.adapters.vector_codec import VECTOR_ATTRIBUTE
from hippocampus.contracts.names import RECALL_EXPIRY_TAG
from tests.support.lambda_harness import Service
from tests.support.recall_turns import MEMORY, T, U, found, ingest


@pytest.fixture(autouse=True)
def every_user_worth_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A few turns stand for a long history: a fresh function reads the copy of any user."""
    monkeypatch.setattr(dynamodb_recall, "COPY_WORTH_READING", 1)


def scored(service: Service, text: str) -> list[tuple[str, float]]:
    """The episodes a query finds, best first, with their scores."""
    response = service.call("POST", MEMORY + "/query", {"query": text, "types": ["episode"]})
    assert response.status == 200, response.body
    return [(result["text"], result["score"]) for result in response.body["results"]]


def another_function() -> None:
    """As in a recall function that has not ranked this user (the stored copy stays)."""
    wiring.recall_service.cache_clear()
    wiring.recall_store.cache_clear()


def stored(aws: Any) -> dict[str, Any] | None:
    try:
        body = boto3.client("s3").get_object(Bucket=aws.bucket_name, Key=snapshot_key(T, U))["Body"]
    except boto3.client("s3").exceptions.NoSuchKey:
        return None
    document: dict[str, Any] = json.loads(body.read())
    return document


def test_a_first_query_starts_from_the_stored_copy_and_reads_only_what_is_newer(
    service: Service, aws: Any, items_read: list[int]
) -> None:
    ingest(service, *(f"Turn {n} about the candle shop." for n in range(30)))
    copy = stored(aws)
    assert copy is not None and len(copy["episodes"]) == 30
    assert all(VECTOR_ATTRIBUTE in row for row in copy["episodes"])  # kept after the vectors were made
    whole = scored(service, "candle shop Turn 7")
    another_function()
    items_read.clear()
    assert scored(service, "candle shop Turn 7") == whole  # the same vectors: the same scores
    # The memory item (no facts, and no record learned from these turns), read while the copy is;
    # then the episodes from the copy's newest: that one alone. A whole read reads the 30 episodes.
    assert items_read == [1, 1]
    boto3.client("s3").delete_object(Bucket=aws.bucket_name, Key=snapshot_key(T, U))
    another_function()
    items_read.clear()
    assert scored(service, "candle shop Turn 7") == whole  # read whole from the table: the same
    assert items_read == [1, 30]


def test_a_copy_behind_the_partition_is_brought_up_to_date_by_the_first_query(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest(service, "The shop opened in Lyon.")
    # The copy is not kept this once (S3 refused it): the partition is ahead of it.
    monkeypatch.setattr(EpisodeSnapshots, "store", lambda *_: (_ for _ in ()).throw(OSError("S3 is down")))
    ingest(service, "We now also sell soap in Porto.")
    monkeypatch.undo()
    another_function()
    assert found(service, "soap Porto")[0] == "We now also sell soap in Porto."
    assert "The shop opened in Lyon." in found(service, "shop Lyon")


def test_a_forgotten_episode_leaves_no_copy_and_is_never_found_again(service: Service, aws: Any) -> None:
    ingest(service, "My phone number changed to the one ending 4471.", "The shop opened in Lyon.")
    assert stored(aws) is not None
    episodes = service.call("GET", MEMORY + "/episodes").body["episodes"]
    secret = next(e["id"] for e in episodes if "4471" in e["text"])
    forgotten = service.call("DELETE", f"{MEMORY}/episodes/{secret}")
    assert forgotten.status == 202, forgotten.body
    receipt = service.call("GET", f"{MEMORY}/deletions/{forgotten.body['receipt_id']}").body
    assert receipt["erased"]["s3"]["episode_copies"] == 1
    assert stored(aws) is None
    another_function()
    assert all("4471" not in text for text in found(service, "phone number 4471"))


def test_deleting_the_user_erases_the_copy_and_counts_it(service: Service, aws: Any) -> None:
    ingest(service, "The shop opened in Lyon.")
    assert stored(aws) is not None
    deleted = service.call("DELETE", MEMORY)
    assert deleted.status == 204
    receipt = service.call("GET", f"{MEMORY}/deletions/{deleted.headers['deletion-receipt']}").body
    assert receipt["erased"]["s3"]["episode_copies"] == 1
    assert stored(aws) is None
    another_function()
    assert found(service, "Lyon") == []


def test_a_copy_stored_after_a_delete_swept_the_bucket_is_erased_by_its_writer(
    service: Service, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest(service, "The shop opened in Lyon.")
    keep = EpisodeSnapshots.store

    def delete_first(self: EpisodeSnapshots, *args: Any) -> bool:
        monkeypatch.setattr(EpisodeSnapshots, "store", keep)
        assert service.call("DELETE", MEMORY).status == 204  # commits and sweeps recall/ first
        return keep(self, *args)

    monkeypatch.setattr(EpisodeSnapshots, "store", delete_first)
    # The condenser makes its copy afresh (none stored, none held), then stores it late.
    boto3.client("s3").delete_object(Bucket=aws.bucket_name, Key=snapshot_key(T, U))
    wiring.indexing_store.cache_clear()
    wiring.indexer.cache_clear()
    wiring.indexer().index_user(T, U)
    assert EpisodeSnapshots.store is keep  # the delete came in between
    assert stored(aws) is None


def test_the_copy_is_tagged_to_expire_before_its_first_episode(service: Service, aws: Any) -> None:
    ingest(service, "The shop opened in Lyon.")
    tags = boto3.client("s3").get_object_tagging(Bucket=aws.bucket_name, Key=snapshot_key(T, U))["TagSet"]
    days = int(next(tag["Value"] for tag in tags if tag["Key"] == RECALL_EXPIRY_TAG))
    # The episode lives MEMORY_JOB_RETENTION_DAYS (30): whole days left, rounded down to a power of two.
    assert days == 16


def test_an_unreadable_copy_costs_a_whole_read_not_an_answer(service: Service, aws: Any) -> None:
    ingest(service, "The shop opened in Lyon.")
    boto3.client("s3").put_object(Bucket=aws.bucket_name, Key=snapshot_key(T, U), Body=b"{not json")
    another_function()
    assert found(service, "Lyon") == ["The shop opened in Lyon."]


def test_a_condenser_without_time_left_keeps_no_copy(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    service = Service(aws.queue_url, boto3.client("sqs"))
    ingest(service, "The shop opened in Lyon.")
    boto3.client("s3").delete_object(Bucket=aws.bucket_name, Key=snapshot_key(T, U))
    wiring.indexer().index_user(T, U, remaining_ms=lambda: 1_000)
    assert stored(aws) is None


def test_a_copy_its_writer_could_not_check_is_dropped(
    service: Service, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(*_: Any) -> bool:
        raise OSError("DynamoDB timed out reading the memory item again")

    monkeypatch.setattr(DynamoRecallStore, "_raced", unreadable)
    ingest(service, "The shop opened in Lyon.")  # condensed; the copy stored, then not checked
    assert stored(aws) is None
    monkeypatch.undo()
    ingest(service, "We now also sell soap in Porto.")  # the next pass stores one again
    copy = stored(aws)
    assert copy is not None and len(copy["episodes"]) == 2


def test_a_fresh_function_reads_no_copy_of_a_user_with_few_episodes(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Making its S3 client would cost its cold start more than the whole read saves."""
    monkeypatch.setattr(dynamodb_recall, "COPY_WORTH_READING", 100)  # as shipped
    ingest(service, "The shop opened in Lyon.")
    another_function()
    aws_clients.reset_clients()  # a cold start: no client made yet
    assert found(service, "Lyon") == ["The shop opened in Lyon."]
    assert not aws_clients.made("s3", optional_reads=True)


def test_an_episode_past_its_expiry_is_never_found_though_dynamodb_still_holds_it(
    service: Service, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB removes an expired item days later, not at its expiry: until then neither the stored
    copy, nor a function's own copy, nor a whole read serves it."""
    clock = wiring._table()  # the clock the adapters read the time and the items' TTLs by
    start = datetime.now(UTC)
    ingest(service, "The shop opened in Lyon.")  # lives MEMORY_JOB_RETENTION_DAYS (30)
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(days=20))
    ingest(service, "We now also sell soap in Porto.")  # lives to day 50
    copy = stored(aws)
    assert copy is not None and len(copy["episodes"]) == 2
    both = "shop Lyon soap Porto"
    assert sorted(found(service, both)) == ["The shop opened in Lyon.", "We now also sell soap in Porto."]
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(days=31))
    assert found(service, both) == ["We now also sell soap in Porto."]  # the function's own copy
    another_function()
    assert found(service, both) == ["We now also sell soap in Porto."]  # from the stored copy
    assert found(service, both) == ["We now also sell soap in Porto."]  # and again, warm
    boto3.client("s3").delete_object(Bucket=aws.bucket_name, Key=snapshot_key(T, U))
    another_function()
    assert found(service, both) == ["We now also sell soap in Porto."]  # a whole read
