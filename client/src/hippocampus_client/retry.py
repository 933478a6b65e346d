"""Sending one call within its time budget, retrying 429 and 503 only (client/README.md, "Retries").

Every call of both clients goes through the client's circuit breaker (breaker.py): while the
service is known to hang or refuse connections, a call is skipped at once.

Only `throttled` (429) and `dependency_unavailable` (503) say "nothing was done, try again
later" (docs/api.md "Errors"); every other error is returned at once. Retries back off
exponentially with full jitter, honour `Retry-After`, and never outlast the call's budget: a
retry that could not finish in time is not started.
"""

import asyncio
import random
import time
from dataclasses import dataclass

from .breaker import CircuitBreaker
from .calls import WRITE, Call, Reply
from .errors import HippocampusError
from .transport import Transport, check

RETRY_STATUSES = frozenset({429, 503})
BASE_DELAY_S = 0.1
MAX_DELAY_S = 2.0
# Less time than this left is not worth another attempt.
MIN_ATTEMPT_S = 0.05
OFF = CircuitBreaker(cooldown=0)


@dataclass(frozen=True)
class Policy:
    timeout: float = 3.0  # reads: total per call, retries included
    write_timeout: float = 10.0  # writes (add, put, delete): total per call
    max_retries: int = 2

    def budget(self, call: Call) -> float:
        own = self.own_budget(call)
        return own if call.budget is None else min(own, call.budget)

    def own_budget(self, call: Call) -> float:
        return self.write_timeout if call.kind == WRITE else self.timeout

    def has_full_budget(self, call: Call) -> bool:
        """Whether `call` gets its kind's whole budget: only then does its timeout open the
        circuit breaker (a shortened one, the rest of a paged read's, says nothing of the service)."""
        return call.budget is None or call.budget >= self.own_budget(call)


def retry_after(reply: Reply) -> float | None:
    """`Retry-After` in seconds (the HTTP-date form is not used by API Gateway; ignored)."""
    value = reply.headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if 0 <= seconds < 3600 else None


def checked(reply: Reply) -> Reply:
    try:
        return check(reply)
    except HippocampusError as error:
        error.retry_after = retry_after(reply)
        raise


def delay_before_retry(
    error: HippocampusError, attempt: int, remaining: float, policy: Policy
) -> float | None:
    """Seconds to wait before attempt `attempt + 1`, or None to give up with `error`."""
    if attempt >= policy.max_retries or error.status not in RETRY_STATUSES:
        return None
    backoff = random.uniform(0, min(MAX_DELAY_S, BASE_DELAY_S * 2**attempt))  # noqa: S311 - jitter, not secrecy
    delay = error.retry_after if error.retry_after is not None else backoff
    return delay if delay + MIN_ATTEMPT_S < remaining else None


class SyncSender:
    def __init__(self, transport: Transport, policy: Policy, breaker: CircuitBreaker = OFF) -> None:
        self.transport = transport
        self.policy = policy
        self.breaker = breaker

    def send(self, call: Call) -> Reply:
        with self.breaker.guard(self.policy.has_full_budget(call)):
            return self._send(call)

    def _send(self, call: Call) -> Reply:
        deadline = time.monotonic() + self.policy.budget(call)
        attempt = 0
        while True:
            try:
                return checked(self.transport.send(call, max(0.001, deadline - time.monotonic())))
            except HippocampusError as error:
                delay = delay_before_retry(error, attempt, deadline - time.monotonic(), self.policy)
                if delay is None:
                    raise
            time.sleep(delay)
            attempt += 1


class AsyncSender:
    def __init__(self, transport: Transport, policy: Policy, breaker: CircuitBreaker = OFF) -> None:
        self.transport = transport
        self.policy = policy
        self.breaker = breaker

    async def send(self, call: Call) -> Reply:
        with self.breaker.guard(self.policy.has_full_budget(call)):
            return await self._send(call)

    async def _send(self, call: Call) -> Reply:
        deadline = time.monotonic() + self.policy.budget(call)
        attempt = 0
        while True:
            try:
                return checked(await self.transport.asend(call, max(0.001, deadline - time.monotonic())))
            except HippocampusError as error:
                delay = delay_before_retry(error, attempt, deadline - time.monotonic(), self.policy)
                if delay is None:
                    raise
            await asyncio.sleep(delay)
            attempt += 1
