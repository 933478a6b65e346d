"""The local stack's SQS keeps SQS's promises at a cost per send that does not grow with the queue
(docs/architecture.md "Local stack"), and moto still needs each fix for it: FIFO order across retries
(local_stack/moto_fifo.py), the queue's lock (local_stack/moto_sqs.py), counts on read
(local_stack/moto_sqs_counts.py). A burst of thousands of jobs once made each send scan the whole
queue a dozen times."""

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from moto.core.base_backend import BackendDict
from moto.sqs import models as sqs_models

from local_stack import moto_state
from local_stack.moto_fifo import fix_moto_fifo_ordering
from local_stack.moto_sqs_counts import fix_moto_sqs_counts
from local_stack.paths import ACCOUNT_ID

WAITING = 500


@pytest.fixture
def backend() -> Iterator[Any]:
    fix_moto_fifo_ordering()
    fix_moto_sqs_counts()
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
    moto_queue: Any = sqs_models.Queue
    assert moto_queue.moto_attributes.fget(queue)["FifoQueue"] == "true"
    assert clock_reads[0] >= 50


def test_moto_still_reads_the_clock_for_every_message(backend: Any, clock_reads: list[int]) -> None:
    """When this fails, moto's visibility checks are cheap: `_deliverable` in local_stack/moto_endpoint.py
    can use them again."""
    queue = _fill(backend, "jobs.fifo", 50)
    clock_reads[0] = 0
    assert all(message.visible and not message.delayed for message in queue._messages)
    assert clock_reads[0] == 100


# --- a FIFO group in order across retries (local_stack/moto_fifo.py) --------------------------------


@pytest.fixture
def moto_fifo(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's own FIFO bookkeeping for the length of a test."""
    queue_class: Any = sqs_models.Queue
    for name in ("messages", "pending_message_groups", "approximate_number_of_messages"):
        monkeypatch.setattr(queue_class, name, getattr(queue_class, f"moto_{name}"))


def _retried_group(backend: Any) -> list[str]:
    """A batch of one group fails, its visibility timeout passes: what the next receive of one gets."""
    queue = _fill_group(backend, "jobs.fifo", 3)
    assert len(backend.receive_message("jobs.fifo", 10, 0, 30)) == 3
    for message in queue._messages:
        message.visible_at = 0  # the 30 s are over
    return [message.body for message in backend.receive_message("jobs.fifo", 1, 0, 30)]


def _fill_group(backend: Any, name: str, count: int) -> Any:
    queue = backend.create_queue(name, FifoQueue="true")
    for n in range(count):
        backend.send_message(name, f"m{n}", group_id="g", deduplication_id=f"m{n}")
    return queue


def test_a_retried_fifo_group_comes_back_in_its_order(backend: Any) -> None:
    assert _retried_group(backend) == ["m0"]
    assert backend.receive_message("jobs.fifo", 10, 0, 30) == []  # m0 in flight: its group waits
    counts = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    assert backend.get_queue_attributes("jobs.fifo", counts) == {
        "ApproximateNumberOfMessages": 2,
        "ApproximateNumberOfMessagesNotVisible": 1,
    }


def test_moto_still_delivers_a_later_message_of_a_retried_group_first(backend: Any, moto_fifo: None) -> None:
    """When this fails, moto keeps a FIFO group's order itself: drop local_stack/moto_fifo.py."""
    assert _retried_group(backend) == ["m2"]


# --- a queue's messages change under its lock (local_stack/moto_sqs.py) ------------------------------


def test_moto_still_deletes_a_message_without_the_queues_lock(backend: Any) -> None:
    """When this fails, moto locks its queue itself: drop the lock from local_stack/moto_sqs.py (the
    records need it only around what they read). tests/integration/test_local_state_sqs.py
    test_a_send_racing_a_delete_is_never_lost shows what the lock fixes."""
    queue = backend.create_queue("race")
    backend.send_message("race", "first")
    (received,) = backend.receive_message("race", 1, 0, 30)
    held, done = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        with queue._messages_lock:
            held.set()
            done.wait(30)

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    try:
        assert held.wait(10)
        moto_queue: Any = sqs_models.Queue
        deleting = threading.Thread(
            target=moto_queue.moto_delete_message, args=(queue, received.receipt_handle)
        )
        deleting.start()
        deleting.join(10)  # moto's own delete does not wait for the lock: it is done long before
        assert not deleting.is_alive() and queue._messages == []
    finally:
        done.set()
        holder.join()
