"""Locally, the condenser's batches let the callers' requests go first (local_stack/foreground.py)."""

import threading
from typing import Any

from local_stack.event_source import SqsEventSource
from local_stack.foreground import Foreground

MESSAGE = {
    "MessageId": "m1",
    "ReceiptHandle": "r1",
    "Body": "{}",
    "MD5OfBody": "99914b932bd37a50b983c5e7c90ae93b",
}


def test_nothing_being_served_is_quiet_at_once() -> None:
    assert Foreground(max_wait_s=30).wait_quiet() is True


def test_a_batch_waits_for_the_requests_being_served() -> None:
    foreground = Foreground(max_wait_s=30)
    quiet: list[bool] = []
    with foreground.serving():
        waiter = threading.Thread(target=lambda: quiet.append(foreground.wait_quiet()))
        waiter.start()
        waiter.join(timeout=0.5)
        assert quiet == []  # still waiting
    waiter.join(timeout=30)
    assert quiet == [True]


def test_under_load_that_never_pauses_a_batch_starts_after_the_longest_wait() -> None:
    foreground = Foreground(max_wait_s=0.05)
    with foreground.serving():
        assert foreground.wait_quiet() is False


class _Queue:
    """One message, then none; deletions recorded."""

    def __init__(self) -> None:
        self.messages = [MESSAGE]
        self.deleted: list[str] = []

    def receive_message(self, **_: Any) -> dict[str, Any]:
        messages, self.messages = self.messages, []
        return {"Messages": messages}

    def delete_message_batch(self, Entries: list[dict[str, str]], **_: Any) -> dict[str, Any]:
        self.deleted += [entry["Id"] for entry in Entries]
        return {"Successful": Entries, "Failed": []}


def test_the_event_source_hands_a_batch_to_the_condenser_once_the_requests_are_served() -> None:
    foreground = Foreground(max_wait_s=30)
    seen: list[str] = []
    invoked = threading.Event()

    def condenser(event: dict[str, Any]) -> dict[str, Any]:
        seen.append("condensed")
        invoked.set()
        return {"batchItemFailures": []}

    queue = _Queue()
    source = SqsEventSource(
        queue, "url", "arn:aws:sqs:us-east-1:1:q.fifo", "us-east-1", condenser, 1, foreground=foreground
    )
    with foreground.serving():
        source.start()
        # Long enough for the batch to be received and handed on, were it not waiting.
        assert not invoked.wait(timeout=1.0)
        seen.append("served")
    try:
        assert invoked.wait(timeout=30)
    finally:
        source.stop_polling()
        source.wait()
    assert seen == ["served", "condensed"]
