"""The background writer behind `add`: a bounded queue per user, drained by a few daemon threads.

`add` hands its request over and returns at once (client/README.md, "The background writer").
The threads merge what is queued for one user into requests within the API's limits (100 items,
a body well under 1 MiB; docs/api.md "Limits"): consecutive `add`s of the same user and the same
`upsert` go in one request, an `add` with an `Idempotency-Key` always alone. One user's requests
go one after the other, in order; several users' go at once, one per thread. An agent's scope of a
user (docs/api.md "Agent scopes") is queued as a user of its own: its items go to its own route.

What happens to a request:
- accepted: its items are `sent`;
- 429 or 503 (after the sender's own retries), a timeout, a refused connection, or skipped by
  the open circuit breaker: nothing is lost, the items go back to the head of their user's queue
  and the thread backs off (the breaker holds every thread until its cool-down ends); a request
  that timed out may have been applied, so every item is given an id when queued (`_with_item_ids`):
  sent again, it is deduplicated by the service instead of stored twice;
- refused with a 4xx but 429: a merged request is split back into its `add`s, each sent alone,
  so one bad `add` does not take its neighbours down; an `add` refused alone is `failed`;
- failed otherwise (500, 502, 504, an answer of the wrong shape): it may have been applied, so
  it is not sent again: `failed`. Failures are logged with the items' ids.

`close` (and the interpreter's exit, for every live writer) waits at most its timeout, and not
at all while the breaker is open; whatever is still held then, queued or in flight, is reported,
ids only, in one log line and to `on_unsent`, and appended to the spool file when one is
configured (spool.py). A request still in flight may yet arrive: it is reported all the same.
What `resume` took from the spool keeps its claimed files until all of it was delivered or
spooled again (`_settle_claim`).

The async client uses these same threads: an asyncio task would be cancelled with its event loop
(`asyncio.run` returning), losing what it still held, while a thread is still there at exit.
Daemon threads, not a ThreadPoolExecutor: the interpreter joins an executor's threads before
`atexit` runs, so a hung request would hold the exit forever.
"""

import atexit
import logging
import os
import random
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from . import calls, spool
from .breaker import CircuitBreaker
from .calls import Call, Scope
from .errors import ApiError, HippocampusError, MalformedResponseError, TransportError
from .retry import RETRY_STATUSES
from .transport import encode_json

logger = logging.getLogger("hippocampus_client")
MAX_ITEMS_PER_REQUEST = 100  # docs/api.md "Limits"
# Half the API's 1 MiB: the measure is the items' compact JSON, and the body adds its envelope,
# the escaping of another encoder, and base64 in a direct invocation.
MAX_REQUEST_BYTES = 512 * 1024
BACKOFF_BASE_S, BACKOFF_MAX_S = 0.1, 2.0
IDS_LOGGED = 100  # item ids named in the log line of what was left unsent (on_unsent gets all)


class _UserItems(NamedTuple):
    user_id: str
    item_ids: list[str | None]  # None: an item given without an id


class Unsent(_UserItems):
    """Items of one user (or of one agent's scope of that user) left unsent when the writer closed.

    A pair, `(user_id, item_ids)`, as before agent scopes (`for user, ids in unsent:` still
    works), with `agent_id` beside it: the agent whose scope they were for (docs/api.md "Agent
    scopes"), None for the user's own. It is compared (with another `Unsent`) and shown, but
    neither iterated, indexed nor counted in `len`."""

    agent_id: str | None = None  # the class's: what `_make` builds reads None

    def __new__(cls, user_id: str, item_ids: list[str | None], agent_id: str | None = None) -> "Unsent":
        self = super().__new__(cls, user_id, item_ids)
        self.agent_id = agent_id
        return self

    def _replace(self, /, **changes: Any) -> "Unsent":
        agent_id = changes.pop("agent_id", self.agent_id)
        user_id, item_ids = super()._replace(**changes)
        return Unsent(user_id, item_ids, agent_id)

    def __getnewargs__(self) -> tuple[str, list[str | None], str | None]:  # copy and pickle keep it
        return self.user_id, self.item_ids, self.agent_id

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Unsent) and self.agent_id != other.agent_id:
            return False
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        return f"Unsent(user_id={self.user_id!r}, item_ids={self.item_ids!r}, agent_id={self.agent_id!r})"


