"""The local stack's SQS costs the same per send however many messages wait
(docs/operations.md "Local stack"): a burst of thousands of jobs once made each send scan the
whole queue a dozen times."""

from collections.abc import Iterator
from typing import Any

import pytest
from moto.core.base_backend import BackendDict
from moto.sqs import models as sqs_models

from local_stack import moto_state
from local_stack.moto_endpoint import fix_moto_fifo_ordering
from local_stack.paths import ACCOUNT_ID

WAITING = 500


@pytest.fixture
def backend() -> Iterator[Any]:
    fix_moto_fifo_ordering()
    moto_state.install()
    yield sqs_models.sqs_backends[ACCOUNT_ID]["us-east-1"]
    BackendDict.reset()


@pytest.fixture
def clock_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts moto's reads of the clock (every visibility or delay check of a message reads it)."""
    reads = [0]
    real = sqs_models.unix_time_millis

    def counted(*args: Any) -> float:
        reads[0] += 1
        return real(*args)

    monkeypatch.setattr(sqs_models, "unix_time_millis", counted)
    return reads


def _fill(backend: Any, name: str, count: int) -> Any:
    queue = backend.create_queue(name, FifoQueue="true")
    for n in range(count):
        backend.send_message(name, f"m{n}", group_id=f"g{n % 7}", deduplication_id=f"m{n}")
    return queue


def test_a_send_does_not_look_at_the_messages_already_waiting(backend: Any, clock_reads: list[int]) -> None:
    _fill(backend, "jobs.fifo", WAITING)
    clock_reads[0] = 0
    backend.send_message("jobs.fifo", "one more", group_id="g", deduplication_id="one more")
    assert clock_reads[0] <= 2  # its own timestamps, not one per waiting message


def test_the_long_poll_checks_the_queue_with_one_clock_read(backend: Any, clock_reads: list[int]) -> None:
    queue = _fill(backend, "jobs.fifo", WAITING)
    received = backend.receive_message("jobs.fifo", 10, 0, 30)
    assert [message.body for message in received] == [f"m{n}" for n in range(10)]
    clock_reads[0] = 0
    assert queue.messages == []  # what a long poll checks after each send: every group is in flight
    assert clock_reads[0] <= 1


def test_the_queue_counts_are_still_right(backend: Any) -> None:
    _fill(backend, "jobs.fifo", 20)
    backend.receive_message("jobs.fifo", 10, 0, 30)
    backend.create_queue("later")
    backend.send_message("later", "now")
    backend.send_message("later", "in a minute", delay_seconds=60)
    counts = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    assert backend.get_queue_attributes("jobs.fifo", counts) == {
        "ApproximateNumberOfMessages": 10,
        "ApproximateNumberOfMessagesNotVisible": 10,
    }
    every = dict(backend.get_queue_attributes("later", ["All"]))
    assert every["ApproximateNumberOfMessages"] == 1
    assert every["ApproximateNumberOfMessagesDelayed"] == 1
    assert every["ApproximateNumberOfMessagesNotVisible"] == 0
    assert every["QueueArn"].endswith(":later")


def test_moto_still_counts_the_messages_on_every_attribute_read(backend: Any, clock_reads: list[int]) -> None:
    """When this fails, moto counts lazily itself: drop the counts on read from local_stack/moto_sqs.py."""
    queue = _fill(backend, "jobs.fifo", 50)
    clock_reads[0] = 0
    assert sqs_models.Queue.moto_attributes.fget(queue)["FifoQueue"] == "true"
    assert clock_reads[0] >= 50


def test_moto_still_reads_the_clock_for_every_message(backend: Any, clock_reads: list[int]) -> None:
    """When this fails, moto's visibility checks are cheap: `_deliverable` in local_stack/moto_endpoint.py
    can use them again."""
    queue = _fill(backend, "jobs.fifo", 50)
    clock_reads[0] = 0
    assert all(message.visible and not message.delayed for message in queue._messages)
    assert clock_reads[0] == 100
