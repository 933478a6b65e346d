"""Success responses shared by the read and write routes, and the memory's ETag (docs/api.md "Headers").

The ETag is the summary's version, `"3"`, while the user has no facts and was never deleted;
otherwise it also carries a digest of the user's generation and facts, `"3-1f2e3d4c5b6a"`. So it
changes whenever anything in the memory body changes, and never repeats across a delete (versions
go on after a delete too, and the empty memory after one has a digest). `If-Match` on a PUT takes
either form (only the version counts there); `If-None-Match` on a GET answers 304 while the tag is
unchanged.
"""

import hashlib
import re

from aws_lambda_powertools.event_handler import Response, content_types

from hippocampus.contracts.models import AgentMemoryBody, MemoryBody
from hippocampus.contracts.names import DELETION_RECEIPT_HEADER
from hippocampus.domain.reads.service import AgentMemoryRead, MemoryRead

_MEMORY_ETAG = re.compile(r'^(?:W/)?"(\d+)(?:-[0-9a-f]{12})?"$')
_FIELD_SEPARATOR = "\x1f"


def memory_etag(read: MemoryRead) -> str:
    body = read.body
    if read.generation == 0 and not body.facts:
        return f'"{body.version}"'
    # A fact written again gets a new `updated_at`, so ids and times tell every change apart.
    facts = [f"{fact.id}\x1e{fact.updated_at.isoformat()}" for fact in body.facts]
    digest = hashlib.sha256(_FIELD_SEPARATOR.join([f"g{read.generation}", *facts]).encode()).hexdigest()
    return f'"{body.version}-{digest[:12]}"'


def agent_memory_etag(read: AgentMemoryRead) -> str:
    """An agent's memory read: the agent's version (what a PUT of its summary expects) and a digest
    of both scopes' tags, so a change in either changes it."""
    both = f"{memory_etag(read.shared)}{_FIELD_SEPARATOR}{memory_etag(read.agent)}"
    return f'"{read.agent.body.version}-{hashlib.sha256(both.encode()).hexdigest()[:12]}"'


def version_of_etag(tag: str) -> int | None:
    """The version an ETag of the memory names (`"3"`, `"3-…"`, `W/"3"`, or a bare `3`); None if it is none."""
    text = tag.strip()
    match = _MEMORY_ETAG.match(text if '"' in text else f'"{text}"')
    return int(match.group(1)) if match else None


def matches_any(if_none_match: str, etag: str) -> bool:
    """`If-None-Match` (a list of tags, or `*`) against the current tag, by weak comparison (RFC 9110)."""
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag.removeprefix("W/") in tags


def memory_response(read: MemoryRead, status: int = 200) -> Response[MemoryBody]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=read.body,
        headers={"ETag": memory_etag(read)},
    )


def conditional_memory_response(read: MemoryRead, if_none_match: str | None) -> Response[MemoryBody | None]:
    """The memory body, or 304 without one while the caller's `If-None-Match` still matches."""
    return _conditional(memory_etag(read), read.body, if_none_match)


def conditional_agent_memory_response(
    read: AgentMemoryRead, if_none_match: str | None
) -> Response[AgentMemoryBody | None]:
    """Both scopes, or 304 while the caller's `If-None-Match` still matches."""
    return _conditional(agent_memory_etag(read), read.body, if_none_match)


def _conditional[Body: (MemoryBody, AgentMemoryBody)](
    etag: str, body: Body, if_none_match: str | None
) -> Response[Body | None]:
    if if_none_match is not None and matches_any(if_none_match, etag):
        return Response(status_code=304, headers={"ETag": etag})
    return Response(
        status_code=200, content_type=content_types.APPLICATION_JSON, body=body, headers={"ETag": etag}
    )


def receipt_headers(receipt_id: str) -> dict[str, str]:
    """The header naming a delete's receipt (docs/api.md "Deletion receipts")."""
    return {DELETION_RECEIPT_HEADER: receipt_id}


def deleted(receipt_id: str) -> Response[None]:
    """204, naming the delete's receipt."""
    return Response(status_code=204, headers=receipt_headers(receipt_id))
