"""The background writer behind `add`: a bounded queue drained by one daemon thread.

`add` hands its request over and returns at once; the thread sends one request at a time, each
within the client's write budget (10 s by default), retrying 429/503 like every call. When the
queue is full the newest request is dropped and a warning gives the counts (client/README.md,
"The background writer"). At interpreter exit every live writer is flushed, within a bounded
wait, so what was handed over before a clean exit is sent.

The async client uses this same thread: an asyncio task would be cancelled with its event loop
(`asyncio.run` returning), losing what it still held, while a thread is still there at exit.
"""

import atexit
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .calls import Call
from .errors import HippocampusError

logger = logging.getLogger("hippocampus_client")


@dataclass(frozen=True)
class WriterStats:
    queued: int  # waiting now
    in_flight: int  # being sent now (0 or 1)
    sent: int  # accepted by the service
    failed: int  # given up after an error (logged)
    dropped: int  # refused because the queue was full or the client closed


class BackgroundWriter:
    def __init__(self, send: Callable[[Call], object], max_queue: int, exit_timeout: float) -> None:
        self._send = send
        self.max_queue = max(1, max_queue)
        self.exit_timeout = exit_timeout
        self._queue: deque[Call] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._in_flight = 0
        self._sent = self._failed = self._dropped = 0
        _LIVE.add(self)

    def submit(self, call: Call) -> bool:
        """Queue `call`; False when it was dropped (queue full, or the writer closed)."""
        with self._cond:
            if self._closed or len(self._queue) >= self.max_queue:
                self._dropped += 1
                dropped, queued, closed = self._dropped, len(self._queue), self._closed
            else:
                self._queue.append(call)
                self._start()
                self._cond.notify_all()
                return True
        _warn_dropped(dropped, queued, closed)
        return False

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="hippocampus-client-writer", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                call = self._queue.popleft()
                self._in_flight = 1
            ok = self._deliver(call)
            with self._cond:
                self._in_flight = 0
                if ok:
                    self._sent += 1
                else:
                    self._failed += 1
                self._cond.notify_all()

    def _deliver(self, call: Call) -> bool:
        try:
            self._send(call)
        except HippocampusError as error:
            logger.warning(
                "hippocampus background %s failed: code=%s status=%s request_id=%s %s",
                call.action, error.code, error.status, error.request_id, call.log_ids(),
            )  # fmt: skip
            return False
        except Exception as error:  # never let the thread die: the next item must still go
            logger.warning(
                "hippocampus background %s failed: %s %s", call.action, type(error).__name__, call.log_ids()
            )
            return False
        return True

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything queued so far was sent (or given up); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and not self._in_flight, timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Flush within `timeout`, then stop the thread; later `submit`s are dropped."""
        flushed = self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        _LIVE.discard(self)
        if not flushed:
            logger.warning("hippocampus background writer closed with %d requests unsent", len(self._queue))
        return flushed

    def stats(self) -> WriterStats:
        with self._cond:
            return WriterStats(len(self._queue), self._in_flight, self._sent, self._failed, self._dropped)

    def _forget_after_fork(self) -> None:
        # A forked child has no writer thread: what was queued is the parent's to send, and the
        # child's exit must not wait for it. Later adds in the child start a thread of its own.
        self._cond = threading.Condition()
        self._queue.clear()
        self._thread = None
        self._in_flight = 0


def _warn_dropped(dropped: int, queued: int, closed: bool) -> None:
    # Counts only; a warning for the 1st, 2nd, 4th, 8th... drop, so a flood does not flood the log.
    if dropped & (dropped - 1) == 0:
        reason = "the client is closed" if closed else f"the queue is full ({queued} waiting)"
        logger.warning("hippocampus add dropped: %s; %d dropped so far", reason, dropped)


_LIVE: "weakref.WeakSet[BackgroundWriter]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for writer in list(_LIVE):
        writer._forget_after_fork()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _flush_at_exit() -> None:
    """Send what every live writer holds, waiting at most the longest `exit_timeout` in all."""
    writers = list(_LIVE)
    if not writers:
        return
    deadline = time.monotonic() + max(w.exit_timeout for w in writers)
    for writer in writers:
        writer.close(max(0.0, deadline - time.monotonic()))
