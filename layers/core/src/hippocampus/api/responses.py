"""Success responses shared by the read and write routes; the memory's ETag is etags.py's."""

import hashlib

from aws_lambda_powertools.event_handler import Response, content_types

from hippocampus.api.etags import FIELD_SEPARATOR, matches_any, memory_tag
from hippocampus.contracts.models import AgentMemoryBody, MemoryBody
from hippocampus.contracts.names import DELETION_RECEIPT_HEADER
from hippocampus.domain.reads.service import AgentMemoryRead, MemoryRead


def memory_etag(read: MemoryRead) -> str:
    body = read.body
    return memory_tag(body.version, read.generation, [(fact.id, fact.updated_at) for fact in body.facts])


def agent_memory_etag(read: AgentMemoryRead) -> str:
    """An agent's memory read: the agent's version (what a PUT of its summary expects) and a digest
    of both scopes' tags, so a change in either changes it."""
    both = f"{memory_etag(read.shared)}{FIELD_SEPARATOR}{memory_etag(read.agent)}"
    return f'"{read.agent.body.version}-{hashlib.sha256(both.encode()).hexdigest()[:12]}"'


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
