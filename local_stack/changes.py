"""What moto changed while it served one request, collected by hooks on moto's models.

moto runs each request on one thread of its server, so the hooks record into the current
thread's `Changes`; outside `recording()` (moto in the tests, or the replay itself) they do nothing.
"""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from local_stack.journal import Record

_local = threading.local()


class Changes:
    """Items and objects a request may have changed (their state is read once it is done), and the
    SQS records its hooks wrote as they went."""

    def __init__(self) -> None:
        self.items: dict[tuple[int, str], tuple[Any, dict[str, Any]]] = {}
        self.objects: dict[tuple[int, str, str], tuple[Any, str, str]] = {}
        self.records: list[Record] = []

    def touch_item(self, table: Any, key: dict[str, Any]) -> None:
        self.items[(id(table), json.dumps(key, sort_keys=True, default=str))] = (table, key)

    def touch_object(self, backend: Any, bucket_name: str, key_name: str) -> None:
        self.objects[(id(backend), bucket_name, key_name)] = (backend, bucket_name, key_name)

    def __bool__(self) -> bool:
        return bool(self.items or self.objects or self.records)


def current() -> Changes | None:
    changes: Changes | None = getattr(_local, "changes", None)
    return changes


@contextmanager
def recording() -> Iterator[Changes]:
    changes = Changes()
    _local.changes = changes
    try:
        yield changes
    finally:
        _local.changes = None
