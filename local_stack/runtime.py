"""A small Lambda runtime: the real handler modules, each execution environment its own process.

Lambda runs one event at a time per execution environment, and keeps everything a handler
builds at import (settings, boto3 clients, the Powertools logger and batch processor) for
the environment's lifetime. Here each function is a pool of worker processes:
- a worker imports the handler once (the cold start) and then serves one event at a time;
- a function scales to `concurrency` workers, created on demand and reused while warm;
- the functions never share module state, as separate Lambda functions never do;
- an invocation over the function's timeout kills its worker ("Task timed out"), and a
  worker that dies is replaced on the next invocation;
- an invocation that finds every environment busy waits briefly for one, then is throttled
  (`Throttled`, which API Gateway answers 429), as Lambda throttles at its concurrency limit,
  so a burst is shed quickly instead of queueing until clients time out.

Workers are fresh interpreters (`local_stack.lambda_worker`) that inherit this process's
environment, ignore Ctrl-C (the parent stops them) and exit when the parent goes away.
"""

import contextlib
import json
import logging
import math
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from local_stack.foreground import Foreground
from local_stack.lambda_context import LambdaContext, function_arn
from local_stack.paths import REPO_ROOT
from local_stack.slots import FairSlots

STOP_GRACE_S = 1.0  # a busy environment is killed after this: a stopped stack forgets everything
# Lambda throttles at once; a short wait absorbs the jitter of a few clients without queueing a burst.
THROTTLE_WAIT_S = 2.0
log = logging.getLogger("local_stack.runtime")


@dataclass(frozen=True)
class LocalFunctionSpec:
    name: str
    handler_path: Path
    timeout_s: int
    memory_mb: int
    region: str
    # The deployed function's name (`hippocampus-dev-get-memory`), which the Invoke API answers to.
    deployed_name: str = ""

    @property
    def function_name(self) -> str:
        return self.deployed_name or f"hippocampus-local-{self.name}"


class FunctionError(RuntimeError):
    """The invocation failed as Lambda reports it: an unhandled error, a timeout, a failed init.

    `error_type` and `error_message` are the `errorType` and `errorMessage` Lambda's Invoke API
    returns for it (local_stack/lambda_invoke.py).
    """

    def __init__(
        self, message: str, error_type: str = "Runtime.Unknown", error_message: str | None = None
    ) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.error_message = message if error_message is None else error_message


class Throttled(FunctionError):
    """Every execution environment stayed busy for `THROTTLE_WAIT_S`: Lambda's TooManyRequestsException."""


# --- the parent side ------------------------------------------------------------------------------


class _Worker:
    """One execution environment: `python -m local_stack.lambda_worker`, talking over a socket pair."""

    def __init__(self, spec: LocalFunctionSpec, number: int) -> None:
        parent_socket, child_socket = socket.socketpair()
        self.number = number
        arguments = json.dumps(
            {
                "name": spec.name,
                "handler_path": str(spec.handler_path),
                "fd": child_socket.fileno(),
            }
        )
        self.process = subprocess.Popen(
            [sys.executable, "-m", "local_stack.lambda_worker", arguments],
            cwd=REPO_ROOT,
            pass_fds=(child_socket.fileno(),),
            stdin=subprocess.DEVNULL,
        )
        child_socket.close()
        self.connection = Connection(parent_socket.detach())
        # stop() and an invocation ending as the stack stops may both close it: one closes the
        # descriptor, never both (a second close could take a descriptor the number went to since).
        self._closing = threading.Lock()

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_ready(self, timeout_s: float, name: str) -> float:
        if not self.connection.poll(timeout_s):
            self.kill()
            raise FunctionError(f"{name}: init did not finish within {timeout_s:.0f} s")
        try:
            status, value = self.connection.recv()
        except EOFError:
            self.kill()
            raise FunctionError(f"{name}: the runtime exited during init") from None
        if status != "ready":
            self.kill()
            raise FunctionError(f"{name}: init failed: {value}")
        return float(value)

    def ask_to_exit(self) -> None:
        """An idle worker exits at once; a busy one after its current event."""
        with contextlib.suppress(OSError, ValueError):
            self.connection.send(None)

    def finish(self, deadline: float) -> None:
        """Wait for the exit until `deadline` (monotonic), then kill."""
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
        self._close()

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(STOP_GRACE_S)
        self._close()

    def _close(self) -> None:
        with self._closing:
            self.connection.close()  # a no-op once closed


