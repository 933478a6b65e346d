"""The opt-in spool of the background writer (client/README.md, "The background writer").

What a client could not send before it closed (the service down, the exit budget spent) is
appended to the spool file, one JSON line per `add` (tenant, user, items, upsert, idempotency
key), and sent by the next client of that tenant made with the same `spool_path`. The file holds
the items' content, so it is created readable by its owner only (0600).

A client claims the whole file at start by renaming it (atomic: of several processes starting
together, one gets each line), queues its tenant's lines ahead of any new `add`, and puts the
other tenants' lines back. Claimed lines are queued like any `add`: if that client cannot send
them either, its own close writes them to the spool again.
"""

import json
import logging
import os
import secrets
from pathlib import Path
from typing import Any

from . import calls
from .calls import Call
from .transport import encode_json

logger = logging.getLogger("hippocampus_client")
SPOOL_VARIABLE = "HIPPOCAMPUS_SPOOL"


def spool_line(call: Call) -> dict[str, Any]:
    fields = call.fields
    return {
        "tenant_id": fields["tenant_id"],
        "user_id": fields["user_id"],
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


def claim(path: Path, tenant: str) -> list[Call]:
    """The spooled calls of `tenant`, taken out of the file; [] when there is none."""
    claimed = path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(4)}.sending")
    try:
        path.replace(claimed)
    except FileNotFoundError:
        return []
    except OSError as error:
        logger.warning("hippocampus spool %s not read: %s", path, type(error).__name__)
        return []
    try:
        mine, others, unreadable = _read(claimed, tenant)
        if others:
            append(path, others)
        claimed.unlink()
    except OSError as error:
        logger.warning("hippocampus spool %s not read: %s (left in %s)", path, type(error).__name__, claimed)
        return []
    if unreadable:
        logger.warning("hippocampus spool %s: %d unreadable lines skipped", path, unreadable)
    if mine:
        logger.info("hippocampus spool %s: %d requests of tenant_id=%s queued again", path, len(mine), tenant)
    return mine


def _read(path: Path, tenant: str) -> tuple[list[Call], list[dict[str, Any]], int]:
    mine: list[Call] = []
    others: list[dict[str, Any]] = []
    unreadable = 0
    for text in path.read_text(encoding="utf-8").splitlines():
        if not text.strip():
            continue
        try:
            line = json.loads(text)
            if line["tenant_id"] != tenant:
                others.append(line)
                continue
            key = line.get("idempotency_key")
            mine.append(calls.ingest(tenant, line["user_id"], list(line["items"]), line["upsert"], key))
        except Exception:  # a truncated or hand-edited line: the others still go
            unreadable += 1
    return mine, others, unreadable
