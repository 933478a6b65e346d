"""Routes of the recall function: query a user's memory, and the context block (docs/api.md "Recall");
in an agent's scope, they search the shared memory and the agent's together (docs/api.md "Agent scopes")."""

from typing import Annotated

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hippocampus.api import openapi_responses as documented
from hippocampus.api.dependencies import unwired
from hippocampus.api.params import TenantId, UserId
from hippocampus.api.scoped_routes import scoped_route
from hippocampus.contracts.recall import ContextRequest, ContextResponse, QueryRequest, QueryResponse
from hippocampus.contracts.routes import CONTEXT_PATH, QUERY_PATH
from hippocampus.domain.recall.service import RecallService

router = APIGatewayRouter()


def recall_service() -> RecallService:
    unwired("recall_service")


Recall = Annotated[RecallService, Depends(recall_service)]


@scoped_route(
    router,
    "POST",
    QUERY_PATH,
    summary="Search the user's facts, records and episodes",
    agent_summary="Search the user's shared memory and the agent's private one",
    operation_id="queryMemory",
    tags=["recall"],
    responses=documented.QUERY,
)
def query_memory(
    tenant_id: TenantId, user_id: UserId, request: QueryRequest, recall: Recall
) -> QueryResponse:
    return recall.query(tenant_id, user_id, request)


@scoped_route(
    router,
    "POST",
    CONTEXT_PATH,
    summary="A context block to prepend to a prompt",
    agent_summary="A context block from the user's shared memory and the agent's private one",
    operation_id="getContext",
    tags=["recall"],
    responses=documented.CONTEXT,
)
def get_context(
    tenant_id: TenantId, user_id: UserId, request: ContextRequest, recall: Recall
) -> ContextResponse:
    return recall.context(tenant_id, user_id, request)
