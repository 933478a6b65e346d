"""Routes of the recall function: query a user's memory, and the context block (docs/api.md "Recall")."""

from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ValidationError

from hippocampus.api import openapi_responses as documented
from hippocampus.api.dependencies import unwired
from hippocampus.api.direct import DirectHandler, require
from hippocampus.api.envelope import JSON
from hippocampus.api.params import TenantId, UserId
from hippocampus.contracts.errors import ValidationFailed
from hippocampus.contracts.models import DirectInvocation
from hippocampus.contracts.recall import ContextRequest, ContextResponse, QueryRequest, QueryResponse
from hippocampus.contracts.routes import CONTEXT_PATH, QUERY_PATH, powertools_path
from hippocampus.domain.recall import RecallService

router = APIGatewayRouter()


def recall_service() -> RecallService:
    unwired("recall_service")


Recall = Annotated[RecallService, Depends(recall_service)]


@router.post(
    powertools_path(QUERY_PATH),
    summary="Search the user's facts and episodes",
    operation_id="queryMemory",
    tags=["recall"],
    responses=documented.QUERY,
)
def query_memory(
    tenant_id: TenantId, user_id: UserId, request: QueryRequest, recall: Recall
) -> QueryResponse:
    return recall.query(tenant_id, user_id, request)


@router.post(
    powertools_path(CONTEXT_PATH),
    summary="A context block to prepend to a prompt",
    operation_id="getContext",
    tags=["recall"],
    responses=documented.CONTEXT,
)
def get_context(
    tenant_id: TenantId, user_id: UserId, request: ContextRequest, recall: Recall
) -> ContextResponse:
    return recall.context(tenant_id, user_id, request)


def _body[Body: BaseModel](model: type[Body], payload: dict[str, Any] | None) -> Body:
    """The route's body from a direct invoke's `request`; errors name `request.<field>`."""
    try:
        return model.model_validate(payload if payload is not None else {})
    except ValidationError as error:
        details = [
            {"field": ".".join(["request", *map(str, e["loc"])]), "message": e["msg"], "type": e["type"]}
            for e in error.errors()
        ]
        raise ValidationFailed("the request is invalid", details) from None


def direct_actions(recall: Callable[[], RecallService]) -> dict[str, DirectHandler]:
    """The recall actions of a direct invoke, served by the service `recall` provides."""

    def query(request: DirectInvocation, _: LambdaContext) -> JSON:
        user_id = require(request.user_id, "user_id")
        body = _body(QueryRequest, request.request)
        return recall().query(request.tenant_id, user_id, body).model_dump(mode="json")

    def context(request: DirectInvocation, _: LambdaContext) -> JSON:
        user_id = require(request.user_id, "user_id")
        body = _body(ContextRequest, request.request)
        return recall().context(request.tenant_id, user_id, body).model_dump(mode="json")

    return {"query_memory": query, "get_context": context}
