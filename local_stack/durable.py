"""The local stack's state in a data directory, kept across restarts and kills (docs/operations.md "Local stack").

The directory holds a snapshot of everything and a write-ahead journal of what changed since:
- while moto serves, every request that changed an item, an object or a message has its records
  appended to the journal and fsynced before its answer leaves, so whatever moto acknowledged is
  on disk, SIGKILL or not;
- at start-up, once the resources are provisioned and before anything is served, the snapshot
  and then the journal are replayed into moto (a torn last record, never acknowledged, is
  dropped), and compacted: a new snapshot of everything, then an empty journal, each written
  aside and renamed into place. The snapshot names the journal it includes, so a kill between
  the two renames replays nothing twice.
"""

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

from local_stack import moto_state
from local_stack.changes import Changes, recording
from local_stack.journal import DirectoryLock, Journal, Record, StateError, header, read, write_atomically

log = logging.getLogger("local_stack.state")

SNAPSHOT, JOURNAL = "snapshot", "journal"
# Where a request's journal ticket waits for `SyncBeforeAnswer`, in the WSGI environ.
_TICKET = "hippocampus.journal_ticket"

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


# What the snapshot's records hold, by service.
_KINDS = {"dynamodb": "items", "s3": "objects", "sqs": "messages"}


@dataclass(frozen=True)
class Restored:
    kept: Counter[str]  # items, objects and messages now in moto
    dropped: int  # records of resources the stack no longer provisions
    torn_bytes: int

    def summary(self) -> str:
        kept = ", ".join(f"{self.kept[kind]} {kind}" for kind in _KINDS.values())
        notes = [f"{self.dropped} records of resources no longer provisioned dropped"] if self.dropped else []
        if self.torn_bytes:
            notes.append(f"a torn last record ({self.torn_bytes} bytes, never acknowledged) dropped")
        return "; ".join([kept + " restored", *notes])


class DurableState:
    """A data directory: locked while a stack uses it, replayed once, then journaled."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.journal: Journal | None = None
        self._lock = DirectoryLock(directory)
        # Reading a request's after images and appending them is one step: two requests that
        # wrote the same object append in the order they read it.
        self._images = threading.Lock()

    def open(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
        except OSError as error:
            raise StateError(f"cannot use the data directory {self.directory}: {error}") from error

    def restore(self) -> Restored:
        """Replay the saved state into moto (provisioned, not serving yet), then compact it."""
        snapshot = read(self.directory / SNAPSHOT, SNAPSHOT)
        journal = read(self.directory / JOURNAL, JOURNAL)
        if snapshot is not None and snapshot.torn_bytes:
            raise StateError(f"{self.directory / SNAPSHOT} is damaged (it is written aside and renamed)")
        stream: Iterable[Record] = snapshot.records() if snapshot is not None else []
        covered = snapshot.header.get("covers") if snapshot is not None else None
        torn = 0
        if journal is not None and journal.header["id"] != covered:
            stream, torn = chain(stream, journal.records()), journal.torn_bytes
        dropped = moto_state.replay(stream)
        kept = self._compact(journal.header["id"] if journal is not None else covered)
        return Restored(kept, dropped, torn)

    def _compact(self, covers: str | None) -> Counter[str]:
        kept: Counter[str] = Counter()

        def counted() -> Iterator[Record]:
            for record in moto_state.dump():
                kept[_KINDS[record["s"]]] += 1
                yield record

        write_atomically(self.directory / SNAPSHOT, header(SNAPSHOT, covers=covers), counted())
        write_atomically(self.directory / JOURNAL, header(JOURNAL), [])
        self.journal = Journal(self.directory / JOURNAL)
        return kept

    def record(self, changes: Changes) -> int:
        """Append what one request changed; the ticket to sync before answering (0: nothing)."""
        if not changes:
            return 0
        with self._images:
            if self.journal is None:
                raise StateError("moto was changed before the saved state was restored")
            return self.journal.append(moto_state.records(changes))

    def sync(self, ticket: int) -> None:
        if ticket and self.journal is not None:
            self.journal.sync(ticket)

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()
            self.journal = None
        self._lock.release()


class RecordChanges:
    """WSGI middleware, inside `SerializedDynamoDB`: records what moto changed for each request, so
    DynamoDB's records are appended in the order its requests were applied."""

    def __init__(self, app: WsgiApp, state: DurableState) -> None:
        self._app = app
        self._state = state

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with recording() as changes:
            try:
                return list(self._app(environ, start_response))  # moto builds its whole answer first
            finally:
                # Even when moto failed half-way: what it did change is in the journal.
                environ[_TICKET] = self._state.record(changes)


class SyncBeforeAnswer:
    """WSGI middleware, outermost: an answer leaves once its records are on disk. The server
    (waitress) sends the status line with the first body bytes, so nothing has left before this
    returns."""

    def __init__(self, app: WsgiApp, state: DurableState) -> None:
        self._app = app
        self._state = state

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = self._app(environ, start_response)
        self._state.sync(int(environ.get(_TICKET, 0)))
        return body
