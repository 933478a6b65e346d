"""moto's FIFO queues deliver a message group in order across retries, as SQS does (docs/architecture.md
"Local stack").

moto 5.2 blocks a group while any of its received messages is "pending", and clears a pending
message only when its receive loop reaches it. When several messages of one group come back at
once (a failed batch whose visibility expires), the first ones are skipped because the later ones
still look pending, and a later message is delivered alone, ahead of the earlier ones. SQS instead
delivers a group's messages in order, up to the first one still in flight. This computes that rule
in `Queue.messages`, which the receive loop and the long-poll wait use, and leaves moto's own group
bookkeeping empty for FIFO queues. tests/integration/test_local_moto_fifo.py shows moto still needs it.
"""

from typing import Any

from moto.core.utils import unix_time_millis
from moto.sqs import models as sqs_models

from local_stack.moto_patching import replace

_SELF = ("self",)


def deliverable(queue: Any) -> list[Any]:
    """Messages SQS would deliver now: visible and not delayed; from a FIFO queue, in order, per group,
    up to the first in flight. One clock read for the whole scan: moto's `visible` and `delayed` read
    the clock for each message, and the long poll runs this scan after every send."""
    now = unix_time_millis()
    blocked: set[str] = set()
    found = []
    for message in queue._messages:
        if now < message.delayed_until:
            continue
        group = message.group_id if queue.fifo_queue else None
        if group is not None and group in blocked:
            continue
        if now > message.visible_at:
            found.append(message)
        elif group is not None:
            blocked.add(group)  # in flight: later messages of its group wait
    return found


def _no_fifo_groups(groups: property) -> property:
    return property(lambda queue: set() if queue.fifo_queue else set(groups.__get__(queue)))


def fix_moto_fifo_ordering() -> None:
    """Install once."""
    queue_class: Any = sqs_models.Queue
    replace(queue_class, "messages", _SELF, lambda _moto: property(deliverable), by=__name__)
    replace(queue_class, "pending_message_groups", _SELF, _no_fifo_groups, by=__name__)
    # moto counts `messages`, now the deliverable ones only: count the visible ones, as moto did.
    visible: property = queue_class.moto_messages
    replace(
        queue_class,
        "approximate_number_of_messages",
        _SELF,
        lambda _moto: property(lambda queue: len(visible.__get__(queue))),
        by=__name__,
    )