@dataclass(frozen=True)
class WriterStats:
    """Counts of items (an `add` of 3 items counts 3), since the client was made."""

    queued: int  # waiting now
    in_flight: int  # being sent now
    sent: int  # accepted by the service
    failed: int  # refused by the service, logged with their ids
    dropped: int  # refused by `add`: the queue was full, or the client closed
    unsent: int = 0  # still held when the writer closed: reported (log, on_unsent), spooled if set
    requests: int = 0  # requests accepted (merged: far fewer than the items)


@dataclass(frozen=True)
class WriterOptions:
    max_queue: int = 10_000  # items
    exit_timeout: float = 10.0
    threads: int = 4
    spool_path: Path | None = None
    on_unsent: Callable[[list[Unsent]], object] | None = None


# Tenant, user, agent ("" for the user's own routes): a queue per scope, so the items of an
# agent's scope are never merged into the user's (a client sends one scope's, its own and those
# it claims from the spool, spool.py; the key keeps them apart all the same).
UserKey = tuple[str, str, str]


@dataclass
class _Add:
    """One `add`'s request, queued."""

    call: Call
    items: int
    size: int  # bytes of its items as compact JSON
    alone: bool = False  # sent by itself: it has an Idempotency-Key, or its merged request was refused
    from_spool: bool = False  # queued again from the spool: its claimed file is kept until it settles

    @classmethod
    def of(cls, call: Call, from_spool: bool = False) -> "_Add":
        items = call.fields.get("items") if calls.is_ingest(call) else None
        if not isinstance(items, list):
            return cls(call, 1, 0, alone=True, from_spool=from_spool)
        call = _with_item_ids(call, items)
        items = call.fields["items"]
        try:
            size = len(encode_json(items))
        except (TypeError, ValueError):  # not JSON: sent alone, and refused by the transport
            return cls(call, len(items), 0, alone=True, from_spool=from_spool)
        alone = bool(call.headers)  # headers: an Idempotency-Key
        return cls(call, len(items), size, alone=alone, from_spool=from_spool)

    @property
    def key(self) -> UserKey:
        fields = self.call.fields
        return str(fields.get("tenant_id")), str(fields.get("user_id")), str(fields.get("agent_id") or "")

    def item_ids(self) -> list[str | None]:
        items = self.call.fields.get("items")
        if not isinstance(items, list):
            return []
        return [item.get("id") if isinstance(item, dict) else None for item in items]

    def joins(self, batch: list["_Add"], items: int, size: int) -> bool:
        head = batch[0]
        return (
            not self.alone
            and not head.alone
            and self.call.fields.get("upsert") == head.call.fields.get("upsert")
            and items + self.items <= MAX_ITEMS_PER_REQUEST
            and size + self.size <= MAX_REQUEST_BYTES
        )


def _with_item_ids(call: Call, items: list[Any]) -> Call:
    """`call` with an id of the client's making on every item given without one.

    A request that timed out may have been applied, and is sent again: the service derives an
    item's job id from its id and content, so the same id makes the resend (or a spool replay)
    return the original job, where an id the service made up would store the item twice. An `add`
    with an Idempotency-Key keeps its body as given: the key names that exact body."""
    if call.headers or not any(isinstance(item, dict) and item.get("id") is None for item in items):
        return call
    named = [
        item | {"id": f"item-{uuid.uuid4().hex}"}
        if isinstance(item, dict) and item.get("id") is None
        else item
        for item in items
    ]
    fields = call.fields
    return calls.ingest(Scope.of(fields), named, fields["upsert"], None)


@dataclass
class _Batch:
    """What one request sends: consecutive compatible `add`s of one user."""

    key: UserKey
    adds: list[_Add] = field(default_factory=list)

    @property
    def items(self) -> int:
        return sum(add.items for add in self.adds)

    def call(self) -> Call:
        if len(self.adds) == 1:
            return self.adds[0].call
        head = self.adds[0].call.fields
        items = [item for add in self.adds for item in add.call.fields["items"]]
        return calls.ingest(Scope.of(head), items, head["upsert"], None)

    def from_spool(self) -> int:
        return sum(1 for add in self.adds if add.from_spool)

    def log_ids(self) -> str:
        ids = [str(i) for add in self.adds for i in add.item_ids() if i is not None]
        return f"{self.adds[0].call.log_ids()} items={self.items} item_ids={','.join(ids) or '-'}"


