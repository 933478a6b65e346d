"""The write routes of an agent's scope (the ingest function; docs/api.md "Agent scopes"): the
user's services under the agent's scope key (contracts/scopes.py). An ingest sends the items that
say `share` to the user's shared memory (domain/ingest/service.py)."""

import uuid
from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hippocampus.api import openapi_responses as documented
from hippocampus.api.idempotency import IdempotentIngest
from hippocampus.api.params import (
    AgentId,
    EpisodeId,
    FactId,
    IdempotencyKey,
    IfMatch,
    RecordId,
    TenantId,
    UserId,
)
from hippocampus.api.responses import deleted, memory_response, receipt_headers
from hippocampus.api.write_routes import Edits, Forgetter, Records, expected_version, idempotent_ingest
from hippocampus.contracts.models import (
    ForgetResponse,
    IngestRequest,
    JobsResponse,
    MemoryBody,
    PutMemoryRequest,
)
from hippocampus.contracts.routes import (
    AGENT_EPISODE_PATH,
    AGENT_FACT_PATH,
    AGENT_MEMORY_PATH,
    AGENT_RECORD_PATH,
    powertools_path,
)
from hippocampus.contracts.scopes import agent_scope

router = APIGatewayRouter()
_TAGS = ["agents"]


@router.post(
    powertools_path(AGENT_MEMORY_PATH),
    summary="Ingest items: private to the agent, or shared with `share: true`",
    operation_id="ingestAgentMemory",
    tags=_TAGS,
    responses=documented.INGEST,
)
def post_agent_memory(
    tenant_id: TenantId,
    user_id: UserId,
    agent_id: AgentId,
    request: IngestRequest,
    ingest: Annotated[IdempotentIngest, Depends(idempotent_ingest)],
    idempotency_key: IdempotencyKey = None,
) -> Response[JobsResponse]:
    request_id = router.current_event.request_context.request_id or uuid.uuid4().hex
    scope_key = agent_scope(user_id, agent_id)
    jobs = ingest(tenant_id, scope_key, request, request_id, idempotency_key, router.lambda_context)
    return Response(status_code=202, content_type=content_types.APPLICATION_JSON, body=jobs)


@router.put(
    powertools_path(AGENT_MEMORY_PATH),
    summary="Replace the agent's private summary by hand",
    operation_id="putAgentMemory",
    tags=_TAGS,
    responses=documented.PUT_MEMORY,
)
def put_agent_memory(
    tenant_id: TenantId,
    user_id: UserId,
    agent_id: AgentId,
    request: PutMemoryRequest,
    edits: Edits,
    if_match: IfMatch = None,
) -> Response[MemoryBody]:
    version = expected_version(request.expected_version, if_match)
    scope_key = agent_scope(user_id, agent_id)
    return memory_response(edits.put_memory(tenant_id, scope_key, request.memory, version))


@router.delete(
    powertools_path(AGENT_MEMORY_PATH),
    summary="Forget the agent's private scope of the user",
    operation_id="deleteAgentMemory",
    tags=_TAGS,
    responses=documented.DELETE_AGENT_MEMORY,
)
def delete_agent_memory(
    tenant_id: TenantId, user_id: UserId, agent_id: AgentId, edits: Edits
) -> Response[None]:
    return deleted(edits.delete_memory(tenant_id, agent_scope(user_id, agent_id)).receipt_id)


@router.delete(
    powertools_path(AGENT_FACT_PATH),
    summary="Delete one of the agent's private facts",
    operation_id="deleteAgentFact",
    tags=_TAGS,
    responses=documented.DELETE_FACT,
)
def delete_agent_fact(
    tenant_id: TenantId, user_id: UserId, agent_id: AgentId, fact_id: FactId, edits: Edits
) -> Response[None]:
    return deleted(edits.delete_fact(tenant_id, agent_scope(user_id, agent_id), fact_id).receipt_id)


@router.delete(
    powertools_path(AGENT_RECORD_PATH),
    summary="Delete one of the agent's private records",
    operation_id="deleteAgentRecord",
    tags=_TAGS,
    responses=documented.DELETE_RECORD,
)
def delete_agent_record(
    tenant_id: TenantId, user_id: UserId, agent_id: AgentId, record_id: RecordId, records: Records
) -> Response[None]:
    return deleted(records.delete_record(tenant_id, agent_scope(user_id, agent_id), record_id).receipt_id)


@router.delete(
    powertools_path(AGENT_EPISODE_PATH),
    summary="Forget one of the agent's private episodes and what it alone taught",
    operation_id="forgetAgentEpisode",
    tags=_TAGS,
    responses=documented.FORGET_EPISODE,
)
def forget_agent_episode(
    tenant_id: TenantId, user_id: UserId, agent_id: AgentId, episode_id: EpisodeId, forgetter: Forgetter
) -> Response[ForgetResponse]:
    forgotten = forgetter.forget(tenant_id, agent_scope(user_id, agent_id), episode_id)
    headers = receipt_headers(forgotten.receipt_id)
    return Response(
        status_code=202, content_type=content_types.APPLICATION_JSON, body=forgotten, headers=headers
    )
