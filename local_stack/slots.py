"""A function's execution environments as slots handed out first come, first served.

`threading.Semaphore` lets a newcomer take a slot just freed ahead of the invocations already
waiting, and a woken waiter that lost the race waits again behind the others: under a burst some
invocations wait far longer than the rest, up to the throttle. Here a freed slot goes straight to
the oldest waiter, so a wait is as long as the queue ahead of it (docs/architecture.md "Local stack").
"""

import threading
from collections import deque
from types import TracebackType


class FairSlots:
    """Up to `count` holders at once; `acquire` waits its turn, for `timeout_s` at most (None: no limit)."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._free = count
        self._lock = threading.Lock()
        self._waiting: deque[threading.Event] = deque()

    def acquire(self, timeout_s: float | None = None) -> bool:
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return True
            turn = threading.Event()
            self._waiting.append(turn)
        if turn.wait(timeout_s):
            return True
        with self._lock:
            if turn.is_set():  # handed a slot just as the wait ran out
                return True
            self._waiting.remove(turn)
            return False

    def waiting(self) -> int:
        """The invocations waiting for a slot now."""
        with self._lock:
            return len(self._waiting)

    def release(self) -> None:
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()  # the slot passes on without ever being free
            elif self._free < self._count:
                self._free += 1
            else:
                raise ValueError("released more often than acquired")

    def __enter__(self) -> "FairSlots":
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()