class BackgroundWriter:
    def __init__(
        self, send: Callable[[Call], object], options: WriterOptions, breaker: CircuitBreaker
    ) -> None:
        self._send = send
        self.options = options
        self.max_queue = max(1, options.max_queue)
        self.exit_timeout = options.exit_timeout
        self._breaker = breaker
        self._reset()
        self._sent = self._failed = self._dropped = self._unsent = self._requests = 0
        self._drops = 0  # `add`s dropped: the warnings' cadence
        _LIVE.add(self)

    def _reset(self) -> None:
        lock = threading.Lock()
        self._work = threading.Condition(lock)  # workers wait here for something to send
        self._changed = threading.Condition(lock)  # flush and close wait here
        self._pending: dict[UserKey, deque[_Add]] = {}  # insertion order: the next user served
        self._busy: set[UserKey] = set()  # users with a request in flight
        self._sending: list[_Batch] = []
        self._queued = self._in_flight = 0
        self._threads: list[threading.Thread] = []
        self._stopped = False
        self._claim: spool.Claim | None = None  # what `resume` took from the spool, kept until delivered
        self._claim_left = 0  # its `add`s not yet delivered

    # --- handing over ----------------------------------------------------------------------------

    def submit(self, call: Call) -> bool:
        """Queue `call`; False when it was dropped (queue full, or the writer closed)."""
        add = _Add.of(call)  # measured here, outside the lock
        with self._work:
            if self._queue(add):
                return True
            drops, dropped, queued, closed = self._drops, self._dropped, self._queued, self._stopped
        _warn_dropped(drops, dropped, queued, closed)
        return False

    def _queue(self, add: _Add) -> bool:
        """Queue `add` (the lock held); False, counted as dropped, when full or closed."""
        if self._stopped or self._queued >= self.max_queue:
            self._dropped += add.items
            self._drops += 1
            return False
        self._pending.setdefault(add.key, deque()).append(add)
        self._queued += add.items
        self._start()
        self._work.notify()
        return True

    def _settle_claim(self, settled: int = 0) -> None:
        """`settled` spooled `add`s were delivered; the claimed files go once none is left."""
        with self._work:
            self._claim_left -= settled
            claim = self._claim if self._claim_left <= 0 else None
            if claim is not None:
                self._claim = None
        if claim is not None:
            claim.release()

    def resume(self, claim: spool.Claim) -> None:
        """Queue what a previous process spooled, ahead of any new `add`; the claimed files are
        deleted once all of it was delivered, or spooled again at close."""
        with self._work:
            self._claim, self._claim_left = claim, 0
        for call in claim.calls:
            add = _Add.of(call, from_spool=True)
            with self._work:
                if not self._queue(add):  # not queued: the files stay for the next start
                    self._claim = None
                self._claim_left += 1
        self._settle_claim()

    def _start(self) -> None:
        while len(self._threads) < max(1, self.options.threads):
            name = f"hippocampus-client-writer-{len(self._threads) + 1}"
            thread = threading.Thread(target=self._run, name=name, daemon=True)
            self._threads.append(thread)
            thread.start()

    # --- the threads -----------------------------------------------------------------------------

    def _run(self) -> None:
        holds = 0  # consecutive requests this thread had to hold back
        while (batch := self._take()) is not None:
            error = self._deliver(batch)
            pause = self._settle(batch, error, holds)
            holds = holds + 1 if pause is not None else 0
            if pause:
                time.sleep(pause)

    def _take(self) -> _Batch | None:
        """The next request to send (None: the writer stopped); waits for one."""
        with self._work:
            while not self._stopped:
                wait = self._breaker.retry_in()
                key = None if wait else next((k for k in self._pending if k not in self._busy), None)
                if key is not None:
                    return self._batch_of(key)
                self._work.wait(wait or None)
            return None

    def _batch_of(self, key: UserKey) -> _Batch:
        queue = self._pending.pop(key)
        batch = _Batch(key, [queue.popleft()])
        items, size = batch.adds[0].items, batch.adds[0].size
        while queue and queue[0].joins(batch.adds, items, size):
            add = queue.popleft()
            batch.adds.append(add)
            items, size = items + add.items, size + add.size
        if queue:
            self._pending[key] = queue  # to the end: the other users go first
        self._busy.add(key)
        self._sending.append(batch)
        self._queued -= items
        self._in_flight += items
        return batch

    def _deliver(self, batch: _Batch) -> Exception | None:
        try:
            self._send(batch.call())
        except Exception as error:  # never let the thread die: the next request must still go
            return error
        return None

    def _settle(self, batch: _Batch, error: Exception | None, holds: int) -> float | None:
        """Count the outcome, put back what is to be sent again; the pause before the next one."""
        pause: float | None = None
        settled = 0  # spooled `add`s delivered by this request
        with self._work:
            self._busy.discard(batch.key)
            self._sending.remove(batch)
            self._in_flight -= batch.items
            if error is None:
                self._sent += batch.items
                self._requests += 1
                settled = batch.from_spool()
            elif _worth_again(error):
                self._put_back(batch.adds)
                pause = _backoff(error, holds)
            elif len(batch.adds) > 1 and _refused(error):
                for add in batch.adds:
                    add.alone = True
                self._put_back(batch.adds)
            else:
                self._failed += batch.items
                settled = batch.from_spool()
                _log_failed(batch, error)
            self._work.notify_all()
            self._changed.notify_all()
        if settled:
            self._settle_claim(settled)
        return pause

    def _put_back(self, adds: list[_Add]) -> None:
        if self._stopped:  # closed meanwhile: already reported as unsent
            return
        queue = self._pending.setdefault(adds[0].key, deque())
        queue.extendleft(reversed(adds))
        self._queued += sum(add.items for add in adds)

    # --- waiting, closing ------------------------------------------------------------------------

    def _idle(self) -> bool:
        return not self._queued and not self._in_flight

    def _done_or_held(self) -> bool:
        return self._idle() or self._breaker.retry_in() > 0

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything queued so far was sent (or refused); False on timeout, or at
        once while the circuit breaker holds the requests back."""
        with self._changed:
            self._changed.wait_for(self._done_or_held, timeout)
            return self._idle()

    def close(self, timeout: float | None = None) -> bool:
        """Send what is held within `timeout` (less when the breaker is open), then stop the
        threads and report what is left; later `submit`s are dropped."""
        return self.close_by(None if timeout is None else time.monotonic() + timeout)

    def close_by(self, deadline: float | None) -> bool:
        with self._changed:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            self._changed.wait_for(self._done_or_held, left)
            flushed = self._idle()
            unsent = self._stop()
        _LIVE.discard(self)
        if unsent:
            self._report(unsent)
        return flushed

    def _stop(self) -> list[_Add]:
        """Stop (the lock held); what is left, in order per user: in flight first, then queued."""
        if self._stopped:
            return []
        self._stopped = True
        left = [add for batch in self._sending for add in batch.adds]
        for queue in self._pending.values():
            left += queue
        self._pending.clear()
        self._queued = 0
        self._unsent += sum(add.items for add in left)
        self._work.notify_all()
        return sorted(left, key=_order_by_user(left))

    def _report(self, left: list[_Add]) -> None:
        written, spooled = self._spool(left)
        if written:  # the spooled adds left are in the spool again: their claimed files may go
            self._settle_claim(sum(1 for add in left if add.from_spool))
        unsent = _by_user(left)
        logger.warning(
            "hippocampus background writer closed with %d items unsent (%s): %s",
            sum(add.items for add in left), spooled, _ids_text(unsent),
        )  # fmt: skip
        if self.options.on_unsent is not None:
            try:
                self.options.on_unsent(unsent)
            except Exception as error:  # the application's callback must not break the exit
                logger.warning("hippocampus on_unsent raised %s", type(error).__name__)

    def _spool(self, left: list[_Add]) -> tuple[bool, str]:
        """Append `left` to the spool file: whether it was written, and the log's words for it."""
        path = self.options.spool_path
        if path is None:
            return False, "not spooled: no spool_path"
        lines = [spool.spool_line(add.call) for add in left if calls.is_ingest(add.call)]
        try:
            spool.append(path, lines)
        except (OSError, TypeError, ValueError) as error:
            return False, f"could not spool to {path}: {type(error).__name__}"
        return True, f"spooled to {path}"

    def stats(self) -> WriterStats:
        with self._work:
            return WriterStats(
                self._queued, self._in_flight, self._sent, self._failed, self._dropped,
                self._unsent, self._requests,
            )  # fmt: skip

    def _forget_after_fork(self) -> None:
        # A forked child has no writer thread: what was queued is the parent's to send, and the
        # child's exit must not wait for it. Later adds in the child start threads of their own.
        stopped = self._stopped
        if self._claim is not None:
            self._claim.forget()
        self._reset()
        self._stopped = stopped


