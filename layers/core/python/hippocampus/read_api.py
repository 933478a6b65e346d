"""Routes and direct-invoke actions of the read path (the get_memory function)."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.utilities.typing import LambdaContext

from hippocampus import runtime
from hippocampus.http import ERROR_RESPONSES, DirectAction, TenantId, UserId, require
from hippocampus.models import (
    DEFAULT_HISTORY_LIMIT,
    IDENTIFIER_PATTERN,
    MAX_HISTORY_LIMIT,
    DirectInvocation,
    HealthResponse,
    HistoryResponse,
    Job,
    MemoryBody,
)
from hippocampus.routes import MEMORY_PATH, TENANT_PREFIX, powertools_path

router = APIGatewayRouter()

JobId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="Job identifier")]
Limit = Annotated[int, Query(ge=1, le=MAX_HISTORY_LIMIT, description="Versions to return, newest first")]


def memory_response(body: MemoryBody, status: int = 200) -> Response[MemoryBody]:
    """The memory body with its version as a strong ETag."""
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body,
        headers={"ETag": f'"{body.version}"'},
    )


@router.get("/v1/health", summary="Liveness")
def health() -> HealthResponse:
    return HealthResponse()


@router.get("/v1/openapi.json", summary="The OpenAPI 3.1 document of this API", include_in_schema=False)
def openapi() -> dict[str, Any]:
    from hippocampus.openapi import openapi_document

    return openapi_document()


@router.get(powertools_path(MEMORY_PATH), summary="The user's memory", responses=ERROR_RESPONSES)
def get_memory(tenant_id: TenantId, user_id: UserId) -> Response[MemoryBody]:
    return memory_response(runtime.read_service().get_memory(tenant_id, user_id))


@router.get(
    powertools_path(MEMORY_PATH + "/history"),
    summary="Past versions, newest first",
    responses=ERROR_RESPONSES,
)
def get_history(
    tenant_id: TenantId, user_id: UserId, limit: Limit = DEFAULT_HISTORY_LIMIT
) -> HistoryResponse:
    return runtime.read_service().get_history(tenant_id, user_id, limit)


@router.get(
    powertools_path(TENANT_PREFIX + "/jobs/{job_id}"), summary="One ingestion job", responses=ERROR_RESPONSES
)
def get_job(tenant_id: TenantId, job_id: JobId) -> Job:
    return runtime.read_service().get_job(tenant_id, job_id)


def _direct_memory(request: DirectInvocation, _: LambdaContext) -> dict[str, Any]:
    body = runtime.read_service().get_memory(request.tenant_id, require(request.user_id, "user_id"))
    return body.model_dump(mode="json")


def _direct_history(request: DirectInvocation, _: LambdaContext) -> dict[str, Any]:
    history = runtime.read_service().get_history(
        request.tenant_id, require(request.user_id, "user_id"), request.limit
    )
    return history.model_dump(mode="json")


def _direct_job(request: DirectInvocation, _: LambdaContext) -> dict[str, Any]:
    return (
        runtime.read_service()
        .get_job(request.tenant_id, require(request.job_id, "job_id"))
        .model_dump(mode="json")
    )


DIRECT_ACTIONS: dict[str, DirectAction] = {
    "get_memory": _direct_memory,
    "get_history": _direct_history,
    "get_job": _direct_job,
}
