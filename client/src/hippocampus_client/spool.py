"""The opt-in spool of the background writer (client/README.md, "The background writer").

What a client could not send before it closed (the service down, the exit budget spent) is
appended to the spool file, one JSON line per `add` (tenant, user, the agent of an agent's
scope, items, upsert, idempotency key), and sent by the next client of the same scope made with
the same `spool_path`: of that tenant, and of that agent (an agent's line, `agent_id`) or of none
(a user's line, without `agent_id`). A client never sends another scope's lines: a process
granted only one agent's routes would be refused (403) on any other, and a refused item is not
sent again. The file holds the items' content, so it is created readable by its owner only (0600).

A client claims the whole file at start by renaming it to `<spool>.<pid>-<random>.sending`
(atomic: of several processes starting together, one gets each line), queues its own scope's
lines ahead of any new `add`, and puts the other scopes' lines back for a client of theirs. It
holds an exclusive `flock` on the claimed file and deletes it only once every claimed line was
delivered (sent, or refused by the service), or was written to the spool again by its own close.
A claimed file nobody holds a lock on was left by a process that died first (`kill -9`,
`os._exit`, a crash): the next client made with that spool path claims it as well. Such a file
may hold lines already sent, and the other scopes' lines it had put back: sent again, each is
deduplicated by the service (every spooled item has an id, writer.py, or the `add` an
Idempotency-Key). Without `fcntl` (Windows) an abandoned claimed file is not picked up.

A client of a version before agent scopes reads no `agent_id`: it would send an agent's lines to
the user's routes, into the user's shared memory. It must not share a spool with agents' clients.
"""

import contextlib
import json
import logging
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; abandoned claims are not taken over
    fcntl = None  # type: ignore[assignment]

from . import calls
from .calls import Call, Scope
from .transport import encode_json

logger = logging.getLogger("hippocampus_client")
SPOOL_VARIABLE = "HIPPOCAMPUS_SPOOL"


def spool_line(call: Call) -> dict[str, Any]:
    fields = call.fields
    # `agent_id` only for an agent's scope: a user's line is as it was before agents.
    agent = {"agent_id": fields["agent_id"]} if fields.get("agent_id") is not None else {}
    return {
        "tenant_id": fields["tenant_id"],
        "user_id": fields["user_id"],
        **agent,
        "items": fields["items"],
        "upsert": fields["upsert"],
        "idempotency_key": fields.get("idempotency_key"),
    }


def append(path: Path, lines: list[dict[str, Any]]) -> None:
    """Append `lines` in one write; raises OSError."""
    data = b"".join(encode_json(line) + b"\n" for line in lines)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)


@dataclass
class Claim:
    """The calls of one scope (a tenant's users, or one agent's) taken from the spool, and the
    claimed files that hold them."""

    calls: list[Call] = field(default_factory=list)
    _files: list[tuple[int, Path]] = field(default_factory=list)  # (locked descriptor, path)

    def hold(self, source: tuple[int, Path], calls: list[Call]) -> None:
        """Keep `source` (locked) until `release`; a file with none of this scope's lines goes now."""
        self.calls += calls
        self._files.append(source)
        if not calls:
            self._delete(source)

    def release(self) -> None:
        """Every claimed call was delivered or spooled again: delete the claimed files."""
        while self._files:
            self._delete(self._files[-1])

    def _delete(self, source: tuple[int, Path]) -> None:
        descriptor, claimed = source
        with contextlib.suppress(OSError):
            claimed.unlink()
        os.close(descriptor)  # after the unlink: no one takes over a file being deleted
        self._files.remove(source)

    def forget(self) -> None:
        """In a forked child: let go of the parent's claim without touching its files."""
        for descriptor, _ in self._files:
            with contextlib.suppress(OSError):
                os.close(descriptor)
        self._files.clear()