def _worth_again(error: Exception) -> bool:
    """Nothing was done (429, 503), or the service did not answer: send it again later."""
    if isinstance(error, ApiError):
        return error.status in RETRY_STATUSES
    return isinstance(error, TransportError) and not isinstance(error, MalformedResponseError)


def _refused(error: Exception) -> bool:
    """A 4xx: this request was not applied; its `add`s alone may well be."""
    return isinstance(error, ApiError) and error.status is not None and 400 <= error.status < 500


def _backoff(error: Exception, holds: int) -> float:
    asked = error.retry_after if isinstance(error, HippocampusError) else None
    if asked is not None:
        return min(asked, BACKOFF_MAX_S * 5)
    ceiling = min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2**holds)
    return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not secrecy


def _log_failed(batch: _Batch, error: Exception) -> None:
    if isinstance(error, HippocampusError):
        logger.warning(
            "hippocampus background add failed: code=%s status=%s request_id=%s %s",
            error.code, error.status, error.request_id, batch.log_ids(),
        )  # fmt: skip
    else:
        logger.warning("hippocampus background add failed: %s %s", type(error).__name__, batch.log_ids())


def _order_by_user(adds: list[_Add]) -> Callable[[_Add], int]:
    """Group by user (first seen first), keeping each user's order (the sort is stable)."""
    first: dict[UserKey, int] = {}
    for add in adds:
        first.setdefault(add.key, len(first))
    return lambda add: first[add.key]