class LocalFunction:
    """One function: up to `concurrency` execution environments, each serving one event at a time."""

    def __init__(
        self,
        spec: LocalFunctionSpec,
        concurrency: int,
        throttle_wait_s: float = THROTTLE_WAIT_S,
        foreground: Foreground | None = None,
    ) -> None:
        """`foreground`: where a function serving callers (not the queue) counts its invocations."""
        self.spec = spec
        self.throttle_wait_s = throttle_wait_s
        self.foreground = foreground
        self.arn = function_arn(spec.region, spec.function_name)
        self._slots = FairSlots(concurrency)
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._lock = threading.Lock()
        self._count = 0
        self._closed = False
        self.cold_starts = 0
        self.invocations = 0
        self.throttles = 0
        # What Lambda bills: each invocation's duration, rounded up to the millisecond (init excluded).
        self.billed_ms = 0

    def invoke(self, event: Any, request_id: str | None = None) -> Any:
        """The handler's response to `event`; FunctionError when Lambda would report an error.

        `request_id`: the invocation's `aws_request_id` (a new one by default)."""
        if self.foreground is None:
            return self._invoke(event, request_id)
        with self.foreground.serving():
            return self._invoke(event, request_id)

    def _invoke(self, event: Any, request_id: str | None) -> Any:
        if not self._slots.acquire(self.throttle_wait_s):
            self.throttles += 1
            raise Throttled(f"{self.spec.name}: Rate Exceeded (concurrency limit reached)")
        try:
            worker = self._take()
            healthy = False
            try:
                result = self._run(worker, event, request_id)
                healthy = True
                return result
            except FunctionError:
                healthy = worker.alive()
                raise
            finally:
                self._give_back(worker, healthy)
        finally:
            self._slots.release()

    def warm_up(self) -> float:
        """Start one environment now (so a broken handler fails at start-up); its init time in ms."""
        with self._slots:
            worker, init_ms = self._start_worker()
            self._give_back(worker, healthy=True)
            return init_ms

    def stop(self) -> None:
        with self._lock:
            self._closed = True
            workers = list(self._all)
            self._all.clear()
            self._idle.clear()
        for worker in workers:
            worker.ask_to_exit()
        deadline = time.monotonic() + STOP_GRACE_S
        for worker in workers:
            worker.finish(deadline)

    def _run(self, worker: _Worker, event: Any, request_id: str | None) -> Any:
        started = time.monotonic()
        try:
            return self._exchange(worker, event, request_id)
        finally:
            billed = math.ceil((time.monotonic() - started) * 1000)
            with self._lock:
                self.billed_ms += billed

    def _exchange(self, worker: _Worker, event: Any, request_id: str | None) -> Any:
        context = self._context(request_id)
        self.invocations += 1
        try:
            worker.connection.send((event, asdict(context)))
        except (OSError, ValueError) as exc:
            worker.kill()
            raise FunctionError(f"{self.spec.name}: Runtime.ExitError ({exc})", "Runtime.ExitError") from exc
        if not worker.connection.poll(self.spec.timeout_s):
            worker.kill()
            log.error(
                "%s: request %s: Task timed out after %d seconds",
                self.spec.name,
                context.aws_request_id,
                self.spec.timeout_s,
            )
            raise FunctionError(
                f"{self.spec.name}: Task timed out after {self.spec.timeout_s} seconds",
                "Sandbox.Timedout",
                f"Task timed out after {self.spec.timeout_s:.2f} seconds",
            )
        try:
            status, value = worker.connection.recv()
        except (EOFError, OSError) as exc:
            worker.kill()
            log.error("%s: request %s: the runtime exited", self.spec.name, context.aws_request_id)
            raise FunctionError(f"{self.spec.name}: Runtime.ExitError", "Runtime.ExitError") from exc
        if status == "ok":
            return value
        log.error("%s: request %s failed: %s", self.spec.name, context.aws_request_id, value)
        # The worker reports "<exception type>: <message>", as Lambda's errorType and errorMessage.
        error_type, _, error_message = str(value).partition(": ")
        raise FunctionError(f"{self.spec.name}: {value}", error_type, error_message)

    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise FunctionError(f"{self.spec.name}: the local stack is stopping")
            if self._idle:
                return self._idle.pop()
        worker, _ = self._start_worker()
        return worker

    def _start_worker(self) -> tuple[_Worker, float]:
        with self._lock:
            self._count += 1
            number = self._count
        worker = _Worker(self.spec, number)
        init_ms = worker.wait_ready(max(self.spec.timeout_s, 30), self.spec.name)
        self.cold_starts += 1
        log.debug("%s: environment %d ready, init %.0f ms", self.spec.name, number, init_ms)
        with self._lock:
            self._all.add(worker)
        return worker, init_ms

    def _give_back(self, worker: _Worker, healthy: bool) -> None:
        with self._lock:
            if healthy and not self._closed:
                self._idle.append(worker)
                return
            self._all.discard(worker)
        worker.kill()

    def _context(self, request_id: str | None) -> LambdaContext:
        return LambdaContext(
            aws_request_id=request_id or str(uuid.uuid4()),
            function_name=self.spec.function_name,
            memory_limit_in_mb=self.spec.memory_mb,
            invoked_function_arn=self.arn,
            remaining_ms=self.spec.timeout_s * 1000,
            log_group_name=f"/aws/lambda/{self.spec.function_name}",
            log_stream_name=time.strftime("%Y/%m/%d/[$LATEST]") + uuid.uuid4().hex,
        )
