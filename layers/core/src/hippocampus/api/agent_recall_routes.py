"""The recall routes of an agent's scope (the recall function; docs/api.md "Agent scopes"): they
search the user's shared memory and the agent's private one together (domain/recall/service.py)."""

from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hippocampus.api import openapi_responses as documented
from hippocampus.api.params import AgentId, TenantId, UserId
from hippocampus.api.recall_routes import Recall
from hippocampus.contracts.recall import ContextRequest, ContextResponse, QueryRequest, QueryResponse
from hippocampus.contracts.routes import AGENT_CONTEXT_PATH, AGENT_QUERY_PATH, powertools_path
from hippocampus.contracts.scopes import agent_scope

router = APIGatewayRouter()
_TAGS = ["agents"]


@router.post(
    powertools_path(AGENT_QUERY_PATH),
    summary="Search the user's shared memory and the agent's private one",
    operation_id="queryAgentMemory",
    tags=_TAGS,
    responses=documented.QUERY,
)
def query_agent_memory(
    tenant_id: TenantId, user_id: UserId, agent_id: AgentId, request: QueryRequest, recall: Recall
) -> QueryResponse:
    return recall.query(tenant_id, agent_scope(user_id, agent_id), request)


@router.post(
    powertools_path(AGENT_CONTEXT_PATH),
    summary="A context block from the user's shared memory and the agent's private one",
    operation_id="getAgentContext",
    tags=_TAGS,
    responses=documented.CONTEXT,
)
def get_agent_context(
    tenant_id: TenantId, user_id: UserId, agent_id: AgentId, request: ContextRequest, recall: Recall
) -> ContextResponse:
    return recall.context(tenant_id, agent_scope(user_id, agent_id), request)
