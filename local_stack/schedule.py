"""EventBridge's schedule on one machine: the condenser's dead-letter pass, every few seconds.

In AWS a rule runs it every 5 minutes (infra/functions.py); locally a dead-lettered job is closed
within `DEAD_LETTER_PASS_LOCAL_S`, as a failed condensation is retried within seconds
(docs/architecture.md "The condenser").
"""

import logging
import threading
from collections.abc import Callable
from typing import Any

from local_stack.events import scheduled_event

log = logging.getLogger("local_stack")

DEAD_LETTER_PASS_LOCAL_S = 10.0


class Schedule:
    """Invokes `invoke` with a scheduled event every `interval_s` until stopped."""

    def __init__(self, invoke: Callable[[dict[str, Any]], Any], region: str, interval_s: float) -> None:
        self._invoke = invoke
        self._region = region
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="schedule", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval_s + 5)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self._invoke(scheduled_event(self._region))
            except Exception:  # a throttled or failing pass is tried again at the next tick
                log.warning("the scheduled dead-letter pass failed", exc_info=True)
