"""Retries (client/README.md, "Retries"): 429 and 503 only, a few times, with backoff, honouring
Retry-After, never past the call's time budget."""

import asyncio
import time

import httpx2
import pytest
from client_test_servers import envelope, memory_body, mocked, mocked_async

from hippocampus_client import ThrottledError


class Counter:
    """Answers `failures` with the given status, then 200; counts the attempts."""

    def __init__(self, status: int, failures: int = 1_000, headers: dict[str, str] | None = None) -> None:
        self.status, self.failures, self.headers = status, failures, headers or {}
        self.attempts = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.attempts += 1
        if self.attempts <= self.failures:
            return httpx2.Response(self.status, json=envelope("x", self.status), headers=self.headers)
        return httpx2.Response(200, json=memory_body("Alice sells candles."))


def test_a_429_storm_is_retried_a_bounded_number_of_times_then_none() -> None:
    storm = Counter(429)
    started = time.monotonic()
    assert mocked(storm).get("alice") is None
    assert storm.attempts == 3  # the first try and two retries (max_retries=2)
    assert time.monotonic() - started < 3.0


def test_a_429_storm_raises_throttled_in_strict_mode() -> None:
    storm = Counter(429)
    with pytest.raises(ThrottledError) as raised:
        mocked(storm, strict=True, max_retries=4).get("alice")
    assert storm.attempts == 5
    assert raised.value.status == 429


def test_a_503_then_success_returns_the_answer() -> None:
    flaky = Counter(503, failures=2)
    assert mocked(flaky).get("alice") == "Alice sells candles."
    assert flaky.attempts == 3


@pytest.mark.parametrize("status", [400, 404, 409, 422, 500, 502, 504])
def test_other_errors_are_not_retried(status: int) -> None:
    failing = Counter(status, failures=1)
    assert mocked(failing).get("alice") is None
    assert failing.attempts == 1


def test_retry_after_is_honoured() -> None:
    throttled = Counter(429, failures=1, headers={"Retry-After": "1"})
    started = time.monotonic()
    assert mocked(throttled).get("alice") == "Alice sells candles."
    assert time.monotonic() - started >= 1.0
    assert throttled.attempts == 2


def test_a_retry_after_beyond_the_budget_gives_up_at_once() -> None:
    throttled = Counter(429, failures=1, headers={"Retry-After": "30"})
    started = time.monotonic()
    assert mocked(throttled, timeout=1.0).get("alice") is None
    assert time.monotonic() - started < 0.5
    assert throttled.attempts == 1


def test_retries_never_outlast_the_call_budget() -> None:
    slow_storm = Counter(503, headers={"Retry-After": "0.4"})
    started = time.monotonic()
    assert mocked(slow_storm, timeout=1.0, max_retries=10).get("alice") is None
    assert time.monotonic() - started < 1.1
    assert 2 <= slow_storm.attempts <= 3


def test_the_async_client_retries_the_same_way() -> None:
    flaky = Counter(429, failures=1)
    assert asyncio.run(mocked_async(flaky).get("alice")) == "Alice sells candles."
    assert flaky.attempts == 2
