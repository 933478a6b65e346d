"""The sending of `hippocampus backfill` (client/README.md "CLI"): lines in, batches out.

One thread reads the file, packs batches (cli_backfill_lines.py) and keeps the books; a pool
sends them, `concurrency` at a time, at most one per user at a time, so each user's items arrive
in file order. A line is settled once every batch holding its items was answered.

- 429, 5xx, timeouts and conflicts are retried by the client (2 quick retries) and then here,
  with pauses that double up to 30 s: an import may outlast a throttling spell.
- A refusal of the content (400, 413, 422) fails the lines at fault: a batch of several lines is
  split into one per line first, so one bad line does not fail its neighbours.
- Anything else (access denied, the service still down after every retry) stops the run: the
  lines not sent are left for a resume, none is marked failed for it.
"""

import random
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from pathlib import Path
from typing import Any, Protocol

from .cli_backfill_lines import Batch, Batcher, Line, LineError, parse_line
from .cli_backfill_state import BackfillState, FailedLines
from .errors import HippocampusError
from .sync_client import MemoryClient

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
RETRY_CODES = frozenset({"client_timeout", "connection_error", "idempotency_conflict", "write_conflict"})
CONTENT_STATUSES = frozenset({400, 413, 422})  # the request's content was refused (docs/api.md "Errors")
MAX_PAUSE_S = 30.0
POLL_S = 0.2  # how often the reader looks at a stop request while it waits for answers


@dataclass(frozen=True)
class Options:
    max_items: int = 100
    max_bytes: int = 512 * 1024
    concurrency: int = 4
    retries: int = 8
    retry_pause: float = 1.0
    window: int = 1000
    timezone: tzinfo = UTC  # of a session's `date_time` (cli_backfill_lines.py)


@dataclass(frozen=True)
class Outcome:
    batch: Batch
    accepted: int = 0
    error: HippocampusError | None = None
    interrupted: bool = False
    retries: int = 0


@dataclass
class Summary:
    lines: int = 0  # non-blank lines read by this run
    done: int = 0
    skipped: int = 0  # done by an earlier run
    failed: int = 0
    items: int = 0  # accepted by the service
    requests: int = 0
    retries: int = 0
    users: set[str] = field(default_factory=set)
    failures: list[dict[str, Any]] = field(default_factory=list)
    stopped: HippocampusError | None = None
    interrupted: bool = False


class Progress(Protocol):
    def update(self, n: int = 1) -> object: ...


def retryable(error: HippocampusError) -> bool:
    return error.status in RETRY_STATUSES or error.code in RETRY_CODES


def send_batch(client: MemoryClient, batch: Batch, options: Options, stop: threading.Event) -> Outcome:
    """Send one batch until it is answered, refused, or the retries are spent (in a worker)."""
    retries = 0
    while True:
        try:
            jobs = client.add(batch.user, batch.items, idempotency_key=batch.key())
            return Outcome(batch, accepted=len(jobs or []), retries=retries)
        except HippocampusError as error:
            if not retryable(error) or retries >= options.retries:
                return Outcome(batch, error=error, retries=retries)
            backoff = min(MAX_PAUSE_S, options.retry_pause * 2**retries) * random.uniform(0.5, 1.0)  # noqa: S311 - jitter
            if stop.wait(error.retry_after if error.retry_after is not None else backoff):
                return Outcome(batch, interrupted=True, retries=retries)
            retries += 1


def numbered_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as file:
        yield from enumerate(file, start=1)


def count_lines(path: Path) -> int:
    count, last = 0, b"\n"
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


