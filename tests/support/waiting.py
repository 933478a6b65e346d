"""Waiting for a condition instead of sleeping a fixed time: tests hold on a busy machine."""

import time
from collections.abc import Callable

# Generous deadlines for async effects: an item is picked up within 1 s locally, a deployed
# stack adds cold starts, a loaded machine (load 8-14 on 2 cores) takes many times longer; the
# deadline only bounds a failure, it asserts no speed.
ASYNC_DEADLINE_S = 60.0


def wait_for[T](
    probe: Callable[[], T | None],
    timeout_s: float = ASYNC_DEADLINE_S,
    interval_s: float = 0.1,
    what: str = "condition",
    diagnostics: Callable[[], str] | None = None,
) -> T:
    """Poll `probe` until it returns something truthy; fail with `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            extra = f"\n{diagnostics()}" if diagnostics else ""
            raise AssertionError(
                f"timed out after {timeout_s:.0f} s waiting for {what}; last value: {last!r}{extra}"
            )
        time.sleep(interval_s)
