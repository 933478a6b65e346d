"""The local stack's queues across a restart: a message in flight comes back (with its receive count),
a deleted one never does, a dead-lettered one stays in the DLQ, a FIFO group keeps its order
(docs/operations.md "Local stack")."""

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from local_state_support import DurableMoto, durable_moto
from moto.core.base_backend import BackendDict
from moto.sqs import models as sqs_models

from hippocampus.contracts.names import DLQ_MAX_RECEIVE_COUNT
from local_stack import moto_sqs, moto_state
from local_stack.journal import read
from local_stack.paths import ACCOUNT_ID


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[DurableMoto]:
    with durable_moto(tmp_path / "state") as stack:
        yield stack


def _send(sqs: Any, url: str, *bodies: str, group: str = "g") -> None:
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group, MessageDeduplicationId=body)


def _receive(sqs: Any, url: str, visibility: int = 30) -> list[dict[str, Any]]:
    response = sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=10,
        WaitTimeSeconds=0,
        VisibilityTimeout=visibility,
        MessageSystemAttributeNames=["All"],
    )
    return list(response.get("Messages", []))


def _bodies(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["Body"], m["Attributes"]["ApproximateReceiveCount"]) for m in messages]


def test_a_message_in_flight_comes_back_with_its_receive_count(moto: DurableMoto) -> None:
    sqs, url = moto.client("sqs"), moto.res.queue_url
    _send(sqs, url, "in-flight", "waiting")
    received = _receive(sqs, url)
    assert _bodies(received) == [("in-flight", "1"), ("waiting", "1")]
    assert _receive(sqs, url) == []  # in flight for 30 s
    moto.restart()
    sqs = moto.client("sqs")
    again = _receive(sqs, url)
    assert _bodies(again) == [("in-flight", "2"), ("waiting", "2")]
    assert [m["MessageId"] for m in again] == [m["MessageId"] for m in received]
    assert moto.restored is not None and moto.restored.kept["messages"] == 2


def test_a_deleted_or_purged_message_never_comes_back(moto: DurableMoto) -> None:
    sqs, url, dlq = moto.client("sqs"), moto.res.queue_url, moto.res.dlq_url
    _send(sqs, url, "deleted", "kept")
    first, _ = _receive(sqs, url, visibility=0)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])
    _send(sqs, dlq, "purged")
    sqs.purge_queue(QueueUrl=dlq)
    moto.restart()
    sqs = moto.client("sqs")
    assert _bodies(_receive(sqs, url)) == [("kept", "2")]
    assert _receive(sqs, dlq) == []


def test_a_dead_lettered_message_stays_in_the_dead_letter_queue(moto: DurableMoto) -> None:
    sqs, url, dlq = moto.client("sqs"), moto.res.queue_url, moto.res.dlq_url
    _send(sqs, url, "poison")
    for _ in range(DLQ_MAX_RECEIVE_COUNT):
        assert len(_receive(sqs, url, visibility=0)) == 1
    assert _receive(sqs, url) == []  # the receive after the last moves it to the DLQ
    moto.restart()
    sqs = moto.client("sqs")
    assert _receive(sqs, url) == []
    assert _bodies(_receive(sqs, dlq)) == [("poison", str(DLQ_MAX_RECEIVE_COUNT + 1))]


def test_a_fifo_group_comes_back_in_its_order(moto: DurableMoto) -> None:
    sqs, url = moto.client("sqs"), moto.res.queue_url
    _send(sqs, url, *(f"a-{n}" for n in range(6)), group="a")
    _send(sqs, url, "b-0", group="b")
    assert [m["Body"] for m in _receive(sqs, url)][:3] == ["a-0", "a-1", "a-2"]
    moto.restart()
    sqs = moto.client("sqs")
    bodies = [m["Body"] for m in _receive(sqs, url)]
    assert [b for b in bodies if b.startswith("a-")] == [f"a-{n}" for n in range(6)]
    assert "b-0" in bodies
    _send(sqs, url, "a-6", group="a")  # sent after the restart: after the others
    later = _receive(sqs, url, visibility=0)
    assert later == [] or [m["Body"] for m in later] == ["a-6"]


def _queue_state() -> list[tuple[str, str, str, int]]:
    return [
        (r["q"], r["id"], r["m"]["body"], r["m"]["approximate_receive_count"])
        for r in moto_sqs.dump()
        if r["q"].startswith("hippocampus-local")
    ]


def test_the_order_of_message_records_does_not_matter(moto: DurableMoto) -> None:
    """Concurrent requests can append one message's records out of order: the replay takes the end,
    or the latest position and receive count, whatever the order."""
    sqs, url = moto.client("sqs"), moto.res.queue_url
    _send(sqs, url, "m0", "m1", "m2", "m3")
    received = _receive(sqs, url, visibility=0)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=received[1]["ReceiptHandle"])
    for _ in range(DLQ_MAX_RECEIVE_COUNT):
        _receive(sqs, url, visibility=0)
    _send(sqs, url, "m4", group="other")
    _receive(sqs, url, visibility=0)  # m0, m2, m3 to the DLQ; m4 received once
    expected = _queue_state()
    assert sorted(body for _, _, body, _ in expected) == ["m0", "m2", "m3", "m4"]
    records = [r for r in read(moto.directory / "journal", "journal").records() if r["s"] == "sqs"]  # type: ignore[union-attr]
    for seed in range(5):
        random.Random(seed).shuffle(records)
        moto.restart()  # empties the queues: the journal is in the new snapshot
        for queue in (moto.res.queue_url, moto.res.dlq_url):
            moto.client("sqs").purge_queue(QueueUrl=queue)
        moto_state.replay(records)
        assert sorted(_queue_state()) == sorted(expected)


class _SlowToFinish(list):  # type: ignore[type-arg]
    """A message list whose first whole iteration lingers after its last element: where moto's delete
    used to let a concurrent send append to the list it was about to replace."""

    lingered = False
    lingering = threading.Event()

    def __iter__(self) -> Iterator[Any]:
        yield from list.__iter__(self)
        if not self.lingered:
            self.lingered = True
            self.lingering.set()
            time.sleep(0.2)  # the window a racing send had


def test_a_send_racing_a_delete_is_never_lost() -> None:
    moto_state.install()
    backend = sqs_models.sqs_backends[ACCOUNT_ID]["us-east-1"]
    try:
        queue = backend.create_queue("race")
        backend.send_message("race", "first")
        (received,) = backend.receive_message("race", 1, 0, 30)
        queue._messages = _SlowToFinish(queue._messages)
        deleting = threading.Thread(target=backend.delete_message, args=("race", received.receipt_handle))
        deleting.start()
        assert _SlowToFinish.lingering.wait(10)  # the delete is iterating
        backend.send_message("race", "second")
        deleting.join()
        assert [message.body for message in queue._messages] == ["second"]
    finally:
        BackendDict.reset()
