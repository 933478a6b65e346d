"""Routes of the write path (the ingest function): ingest, replace, forget, delete a fact."""

import uuid
from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hippocampus.api import openapi_responses as documented
from hippocampus.api.dependencies import unwired
from hippocampus.api.etags import version_of_etag
from hippocampus.api.idempotency import IdempotentIngest
from hippocampus.api.params import EpisodeId, FactId, IdempotencyKey, IfMatch, RecordId, TenantId, UserId
from hippocampus.api.responses import deleted, memory_response, receipt_headers
from hippocampus.api.scoped_routes import scoped_route
from hippocampus.contracts.errors import ValidationFailed
from hippocampus.contracts.models import (
    ForgetResponse,
    IngestRequest,
    JobsResponse,
    MemoryBody,
    PutMemoryRequest,
)
from hippocampus.contracts.routes import EPISODE_PATH, FACT_PATH, MEMORY_PATH, RECORD_PATH
from hippocampus.domain.reads.edits import EditService
from hippocampus.domain.reads.forget_episode import EpisodeForgetter
from hippocampus.domain.reads.records import RecordService

router = APIGatewayRouter()


def idempotent_ingest() -> IdempotentIngest:
    unwired("idempotent_ingest")


def edit_service() -> EditService:
    unwired("edit_service")


def record_service() -> RecordService:
    unwired("record_service")


def episode_forgetter() -> EpisodeForgetter:
    unwired("episode_forgetter")


Edits = Annotated[EditService, Depends(edit_service)]
Forgetter = Annotated[EpisodeForgetter, Depends(episode_forgetter)]
Records = Annotated[RecordService, Depends(record_service)]


def expected_version(body_version: int | None, if_match: str | None) -> int | None:
    """The version a PUT expects, from the body or an `If-Match: "3"` header (they must agree)."""
    if if_match is None:
        return body_version
    header_version = version_of_etag(if_match)
    if header_version is None:
        raise ValidationFailed(
            'If-Match must be a version ETag such as "3"',
            [{"field": "If-Match", "message": "not a version ETag", "type": "value_error"}],
        )
    if body_version is not None and body_version != header_version:
        raise ValidationFailed(
            "expected_version and If-Match disagree",
            [{"field": "expected_version", "message": "differs from If-Match", "type": "value_error"}],
        )
    return header_version


@scoped_route(
    router,
    "POST",
    MEMORY_PATH,
    summary="Ingest items",
    agent_summary="Ingest items: private to the agent, or shared with `share: true`",
    operation_id="ingestMemory",
    tags=["memory"],
    responses=documented.INGEST,
)
def post_memory(
    tenant_id: TenantId,
    user_id: UserId,
    request: IngestRequest,
    ingest: Annotated[IdempotentIngest, Depends(idempotent_ingest)],
    idempotency_key: IdempotencyKey = None,
) -> Response[JobsResponse]:
    request_id = router.current_event.request_context.request_id or uuid.uuid4().hex
    jobs = ingest(tenant_id, user_id, request, request_id, idempotency_key, router.lambda_context)
    return Response(status_code=202, content_type=content_types.APPLICATION_JSON, body=jobs)


@scoped_route(
    router,
    "PUT",
    MEMORY_PATH,
    summary="Replace the summary by hand",
    agent_summary="Replace the agent's private summary by hand",
    operation_id="putMemory",
    tags=["memory"],
    responses=documented.PUT_MEMORY,
)
def put_memory(
    tenant_id: TenantId, user_id: UserId, request: PutMemoryRequest, edits: Edits, if_match: IfMatch = None
) -> Response[MemoryBody]:
    version = expected_version(request.expected_version, if_match)
    return memory_response(edits.put_memory(tenant_id, user_id, request.memory, version))


@scoped_route(
    router,
    "DELETE",
    MEMORY_PATH,
    summary="Forget the user entirely",
    agent_summary="Forget the agent's private scope of the user",
    operation_id="deleteMemory",
    tags=["memory"],
    responses=documented.DELETE_MEMORY,
    agent_responses=documented.DELETE_AGENT_MEMORY,
)
def delete_memory(tenant_id: TenantId, user_id: UserId, edits: Edits) -> Response[None]:
    receipt = edits.delete_memory(tenant_id, user_id)
    return deleted(receipt.receipt_id)


@scoped_route(
    router,
    "DELETE",
    FACT_PATH,
    summary="Delete one fact",
    agent_summary="Delete one of the agent's private facts",
    operation_id="deleteFact",
    tags=["memory"],
    responses=documented.DELETE_FACT,
)
def delete_fact(tenant_id: TenantId, user_id: UserId, fact_id: FactId, edits: Edits) -> Response[None]:
    receipt = edits.delete_fact(tenant_id, user_id, fact_id)
    return deleted(receipt.receipt_id)


@scoped_route(
    router,
    "DELETE",
    RECORD_PATH,
    summary="Delete one record",
    agent_summary="Delete one of the agent's private records",
    operation_id="deleteRecord",
    tags=["memory"],
    responses=documented.DELETE_RECORD,
)
def delete_record(
    tenant_id: TenantId, user_id: UserId, record_id: RecordId, records: Records
) -> Response[None]:
    receipt = records.delete_record(tenant_id, user_id, record_id)
    return deleted(receipt.receipt_id)


@scoped_route(
    router,
    "DELETE",
    EPISODE_PATH,
    summary="Forget one episode and what it alone taught",
    agent_summary="Forget one of the agent's private episodes and what it alone taught",
    operation_id="forgetEpisode",
    tags=["memory"],
    responses=documented.FORGET_EPISODE,
)
def forget_episode(
    tenant_id: TenantId, user_id: UserId, episode_id: EpisodeId, forgetter: Forgetter
) -> Response[ForgetResponse]:
    forgotten = forgetter.forget(tenant_id, user_id, episode_id)
    headers = receipt_headers(forgotten.receipt_id)
    return Response(
        status_code=202, content_type=content_types.APPLICATION_JSON, body=forgotten, headers=headers
    )