class Runner:
    def __init__(
        self,
        client: MemoryClient,
        state: BackfillState,
        failed: FailedLines,
        options: Options,
        progress: Progress,
    ) -> None:
        self.client, self.state, self.failed_lines, self.options = client, state, failed, options
        self.progress = progress
        self.summary = Summary()
        self.stop = threading.Event()
        self._batcher = Batcher(options.max_items, options.max_bytes, options.window)
        self._pending: dict[str, deque[Batch]] = {}  # per user, in order
        self._queued = 0
        self._ready: deque[str] = deque()  # users with a batch to send and none in flight
        self._in_flight: dict[Future[Outcome], str] = {}
        self._open_lines: dict[int, Line] = {}
        self._outstanding: dict[int, int] = {}  # line -> batches not answered yet
        self._line_errors: dict[int, tuple[str, str]] = {}

    def run(self, path: Path) -> Summary:
        pool = ThreadPoolExecutor(self.options.concurrency, thread_name_prefix="hippocampus-backfill")
        try:
            for number, raw in numbered_lines(path):
                if self.stop.is_set():
                    break
                self._read(number, raw)
                self._submit(pool)
                while self._queued > 4 * self.options.concurrency and self._in_flight:
                    self._drain(pool)
            if not self.stop.is_set():
                for batch in self._batcher.flush():
                    self._enqueue(batch)
            self._submit(pool)
            while self._in_flight:
                self._drain(pool)
        finally:
            self.stop.set()  # workers pausing between retries give up at once
            pool.shutdown(wait=True, cancel_futures=True)
            self.failed_lines.close()
            self.state.save(force=True)
        return self.summary

    def request_stop(self) -> None:
        self.summary.interrupted = True
        self.stop.set()

    # --- reading -------------------------------------------------------------------------------

    def _read(self, number: int, raw: bytes) -> None:
        if not raw.strip():
            self.state.mark_done(number)  # blank: nothing to send, and the watermark moves on
            self.progress.update(1)
            return
        if self.state.is_done(number):
            self.summary.skipped += 1
            self.progress.update(1)
            return
        self.summary.lines += 1
        try:
            line = parse_line(number, raw, self.options.timezone)
        except LineError as error:
            self._record_failure(number, error.code, error.message)
            self.failed_lines.write_raw(raw)  # it needs a fix before a re-run
            self._settle(number, failed=True)
            return
        assert line is not None  # not blank
        self.summary.users.add(line.user)
        self._open_lines[number] = line
        try:
            closed, self._outstanding[number] = self._batcher.add(line)
        except LineError as error:  # an item too large for any request
            self._record_failure(number, error.code, error.message)
            self._settle(number, failed=True)
            return
        for batch in closed:
            self._enqueue(batch)

    def _enqueue(self, batch: Batch, first: bool = False) -> None:
        queue = self._pending.setdefault(batch.user, deque())
        if first:  # a split batch goes back where it was: before the user's later batches
            queue.appendleft(batch)
        else:
            queue.append(batch)
        self._queued += 1
        if batch.user not in self._ready and not any(u == batch.user for u in self._in_flight.values()):
            self._ready.append(batch.user)

    # --- sending -------------------------------------------------------------------------------

    def _submit(self, pool: ThreadPoolExecutor) -> None:
        while self._ready and len(self._in_flight) < self.options.concurrency and not self.stop.is_set():
            user = self._ready.popleft()
            batch = self._pending[user].popleft()
            if not self._pending[user]:
                del self._pending[user]
            self._queued -= 1
            future = pool.submit(send_batch, self.client, batch, self.options, self.stop)
            self._in_flight[future] = user

    def _drain(self, pool: ThreadPoolExecutor) -> None:
        finished, _ = wait(self._in_flight, timeout=POLL_S, return_when=FIRST_COMPLETED)
        for future in finished:
            user = self._in_flight.pop(future)
            self._answered(future.result())
            if user in self._pending and user not in self._ready:
                self._ready.append(user)
        self.state.save()
        self._submit(pool)

    def _answered(self, outcome: Outcome) -> None:
        batch, error = outcome.batch, outcome.error
        self.summary.requests += 1
        self.summary.retries += outcome.retries
        if outcome.interrupted:
            return  # its lines stay open: the next run sends them
        if error is None:
            self.summary.items += outcome.accepted
            for number in batch.lines:
                self._settle(number)
        elif error.status in CONTENT_STATUSES and len(batch.lines) > 1:
            for part in reversed(batch.split()):
                self._enqueue(part, first=True)
        elif error.status in CONTENT_STATUSES:
            number = batch.lines[0]
            self._record_failure(number, error.code, error.message or str(error))
            self._settle(number)
        elif self.summary.stopped is None:
            self.summary.stopped = error  # not about the content: stop, and resume later
            self.stop.set()

    # --- the books -----------------------------------------------------------------------------

    def _record_failure(self, number: int, code: str, message: str) -> None:
        if number in self._line_errors:
            return
        self._line_errors[number] = (code, message)
        self.summary.failures.append({"line": number, "code": code, "message": message})
        line = self._open_lines.get(number)
        if line is not None:
            self.failed_lines.write_record(line.retry_record(code, message))

    def _settle(self, number: int, failed: bool = False) -> None:
        """One batch of the line was answered; the line is settled with its last one."""
        remaining = self._outstanding.get(number, 1) - 1
        if remaining > 0:
            self._outstanding[number] = remaining
            return
        self._outstanding.pop(number, None)
        self._open_lines.pop(number, None)
        if failed or number in self._line_errors:
            self.summary.failed += 1
            self.state.mark_failed(number)
        else:
            self.summary.done += 1
            self.state.mark_done(number)
        self.progress.update(1)
