"""moto's SQS, safe under concurrent requests and kept across restarts (docs/operations.md "Local stack").

Two changes to the same methods of moto, for memory and disk alike:
- moto changes a queue's message list from several requests without a lock: a delete rebuilds
  the list while a send appends to the old one, and the sent message is lost. Sends, receives,
  deletes and purges of one queue now hold the queue's own lock (a long poll waits on it, which
  releases it); tests/integration/test_local_moto_sqs.py shows moto still needs it.
- every change to a message is recorded by the message's id: its state after a send, a receive
  or a move to the dead-letter queue, and its end (deleted, purged). Receipt handles are not
  kept: after a restart, a message that was in flight is visible again (the condenser is
  idempotent), with its receive count, so the redrive policy still counts every receive.
A record needs the lock too (what a delete removes is read with it), hence one module for both.

Records of one message can reach the journal out of order (sends, receives and deletes run on
concurrent threads), so replay does not depend on their order: an end wins, else the record with
the highest (position, receive count), both of which only grow in a message's life. Positions
are a counter taken under the queue's lock, so a FIFO group comes back in its order.
"""

import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

from moto.sqs import models as sqs_models

from local_stack.changes import current
from local_stack.journal import Record
from local_stack.moto_patching import replace

# The state of a message, as moto keeps it, but for its receipt handles and its visibility.
_FIELDS = (
    "body",
    "message_attributes",
    "system_attributes",
    "sender_id",
    "sent_timestamp",
    "approximate_first_receive_timestamp",
    "approximate_receive_count",
    "deduplication_id",
    "group_id",
    "sequence_number",
    "delayed_until",
)
# Attributes this module keeps on moto's messages: their queue (names only: moto deep-copies
# messages it delivers) and their position.
_HOME = "_hippocampus_home"
_POSITION = "_hippocampus_position"


class _Positions:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counter = itertools.count(1)

    def take(self) -> int:
        with self._lock:
            return next(self._counter)

    def start_after(self, position: int) -> None:
        with self._lock:
            self._counter = itertools.count(max(position, next(self._counter) - 1) + 1)


POSITIONS = _Positions()


def _locate(message: Any, queue: Any) -> None:
    setattr(message, _HOME, (queue.account_id, queue.region, queue.name))
    setattr(message, _POSITION, POSITIONS.take())


def image(message: Any) -> Record:
    account, region, queue = getattr(message, _HOME)
    return {
        "s": "sqs",
        "a": account,
        "r": region,
        "q": queue,
        "id": message.id,
        "pos": getattr(message, _POSITION),
        "m": {name: getattr(message, name) for name in _FIELDS},
    }


def _end(queue: Any, message: Any) -> Record:
    return {
        "s": "sqs",
        "a": queue.account_id,
        "r": queue.region,
        "q": queue.name,
        "id": message.id,
        "gone": True,
    }


def _record(*records: Record) -> None:
    changes = current()
    if changes is not None:
        changes.records.extend(records)


def _add_message(original: Callable[..., None]) -> Callable[..., None]:
    def add_message(queue: Any, message: Any) -> None:
        with queue._messages_lock:
            count = len(queue._messages)
            original(queue, message)
            # A FIFO deduplication may have dropped it.
            if len(queue._messages) > count and queue._messages[-1] is message:
                _locate(message, queue)
                _record(image(message))

    return add_message


def _mark_received(original: Callable[..., None]) -> Callable[..., None]:
    def mark_received(message: Any, visibility_timeout: int | None = None) -> None:
        original(message, visibility_timeout)
        if hasattr(message, _HOME):
            _record(image(message))

    return mark_received


def _delete_message(original: Callable[..., None]) -> Callable[..., None]:
    def delete_message(queue: Any, receipt_handle: str) -> None:
        with queue._messages_lock:
            doomed = [m for m in queue._messages if m.had_receipt_handle(receipt_handle)]
            original(queue, receipt_handle)
            _record(*(_end(queue, message) for message in doomed))

    return delete_message


def _under_queue_lock(original: Callable[..., Any]) -> Callable[..., Any]:
    def locked(backend: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        queue = backend.get_queue(queue_name)
        with queue._messages_lock:
            return original(backend, queue_name, *args, **kwargs)

    return locked


def _ending_all(original: Callable[..., None]) -> Callable[..., None]:
    """A purge or a queue deletion: every message of the queue ends."""

    def end_all(backend: Any, queue_name: str, *args: Any, **kwargs: Any) -> None:
        queue = backend.get_queue(queue_name)
        with queue._messages_lock:
            doomed = list(queue._messages)
            original(backend, queue_name, *args, **kwargs)
            _record(*(_end(queue, message) for message in doomed))

    return end_all


_QUEUE_NAME = ("self", "queue_name")


def install() -> None:
    """Install the lock and the records once."""
    queue_class, message_class, backend_class = sqs_models.Queue, sqs_models.Message, sqs_models.SQSBackend
    replace(queue_class, "add_message", ("self", "message"), _add_message, by=__name__)
    replace(queue_class, "delete_message", ("self", "receipt_handle"), _delete_message, by=__name__)
    replace(message_class, "mark_received", ("self", "visibility_timeout"), _mark_received, by=__name__)
    receive = (
        "self",
        "queue_name",
        "count",
        "wait_seconds_timeout",
        "visibility_timeout",
        "message_attribute_names",
    )
    replace(backend_class, "receive_message", receive, _under_queue_lock, by=__name__)
    replace(backend_class, "purge_queue", _QUEUE_NAME, _ending_all, by=__name__)
    replace(backend_class, "delete_queue", _QUEUE_NAME, _ending_all, by=__name__)


def _rank(record: Record) -> tuple[int, int]:
    return int(record["pos"]), int(record["m"].get("approximate_receive_count") or 0)


class SqsReplay:
    """The messages of a set of records, in any order, put back where they last were."""

    def __init__(self) -> None:
        self._latest: dict[str, Record] = {}
        self._ended: set[str] = set()

    def add(self, record: Record) -> None:
        identifier = str(record["id"])
        if record.get("gone"):
            self._ended.add(identifier)
            return
        known = self._latest.get(identifier)
        if known is None or _rank(record) >= _rank(known):
            self._latest[identifier] = record

    def place(self) -> int:
        """Put the live messages back in their queues, in order; how many were dropped (no such queue)."""
        live = sorted((record for key, record in self._latest.items() if key not in self._ended), key=_rank)
        dropped = 0
        for record in live:
            queue = sqs_models.sqs_backends[record["a"]][record["r"]].queues.get(record["q"])
            if queue is None:
                dropped += 1
                continue
            with queue._messages_lock:
                queue._messages.append(_message(record))
        POSITIONS.start_after(max((_rank(record)[0] for record in live), default=0))
        return dropped


def _message(record: Record) -> Any:
    fields = record["m"]
    message = sqs_models.Message(record["id"], fields["body"], fields.get("system_attributes"))
    for name in _FIELDS:
        if name in fields:
            setattr(message, name, fields[name])
    setattr(message, _HOME, (record["a"], record["r"], record["q"]))
    setattr(message, _POSITION, int(record["pos"]))
    return message


def _backends() -> Iterator[tuple[str, str, Any]]:
    yield from sqs_models.sqs_backends.iter_backends()


def dump() -> Iterator[Record]:
    """Every message of every queue, in queue order."""
    for _account, _region, backend in _backends():
        for queue in list(backend.queues.values()):
            for message in list(queue._messages):
                if not hasattr(message, _HOME):
                    _locate(message, queue)  # there before the records were installed
                yield image(message)
