"""The circuit breaker (client/README.md, "Circuit breaker"): a service that hangs or refuses
connections costs one timeout, not one per call; after the cool-down one trial goes through; an
answer closes the circuit; strict mode raises `CircuitOpenError`; the exit flush stops early."""

import asyncio
import json
import logging
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import httpx2
import pytest
from client_test_servers import (
    Answer,
    HangingServer,
    RecordingServer,
    closed_port,
    envelope,
    json_answer,
    memory_body,
    mocked,
)

from hippocampus_client import AsyncMemoryClient, MemoryClient, RequestTimeoutError
from hippocampus_client.breaker import CircuitBreaker
from hippocampus_client.errors import CircuitOpenError, ConnectionFailedError, NotFoundError

TIMEOUT_S = 1.0
SKIPPED_S = TIMEOUT_S / 2  # a skipped call returns at once: well under a timeout, on a busy machine


def timed(run: Callable[[], object]) -> tuple[object, float]:
    started = time.monotonic()
    result = run()
    return result, time.monotonic() - started


def test_a_hanging_service_costs_one_timeout_then_every_call_returns_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="hippocampus_client")
    with (
        HangingServer() as server,
        MemoryClient(endpoint=server.url, tenant="acme", timeout=TIMEOUT_S) as memory,
    ):
        first, first_s = timed(lambda: memory.get("alice"))
        assert first is None and first_s >= TIMEOUT_S * 0.9
        for call in [
            lambda: memory.get("alice"),
            lambda: memory.context("alice", "candles"),
            lambda: memory.query("alice", "candles"),
            lambda: memory.facts("alice"),
        ]:
            result, elapsed = timed(call)
            assert result is None and elapsed < SKIPPED_S, elapsed
        assert memory.delete("alice") is False
        _, close_s = timed(lambda: memory.close(5))
    assert close_s < 2.0, "the open circuit ends the close's wait (5 s) at once"
    assert caplog.text.count("circuit open") == 1, "the opening is logged once, not each skipped call"


def test_strict_mode_raises_circuit_open_error_with_its_own_code() -> None:
    with HangingServer() as server:
        memory = MemoryClient(endpoint=server.url, tenant="acme", timeout=TIMEOUT_S, strict=True)
        with pytest.raises(RequestTimeoutError):
            memory.get("alice")
        with pytest.raises(CircuitOpenError) as raised:
            memory.add("alice", "User: hi\nAssistant: hello")
        assert raised.value.code == "circuit_open" and raised.value.status is None

        async def scenario() -> None:
            async with AsyncMemoryClient(
                endpoint=server.url, tenant="acme", timeout=TIMEOUT_S, strict=True
            ) as amem:
                with pytest.raises(RequestTimeoutError):
                    await amem.get("alice")
                started = time.monotonic()
                with pytest.raises(CircuitOpenError):
                    await amem.context("alice")
                assert time.monotonic() - started < SKIPPED_S

        asyncio.run(scenario())
        memory.close(0)


