"""The memory's ETag (docs/api.md "Headers"), computed from plain values so that the resolver's
routes and the memory read's fast lane (memory_lane.py) tag a memory alike.

The ETag is the summary's version, `"3"`, while the user has no facts and was never deleted;
otherwise it also carries a digest of the user's generation and facts, `"3-1f2e3d4c5b6a"`. So it
changes whenever anything in the memory body changes, and never repeats across a delete (versions
go on after a delete too, and the empty memory after one has a digest). `If-Match` on a PUT takes
either form (only the version counts there); `If-None-Match` on a GET answers 304 while the tag is
unchanged.
"""

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime

_MEMORY_ETAG = re.compile(r'^(?:W/)?"(\d+)(?:-[0-9a-f]{12})?"$')
FIELD_SEPARATOR = "\x1f"


def memory_tag(version: int, generation: int, facts: Sequence[tuple[str, datetime]]) -> str:
    """The tag of a memory body: its version, and its generation and facts (id, `updated_at`)."""
    if generation == 0 and not facts:
        return f'"{version}"'
    # A fact written again gets a new `updated_at`, so ids and times tell every change apart.
    fields = [f"g{generation}", *(f"{fact_id}\x1e{updated_at.isoformat()}" for fact_id, updated_at in facts)]
    return f'"{version}-{hashlib.sha256(FIELD_SEPARATOR.join(fields).encode()).hexdigest()[:12]}"'


def version_of_etag(tag: str) -> int | None:
    """The version an ETag of the memory names (`"3"`, `"3-…"`, `W/"3"`, or a bare `3`); None if it is none."""
    text = tag.strip()
    match = _MEMORY_ETAG.match(text if '"' in text else f'"{text}"')
    return int(match.group(1)) if match else None


def matches_any(if_none_match: str, etag: str) -> bool:
    """`If-None-Match` (a list of tags, or `*`) against the current tag, by weak comparison (RFC 9110)."""
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag.removeprefix("W/") in tags