def _by_user(adds: list[_Add]) -> list[Unsent]:
    grouped: dict[UserKey, list[str | None]] = {}
    for add in adds:
        grouped.setdefault(add.key, []).extend(add.item_ids() or [None] * add.items)
    return [Unsent(user, ids, agent or None) for (_, user, agent), ids in grouped.items()]


def _ids_text(unsent: list[Unsent]) -> str:
    parts: list[str] = []
    named = 0
    for entry in unsent:
        ids = [i for i in entry.item_ids if i is not None][: max(0, IDS_LOGGED - named)]
        named += len(ids)
        anonymous = sum(1 for i in entry.item_ids if i is None)
        agent = f" agent_id={entry.agent_id}" if entry.agent_id is not None else ""
        text = f"user_id={entry.user_id}{agent} items={len(entry.item_ids)}"
        if ids:
            text += f" item_ids={','.join(ids)}"
        parts.append(text + (f" ({anonymous} without id)" if anonymous else ""))
    total = sum(1 for entry in unsent for i in entry.item_ids if i is not None)
    more = f"; {total - named} more ids not shown" if total > named else ""
    return "; ".join(parts) + more


def _warn_dropped(drops: int, dropped: int, queued: int, closed: bool) -> None:
    # Counts only; a warning for the 1st, 2nd, 4th, 8th... drop, so a flood does not flood the log.
    if drops & (drops - 1) == 0:
        reason = "the client is closed" if closed else f"the queue is full ({queued} items waiting)"
        logger.warning("hippocampus add dropped: %s; %d items dropped so far", reason, dropped)


_LIVE: "weakref.WeakSet[BackgroundWriter]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for writer in list(_LIVE):
        writer._forget_after_fork()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _flush_at_exit() -> None:
    """Send what every live writer holds, all at once, waiting at most the longest `exit_timeout`."""
    writers = list(_LIVE)
    if not writers:
        return
    deadline = time.monotonic() + max(w.exit_timeout for w in writers)
    for writer in writers:  # their threads all send meanwhile: one deadline for all
        writer.close_by(deadline)