def claim(path: Path, tenant: str, agent: str | None = None) -> Claim:
    """The spooled calls of `tenant`'s scope `agent` (None: the users' own, lines without
    `agent_id`): the spool file's, and those of claimed files whose owner died; each file is kept,
    locked, until `release`. An empty claim when there is none. Every other line is put back."""
    taken = Claim()
    # The abandoned claims first: their lines are older than the spool file's.
    abandoned = [_take_over(claimed) for claimed in sorted(path.parent.glob(f"{path.name}.*.sending"))]
    sources = [*abandoned, _claim_spool(path)]
    for source in sources:
        mine = None if source is None else _read_claimed(path, tenant, agent, source)
        if source is not None and mine is not None:
            taken.hold(source, mine)
    if taken.calls:
        of_agent = f" agent_id={agent}" if agent is not None else ""
        logger.info(
            "hippocampus spool %s: %d requests of tenant_id=%s%s queued again",
            path, len(taken.calls), tenant, of_agent,
        )  # fmt: skip
    return taken


def _claimed_name(path: Path) -> Path:
    return path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(4)}.sending")


def _locked(descriptor: int) -> bool:
    """Take the file's exclusive lock without waiting; False when another holds it."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _open_locked(candidate: Path) -> int | None:
    """A descriptor of `candidate` holding its lock, None when absent or held by another."""
    try:
        descriptor = os.open(candidate, os.O_RDWR)
    except OSError:
        return None
    try:
        # Locked, and still the file of that name (not one deleted, or replaced, meanwhile).
        if _locked(descriptor) and candidate.stat().st_ino == os.fstat(descriptor).st_ino:
            return descriptor
    except OSError:
        pass
    os.close(descriptor)
    return None


def _claim_spool(path: Path) -> tuple[int, Path] | None:
    descriptor = _open_locked(path)
    if descriptor is None:
        return None
    claimed = _claimed_name(path)
    try:
        path.replace(claimed)  # the lock goes with the file
    except OSError as error:
        logger.warning("hippocampus spool %s not read: %s", path, type(error).__name__)
        os.close(descriptor)
        return None
    return descriptor, claimed


def _take_over(candidate: Path) -> tuple[int, Path] | None:
    """A claimed file whose owner died (nobody holds its lock); None when its owner is alive."""
    if fcntl is None:
        return None
    descriptor = _open_locked(candidate)
    if descriptor is not None:
        logger.warning("hippocampus spool %s: left by a process that ended first, sent again", candidate)
    return None if descriptor is None else (descriptor, candidate)


def _read_claimed(path: Path, tenant: str, agent: str | None, source: tuple[int, Path]) -> list[Call] | None:
    """The scope's calls of a claimed file, the others' put back; None (logged) when unreadable."""
    descriptor, claimed = source
    try:
        mine, others, unreadable = _read(claimed, tenant, agent)
        if others:
            append(path, others)
    except OSError as error:
        logger.warning("hippocampus spool %s not read: %s (left in %s)", path, type(error).__name__, claimed)
        os.close(descriptor)
        return None
    if unreadable:
        logger.warning("hippocampus spool %s: %d unreadable lines skipped", claimed, unreadable)
    return mine


def _read(path: Path, tenant: str, agent: str | None) -> tuple[list[Call], list[dict[str, Any]], int]:
    mine: list[Call] = []
    others: list[dict[str, Any]] = []
    unreadable = 0
    for text in path.read_text(encoding="utf-8").splitlines():
        if not text.strip():
            continue
        try:
            line = json.loads(text)
            # Another tenant's, or another scope's: an agent's line (`agent_id`) is its agent's
            # client's, a user's line (none) a user's client's, whatever this client may reach.
            if line["tenant_id"] != tenant or line.get("agent_id") != agent:
                others.append(line)
                continue
            key = line.get("idempotency_key")
            scope = Scope(tenant, line["user_id"], agent)
            mine.append(calls.ingest(scope, list(line["items"]), line["upsert"], key))
        except Exception:  # a truncated or hand-edited line: the others still go
            unreadable += 1
    return mine, others, unreadable
