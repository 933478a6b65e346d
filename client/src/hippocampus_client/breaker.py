"""The circuit breaker in front of every request (client/README.md, "Circuit breaker").

A memory service that hangs, or refuses connections, must cost the host application one
timeout, not one per call. After a request ends in a timeout or a connection failure the breaker
is **open**: for `cooldown` seconds every request is skipped at once with `CircuitOpenError`,
which the clients turn into their usual failure (None, False; strict mode raises it). Then one
trial request goes through (**half-open**) while the others are still skipped: if the service
answers (any status: it is there), the breaker closes; if the trial fails too, the breaker opens
for another cool-down. `cooldown=0` turns it off.

Hand-written rather than a library's: pybreaker holds its lock for the whole call (every request
of the client would wait for the one in flight) and speaks asyncio only through tornado;
circuitbreaker lets every call through when half-open, so a hung service would again cost one
timeout per concurrent caller. This is one lock and three fields, for both clients and threads.
"""

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .errors import (
    ApiError,
    CircuitOpenError,
    ConnectionFailedError,
    MalformedResponseError,
    RequestTimeoutError,
)

logger = logging.getLogger("hippocampus_client")
# What says "the service is not there": no connection, or no answer in time. An error status
# is an answer, and so is a malformed body: something is listening.
TRIPPING_ERRORS = (ConnectionFailedError, RequestTimeoutError)
ANSWERS = (ApiError, MalformedResponseError)


class CircuitBreaker:
    def __init__(self, cooldown: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.cooldown = max(0.0, cooldown)
        self._clock = clock
        self._lock = threading.Lock()
        self._open_until: float | None = None  # None: closed
        self._trial = False  # the one request let through after the cool-down is in flight

    @contextmanager
    def guard(self, full_budget: bool = True) -> Iterator[None]:
        """Around one request: raises `CircuitOpenError` instead of sending while open, and
        learns from how the request ends. Works around awaited code as well (the lock is never
        held while the request runs).

        `full_budget=False`: the request had only what was left of a longer read's budget (a
        later page, a late poll of `wait`); its timeout says the client ran out of time, not
        that the service hangs, so it opens nothing. A failed connection still does."""
        if not self.cooldown:
            yield
            return
        trial = self._admit()
        try:
            yield
        except RequestTimeoutError:
            if not full_budget:
                self._release(trial)
                raise
            self._opened(RequestTimeoutError.__name__)
            raise
        except TRIPPING_ERRORS as error:
            self._opened(type(error).__name__)
            raise
        except ANSWERS:
            self._closed()
            raise
        except BaseException:  # not sent (a body that is not JSON), cancelled: nothing learnt
            self._release(trial)
            raise
        self._closed()

    def retry_in(self) -> float:
        """Seconds until a request may go again (0: now); while a trial is in flight, a short wait."""
        with self._lock:
            if self._open_until is None:
                return 0.0
            if self._trial:
                return 0.05
            return max(0.0, self._open_until - self._clock())

    def _admit(self) -> bool:
        """True for the half-open trial; raises while open."""
        with self._lock:
            if self._open_until is None:
                return False
            left = self._open_until - self._clock()
            if left > 0 or self._trial:
                raise CircuitOpenError(
                    f"skipped: the memory service timed out or refused a connection; "
                    f"next try in {max(0.0, left):.1f} s"
                )
            self._trial = True
            return True

    def _opened(self, reason: str) -> None:
        with self._lock:
            was_closed = self._open_until is None
            self._open_until = self._clock() + self.cooldown
            self._trial = False
        if was_closed:
            logger.warning(
                "hippocampus memory service unreachable (%s): requests skipped for %.0f s (circuit open)",
                reason, self.cooldown,
            )  # fmt: skip

    def _closed(self) -> None:
        with self._lock:
            was_open = self._open_until is not None
            self._open_until = None
            self._trial = False
        if was_open:
            logger.warning("hippocampus memory service answers again (circuit closed)")

    def _release(self, trial: bool) -> None:
        if trial:
            with self._lock:
                self._trial = False
