"""The files of the local stack's data directory: a snapshot and a write-ahead journal (docs/operations.md "Local stack").

Both are text files of records, one a line: the CRC-32 of the record (8 hex digits), a space, the
record as JSON, a newline. The first record is a header naming the format and the file. A record
is acknowledged once `Journal.sync` has returned for it, so a SIGKILL can only tear the last one,
which was never acknowledged: reading stops at the first record that is not whole and intact, and
refuses a file with an intact record after a broken one (that is damage, not a kill).
"""

import base64
import contextlib
import fcntl
import json
import os
import threading
import uuid
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = "hippocampus-local-state"
VERSION = 1
# JSON has no bytes: S3 bodies and binary attributes travel as {"$b64": "..."}.
_BYTES = "$b64"

Record = dict[str, Any]


class StateError(RuntimeError):
    """The data directory cannot be used as it is (another stack holds it, or a file is not ours)."""


def _default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {_BYTES: base64.b64encode(value).decode("ascii")}
    raise TypeError(f"cannot journal a {type(value).__name__}")


def _object_hook(value: dict[str, Any]) -> Any:
    if len(value) == 1 and _BYTES in value:
        return base64.b64decode(value[_BYTES])
    return value


def encode(record: Record) -> bytes:
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=False, default=_default).encode()
    return b"%08x %s\n" % (zlib.crc32(text), text)


def _intact(line: bytes) -> bool:
    """Whether a line is whole and its CRC matches (a torn or damaged one is not)."""
    if len(line) < 10 or not line.endswith(b"\n") or line[8:9] != b" ":
        return False
    try:
        return int(line[:8], 16) == zlib.crc32(line[9:-1])
    except ValueError:
        return False


def _decode(path: Path, line: bytes) -> Record:
    try:
        record = json.loads(line[9:-1], object_hook=_object_hook)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        raise StateError(f"{path} holds a record that is not a JSON object")
    return record


@dataclass(frozen=True)
class Contents:
    """A file checked whole: its header, where its intact records end, what followed them."""

    path: Path
    header: Record
    start: int  # the first record after the header
    end: int
    torn_bytes: int  # what followed the last intact record (a write cut short)

    def records(self) -> Iterator[Record]:
        """The records, read again from the file one at a time (a snapshot can be large)."""
        with self.path.open("rb") as lines:
            lines.seek(self.start)
            offset = self.start
            for line in lines:
                if offset >= self.end:
                    return
                offset += len(line)
                yield _decode(self.path, line)


def header(kind: str, **fields: Any) -> Record:
    return {"format": FORMAT, "version": VERSION, "kind": kind, "id": uuid.uuid4().hex, **fields}


def _header(path: Path, first: bytes, kind: str) -> Record:
    found = _decode(path, first) if _intact(first) else {}
    if found.get("format") != FORMAT or found.get("kind") != kind:
        raise StateError(f"{path} is not a {kind} of the local stack")
    if found.get("version") != VERSION:
        raise StateError(f"{path} has format version {found.get('version')}; this stack reads {VERSION}")
    return found


def read(path: Path, kind: str) -> Contents | None:
    """Check a snapshot or journal file, without keeping its records; None when there is none."""
    try:
        lines = path.open("rb")
    except FileNotFoundError:
        return None
    with lines:
        first = lines.readline()
        head = _header(path, first, kind)
        start = end = len(first)
        torn = 0
        for line in lines:
            if torn == 0 and _intact(line):
                end += len(line)
            elif torn and _intact(line):
                # A write cut short tears the last record only; an intact one after it is damage.
                raise StateError(f"{path} is damaged at byte {end}")
            else:
                torn += len(line)
    return Contents(path, head, start, end, torn)


def _fsync_directory(directory: Path) -> None:
    # A rename is durable once the directory itself is on disk.
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, head: Record, records: Iterable[Record]) -> None:
    """Replace `path` with a complete file, or leave it as it was: write aside, fsync, rename."""
    partial = path.with_name(path.name + ".partial")
    with partial.open("wb") as out:
        out.write(encode(head))
        for record in records:
            out.write(encode(record))
        out.flush()
        os.fsync(out.fileno())
    partial.replace(path)
    _fsync_directory(path.parent)


class Journal:
    """An open journal: `append` orders records, `sync` makes them durable (one fsync for many callers)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self._write_lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._written = 0  # tickets: records written so far
        self._synced = 0  # records known to be on disk
        self._size = os.fstat(self._fd).st_size

    def append(self, records: Iterable[Record]) -> int:
        """Write `records` in this order; the ticket to `sync` them (0: nothing to sync)."""
        data = b"".join(encode(record) for record in records)
        if not data:
            return 0
        with self._write_lock:
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError:
                # A disk full half-way: cut the partial record off, or the next start reads it as
                # damage once later records follow it.
                os.ftruncate(self._fd, self._size)
                raise
            self._size += len(data)
            self._written += 1
            return self._written

    def sync(self, ticket: int) -> None:
        """Return once everything appended up to `ticket` is on disk."""
        if ticket <= self._synced:
            return
        with self._sync_lock:
            if ticket <= self._synced:
                return  # another caller's fsync covered it meanwhile
            target = self._written
            os.fsync(self._fd)
            self._synced = target

    def close(self) -> None:
        with self._write_lock, contextlib.suppress(OSError):
            os.close(self._fd)


class DirectoryLock:
    """One stack per data directory: two would interleave their journals. The kernel drops the lock
    when the process dies, SIGKILL included."""

    def __init__(self, directory: Path) -> None:
        self._path = directory / "lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StateError(
                f"another local stack is using {self._path.parent}: stop it, or use --data-dir or --in-memory"
            ) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
