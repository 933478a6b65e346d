"""One LLM call within its time: the first attempt and at most one retry, both ending in time.

The adapters retry themselves instead of leaving it to the SDKs: the openai SDK sleeps as long as
a server's `retry-after` asks (up to two minutes), and botocore has no per-call timeout, so neither
could keep a call within the time the condenser has left (docs/architecture.md "The condenser").
"""

import math
import time
from collections.abc import Callable

from hippocampus.contracts.names import LLM_RETRY_PAUSE_S


def call_in_time[Result](
    attempt: Callable[[float], Result],
    *,
    attempt_timeout_s: float,
    timeout_s: float | None,
    retries: int,
    is_transient: Callable[[Exception], bool],
    min_attempt_s: float,
) -> Result:
    """`attempt(seconds)` until it succeeds, at most `1 + retries` times, within `timeout_s`.

    Each attempt gets `attempt_timeout_s`, or what is left of `timeout_s` when that is less; an
    attempt that would get less than `min_attempt_s` is never started. Only transient errors are
    retried; the last error is raised.
    """
    deadline = math.inf if timeout_s is None else time.monotonic() + timeout_s

    def time_for_attempt() -> float:
        return min(attempt_timeout_s, deadline - time.monotonic())

    if time_for_attempt() < min_attempt_s:
        raise TimeoutError("no time left for an LLM call")
    failures = 0
    while True:
        try:
            return attempt(time_for_attempt())
        except Exception as error:
            failures += 1
            no_time = deadline - time.monotonic() < LLM_RETRY_PAUSE_S + min_attempt_s
            if failures > retries or no_time or not is_transient(error):
                raise
        time.sleep(LLM_RETRY_PAUSE_S)
