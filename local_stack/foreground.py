"""Callers' requests first: the queue's consumers let the requests being served go ahead of them.

In AWS the condenser runs on Lambda capacity of its own, and DynamoDB serves it beside the API
functions: a burst of writes is not slowed by the condensing and indexing it causes. Locally, one
moto in one process serves everything, so the condenser's batches would take their share of it in
the middle of a burst. Instead, a batch waits while requests of API Gateway or the Invoke API are
being served, for `max_wait_s` at most (docs/architecture.md "Local stack"): bursts are answered as
fast as moto allows, and what they queued is condensed right after, in fuller batches. Under
load that never pauses, a batch still starts every `max_wait_s`.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

MAX_WAIT_S = 2.0


class Foreground:
    """Counts the requests being served to callers; `wait_quiet` waits for none (or `max_wait_s`)."""

    def __init__(self, max_wait_s: float = MAX_WAIT_S) -> None:
        self.max_wait_s = max_wait_s
        self._serving = 0
        self._changed = threading.Condition()

    @contextmanager
    def serving(self) -> Iterator[None]:
        with self._changed:
            self._serving += 1
        try:
            yield
        finally:
            with self._changed:
                self._serving -= 1
                self._changed.notify_all()

    def wait_quiet(self) -> bool:
        """True once no request is being served; False if `max_wait_s` passed first."""
        with self._changed:
            return self._changed.wait_for(lambda: self._serving == 0, timeout=self.max_wait_s)
