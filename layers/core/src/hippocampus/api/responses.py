"""Success responses shared by the read and write routes, and the memory's ETag (docs/api.md "Headers").

The ETag is the summary's version, `"3"`, while the user has no facts; with facts it also carries
a digest of them, `"3-1f2e3d4c5b6a"`, so it changes whenever anything in the memory body changes.
`If-Match` on a PUT takes either form (only the version counts there); `If-None-Match` on a GET
answers 304 while the body is unchanged.
"""

import hashlib
import re

from aws_lambda_powertools.event_handler import Response, content_types

from hippocampus.contracts.models import MemoryBody

_MEMORY_ETAG = re.compile(r'^(?:W/)?"(\d+)(?:-[0-9a-f]{12})?"$')
_FIELD_SEPARATOR = "\x1f"


def memory_etag(body: MemoryBody) -> str:
    if not body.facts:
        return f'"{body.version}"'
    # A fact written again gets a new `updated_at`, so ids and times tell every change apart.
    facts = _FIELD_SEPARATOR.join(f"{fact.id}\x1e{fact.updated_at.isoformat()}" for fact in body.facts)
    return f'"{body.version}-{hashlib.sha256(facts.encode()).hexdigest()[:12]}"'


def version_of_etag(tag: str) -> int | None:
    """The version an ETag of the memory names (`"3"`, `"3-…"`, `W/"3"`, or a bare `3`); None if it is none."""
    text = tag.strip()
    match = _MEMORY_ETAG.match(text if '"' in text else f'"{text}"')
    return int(match.group(1)) if match else None


def matches_any(if_none_match: str, etag: str) -> bool:
    """`If-None-Match` (a list of tags, or `*`) against the current tag, by weak comparison (RFC 9110)."""
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag.removeprefix("W/") in tags


def memory_response(body: MemoryBody, status: int = 200) -> Response[MemoryBody]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body,
        headers={"ETag": memory_etag(body)},
    )


def conditional_memory_response(body: MemoryBody, if_none_match: str | None) -> Response[MemoryBody | None]:
    """The memory body, or 304 without one while the caller's `If-None-Match` still matches."""
    etag = memory_etag(body)
    if if_none_match is not None and matches_any(if_none_match, etag):
        return Response(status_code=304, headers={"ETag": etag})
    return Response(
        status_code=200, content_type=content_types.APPLICATION_JSON, body=body, headers={"ETag": etag}
    )
