"""moto's SQS counts a queue's messages only when asked, so a send costs the same however many wait
(docs/architecture.md "Local stack").

moto 5.2 builds a queue's whole attribute list, message counts included, each time it reads one
attribute: a send reads `ContentBasedDeduplication` four times, so it scanned every message of the
queue twelve times (with 3,000 jobs queued, a send took ~125 ms instead of ~7). The counts are now
computed only when one is read (GetQueueAttributes asking for them). tests/integration/
test_local_moto_sqs.py shows moto still needs it.
"""

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from moto.sqs import models as sqs_models

from local_stack.moto_patching import replace

# The attributes moto computes by scanning the queue's messages, and the properties computing them.
_COUNTS = {
    "ApproximateNumberOfMessages": "approximate_number_of_messages",
    "ApproximateNumberOfMessagesDelayed": "approximate_number_of_messages_delayed",
    "ApproximateNumberOfMessagesNotVisible": "approximate_number_of_messages_not_visible",
}
_COUNT_PROPERTIES = frozenset(_COUNTS.values())
_COUNTED_ON_READ = object()


class _Uncounted:
    """A queue as moto's own attribute list sees it, with a placeholder for each count."""

    def __init__(self, queue: Any) -> None:
        self._queue = queue

    def __getattr__(self, name: str) -> Any:
        return _COUNTED_ON_READ if name in _COUNT_PROPERTIES else getattr(self._queue, name)


class QueueAttributes(Mapping[str, Any]):
    """A queue's attributes as moto lists them (same names, values and order), counting its messages
    only when a count is read."""

    def __init__(self, queue: Any, listed: dict[str, Any]) -> None:
        self._queue = queue
        self._listed = listed

    def __getitem__(self, name: str) -> Any:
        value = self._listed[name]
        if value is _COUNTED_ON_READ:
            value = self._listed[name] = getattr(self._queue, _COUNTS[name])
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._listed)

    def __len__(self) -> int:
        return len(self._listed)


def _counted_on_read(moto_attributes: property) -> property:
    listed: Callable[[Any], dict[str, Any]] = moto_attributes.fget  # type: ignore[assignment]

    def attributes(queue: Any) -> QueueAttributes:
        return QueueAttributes(queue, listed(_Uncounted(queue)))

    return property(attributes)


def fix_moto_sqs_counts() -> None:
    """Install once."""
    replace(sqs_models.Queue, "attributes", ("self",), _counted_on_read, by=__name__)
