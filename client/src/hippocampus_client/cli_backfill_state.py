"""What `hippocampus backfill` remembers between runs (client/README.md "CLI", resuming).

The state file says which lines are settled: every line up to `settled_through`, plus the few
beyond it that finished early (`settled_after`); of those, `failed` did not make it and are sent
again by the next run. It is rewritten atomically (a temporary file, fsync, rename), so an
interruption leaves either the old state or the new one. What was sent after the last write is
sent again on resume, and recognised by the service: each batch carries a deterministic
Idempotency-Key and each item a deterministic id (cli_backfill_lines.py).

The failed lines also go to `FILE.failed.jsonl`, one per line, ready for a re-run.
"""

import json
import os
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from .errors import ConfigurationError

STATE_FORMAT = "hippocampus-backfill-state/1"
SAVE_INTERVAL_S = 0.2  # at most this often while running; always at the end


class BackfillState:
    """`agent`: the agent whose scope the lines go to (`--agent`), None for the users' own memory."""

    def __init__(self, path: Path, source: str, target: str, tenant: str, agent: str | None = None) -> None:
        self.path = path
        self.identity = {"source": source, "target": target, "tenant": tenant, "agent": agent}
        self.settled_through = 0
        self.settled_after: set[int] = set()
        self.failed: set[int] = set()
        self._dirty = False
        self._saved_at = 0.0

    @classmethod
    def load(
        cls, path: Path, source: str, target: str, tenant: str, restart: bool, agent: str | None = None
    ) -> "BackfillState":
        """The state at `path` (a new one if there is none, or with `restart`); refuses the state
        of another tenant, deployment or scope (another agent's, or the users' own for an agent's
        run and the reverse), whose done lines were never sent where this run sends. A state
        written before agent scopes names no agent: the users' own."""
        state = cls(path, source, target, tenant, agent)
        if restart or not path.exists():
            return state
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            assert data["format"] == STATE_FORMAT
            state.settled_through = int(data["settled_through"])
            state.settled_after = {int(n) for n in data["settled_after"]}
            state.failed = {n for start, end in data["failed"] for n in range(int(start), int(end) + 1)}
        except (ValueError, KeyError, TypeError, AssertionError):
            raise ConfigurationError(
                f"{path} is not a backfill state file: pass --state or --restart"
            ) from None
        for name in ("tenant", "target", "agent"):
            if data.get(name) != state.identity[name]:
                raise ConfigurationError(
                    f"{path} is the state of {'' if name == 'agent' else name + ' '}"
                    f"{_named(name, data.get(name))}, not {_named(name, state.identity[name])}: "
                    "pass --state PATH for this run, or --restart"
                )
        return state

    def is_done(self, number: int) -> bool:
        settled = number <= self.settled_through or number in self.settled_after
        return settled and number not in self.failed

    @property
    def done_count(self) -> int:
        return self.settled_through + len(self.settled_after) - len(self.failed)

    def mark_done(self, number: int) -> None:
        self.failed.discard(number)
        self._settle(number)

    def mark_failed(self, number: int) -> None:
        self.failed.add(number)
        self._settle(number)

    def _settle(self, number: int) -> None:
        if number > self.settled_through:
            self.settled_after.add(number)
            while self.settled_through + 1 in self.settled_after:
                self.settled_through += 1
                self.settled_after.discard(self.settled_through)
        self._dirty = True

    def save(self, force: bool = False) -> None:
        if not self._dirty or (not force and time.monotonic() - self._saved_at < SAVE_INTERVAL_S):
            return
        document = {
            "format": STATE_FORMAT,
            **self.identity,
            "settled_through": self.settled_through,
            "settled_after": sorted(self.settled_after),
            "failed": list(_ranges(self.failed)),
            "updated_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        }
        write_atomically(self.path, json.dumps(document).encode() + b"\n")
        self._dirty = False
        self._saved_at = time.monotonic()


def _named(name: str, value: object) -> str:
    """A state's tenant or target as `'acme'`; its agent as `agent 'research'` or, for none, the users'."""
    if name != "agent":
        return repr(value)
    return "the users' own memory (no --agent)" if value is None else f"agent {value!r}"


def _ranges(numbers: Iterable[int]) -> Iterator[list[int]]:
    """[[3, 5], [9, 9]] for {3, 4, 5, 9}: a long run of failures stays short."""
    start = end = None
    for number in sorted(numbers):
        if end is not None and number == end + 1:
            end = number
            continue
        if start is not None and end is not None:
            yield [start, end]
        start = end = number
    if start is not None and end is not None:
        yield [start, end]


def write_atomically(path: Path, content: bytes) -> None:
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with temporary.open("wb") as file:
        file.write(content)
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)


class FailedLines:
    """`FILE.failed.jsonl`: this run's failed lines. Emptied when a run starts (the lines that
    failed before are sent again by it), written as failures happen."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0
        self._file: BinaryIO | None = None
        path.unlink(missing_ok=True)

    def write_record(self, record: dict[str, Any]) -> None:
        self._write(json.dumps(record, ensure_ascii=False).encode())

    def write_raw(self, raw: bytes) -> None:
        """A line that could not be read is copied as it is: it needs a fix before a re-run."""
        self._write(raw.rstrip(b"\r\n"))

    def _write(self, line: bytes) -> None:
        if self._file is None:
            self._file = self.path.open("ab")
        self._file.write(line + b"\n")
        self._file.flush()
        self.count += 1

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