class Switch(HangingServer):
    """Holds every connection without an answer until `hang` is False, then answers each request
    with a memory; counts the connections (the client opens one per request here)."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = True
        self.requests = 0

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self.requests += 1
            if self.hang:
                self._connections.append(connection)
            else:
                threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    @staticmethod
    def _answer(connection: socket.socket) -> None:
        with connection:
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                received += chunk
            body = json.dumps(memory_body("Alice sells candles.")).encode()
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            connection.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)


def test_after_the_cooldown_one_trial_goes_and_an_answer_closes_the_circuit() -> None:
    with Switch() as service:
        cooldown = 2.0  # long beside the scheduling delays of a busy machine
        memory = MemoryClient(
            endpoint=service.url, tenant="acme", timeout=TIMEOUT_S, breaker_cooldown=cooldown
        )
        assert memory.get("alice") is None  # times out: the circuit opens
        assert memory.get("alice") is None and service.requests == 1, "skipped without a request"
        deadline = time.monotonic() + 30
        while memory.breaker.retry_in() > 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        # Half-open: one trial, still hanging; meanwhile every other call is skipped at once.
        trial = threading.Thread(target=memory.get, args=("alice",))
        trial.start()
        while service.requests < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        result, elapsed = timed(lambda: memory.get("alice"))
        assert result is None and elapsed < SKIPPED_S and service.requests == 2
        trial.join()
        assert memory.breaker.retry_in() > cooldown / 2, (
            "the failed trial opens the circuit for another cool-down"
        )
        service.hang = False
        while memory.get("alice") is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [memory.get("alice") for _ in range(3)] == ["Alice sells candles."] * 3
        memory.close(0)


PAGE_S = 0.8  # each page of the slow list: the third gets what is left of the 2 s read budget


def slow_pages(method: str, path: str, body: bytes) -> Answer:
    if "/facts" in path:
        time.sleep(PAGE_S)  # slow but healthy: every page arrives, each with another cursor
        return json_answer(200, {"facts": [], "next_cursor": f"page-{time.monotonic_ns()}"})
    return json_answer(200, memory_body("Alice sells candles."))


def test_a_slow_paged_read_that_runs_out_of_its_budget_leaves_the_circuit_closed() -> None:
    with (
        RecordingServer(slow_pages) as server,
        MemoryClient(endpoint=server.url, tenant="acme", timeout=2.5 * PAGE_S) as memory,
    ):
        assert memory.facts("alice") is None, "the pages did not all arrive within the read budget"
        assert memory.breaker.retry_in() == 0, "the client's own budget ran out: the service answers"
        assert memory.get("alice") == "Alice sells candles.", "the next call goes through"


def test_a_timeout_with_a_shortened_budget_opens_nothing_and_a_refused_connection_still_does() -> None:
    breaker = CircuitBreaker(cooldown=30)
    with pytest.raises(RequestTimeoutError), breaker.guard(full_budget=False):
        raise RequestTimeoutError()
    assert breaker.retry_in() == 0
    with pytest.raises(ConnectionFailedError), breaker.guard(full_budget=False):
        raise ConnectionFailedError()
    assert breaker.retry_in() > 0


def test_a_cooldown_of_zero_turns_the_breaker_off() -> None:
    with HangingServer() as server:
        memory = MemoryClient(endpoint=server.url, tenant="acme", timeout=TIMEOUT_S, breaker_cooldown=0)
        _, elapsed = timed(lambda: [memory.get("alice"), memory.get("alice")])
        memory.close(0)
    assert elapsed >= 2 * TIMEOUT_S * 0.9


def test_an_error_status_is_an_answer_and_leaves_the_circuit_closed() -> None:
    answers = iter([httpx2.Response(500, json=envelope("internal_error", 500))])

    def handler(request: httpx2.Request) -> httpx2.Response:
        return next(answers, httpx2.Response(200, json=memory_body("Alice sells candles.")))

    memory = mocked(handler)
    assert memory.get("alice") is None
    assert memory.get("alice") == "Alice sells candles."


def test_a_refused_connection_opens_the_circuit_as_a_timeout_does() -> None:
    memory = MemoryClient(endpoint=f"http://127.0.0.1:{closed_port()}", tenant="acme", strict=True)
    with pytest.raises(ConnectionFailedError):
        memory.get("alice")
    with pytest.raises(CircuitOpenError):
        memory.get("alice")
    memory.close(0)


def test_the_breaker_lets_exactly_one_trial_through_after_its_cooldown() -> None:
    now = [100.0]
    breaker = CircuitBreaker(cooldown=30, clock=lambda: now[0])

    def attempt(error: Exception | None = None) -> None:
        with breaker.guard():
            if error is not None:
                raise error

    with pytest.raises(RequestTimeoutError):
        attempt(RequestTimeoutError())
    now[0] += 29.9
    with pytest.raises(CircuitOpenError):
        attempt()
    now[0] += 0.2
    with breaker.guard():  # the trial, in flight ...
        with pytest.raises(CircuitOpenError):
            attempt()  # ... and no second one beside it
        raised_inside = True
    assert raised_inside and breaker.retry_in() == 0, "the trial's success closed the circuit"
    with pytest.raises(NotFoundError):
        attempt(NotFoundError())  # an error status is an answer: still closed
    attempt()


EXIT_SCRIPT = """
import sys, time
from hippocampus_client import MemoryClient
memory = MemoryClient(endpoint=sys.argv[1], tenant="acme", timeout=0.4, exit_timeout=10)
memory.get("alice")  # hangs 0.4 s: the circuit opens
for n in range(3):
    memory.add("alice", f"User: private {n}\\nAssistant: ok", id=f"turn-{n}")
print(time.monotonic(), flush=True)  # the exit flush starts now
"""


def test_the_exit_flush_stops_at_once_when_the_circuit_is_open() -> None:
    with HangingServer() as server:
        command = [sys.executable, "-c", EXIT_SCRIPT, server.url]
        finished = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        ended = time.monotonic()
    assert finished.returncode == 0, finished.stderr
    exit_s = ended - float(finished.stdout)  # from the child's own timestamp: not its start-up
    assert exit_s < 5.0, f"exit took {exit_s:.1f} s of its 10 s budget"
    assert "3 items unsent" in finished.stderr and "item_ids=turn-0,turn-1,turn-2" in finished.stderr
    assert "private" not in finished.stderr
