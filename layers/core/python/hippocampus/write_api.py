"""Routes and direct-invoke actions of the write path (the ingest function)."""

import re
import uuid
from functools import lru_cache
from typing import Annotated, Any, Protocol

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header, Path
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.utilities.typing import LambdaContext

from hippocampus import runtime
from hippocampus.errors import DependencyUnavailable, IdempotencyConflict, ValidationFailed
from hippocampus.http import ERROR_RESPONSES, DirectAction, TenantId, UserId, require
from hippocampus.models import (
    IDENTIFIER_PATTERN,
    DirectInvocation,
    IngestRequest,
    JobsResponse,
    MemoryBody,
    PutMemoryRequest,
)
from hippocampus.read_api import memory_response
from hippocampus.routes import MEMORY_PATH, powertools_path
from hippocampus.settings import get_settings

router = APIGatewayRouter()

FactId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="Fact identifier")]
IdempotencyKey = Annotated[
    str | None,
    Header(alias="Idempotency-Key", max_length=256, description="Replays return the first response"),
]
IfMatch = Annotated[
    str | None, Header(alias="If-Match", description='The expected version as an ETag, e.g. "3"')
]

_ETAG = re.compile(r'^(?:W/)?"?(\d+)"?$')


class _Ingest(Protocol):
    def __call__(self, *, data: dict[str, Any]) -> dict[str, Any]: ...


@lru_cache(maxsize=1)
def _idempotent_ingest() -> tuple[_Ingest, Any]:
    """Powertools idempotency around ingest, keyed by tenant, user and Idempotency-Key.

    Built on first use so the persistence layer's client is created lazily, once per process.
    """
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function

    config = IdempotencyConfig(
        event_key_jmespath="[tenant_id, user_id, idempotency_key]",
        payload_validation_jmespath="body",
        expires_after_seconds=get_settings().idempotency_ttl_s,
    )

    @idempotent_function(
        data_keyword_argument="data", persistence_store=runtime.idempotency_store(), config=config
    )
    def ingest(data: dict[str, Any]) -> dict[str, Any]:
        request = IngestRequest.model_validate(data["body"])
        jobs = runtime.write_service().ingest(data["tenant_id"], data["user_id"], request, data["request_id"])
        return jobs.model_dump(mode="json")

    return ingest, config


def ingest(
    tenant_id: str,
    user_id: str,
    request: IngestRequest,
    request_id: str,
    key: str | None,
    context: LambdaContext,
) -> dict[str, Any]:
    if not key:
        return runtime.write_service().ingest(tenant_id, user_id, request, request_id).model_dump(mode="json")
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyAlreadyInProgressError,
        IdempotencyPersistenceLayerError,
        IdempotencyValidationError,
    )

    run, config = _idempotent_ingest()
    config.register_lambda_context(context)
    data = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "idempotency_key": key,
        "request_id": request_id,
        "body": request.model_dump(mode="json"),
    }
    try:
        return run(data=data)
    except IdempotencyValidationError as error:
        raise IdempotencyConflict("this Idempotency-Key was already used with a different body") from error
    except IdempotencyAlreadyInProgressError as error:
        raise IdempotencyConflict("a request with this Idempotency-Key is still in progress") from error
    except IdempotencyPersistenceLayerError as error:
        raise DependencyUnavailable("the idempotency store is unavailable; retry later") from error


def expected_version(body_version: int | None, if_match: str | None) -> int | None:
    """The version a PUT expects, from the body or an `If-Match: "3"` header (they must agree)."""
    if if_match is None:
        return body_version
    match = _ETAG.match(if_match.strip())
    if match is None:
        raise ValidationFailed(
            'If-Match must be a version ETag such as "3"',
            [{"field": "If-Match", "message": "not a version ETag", "type": "value_error"}],
        )
    header_version = int(match.group(1))
    if body_version is not None and body_version != header_version:
        raise ValidationFailed(
            "expected_version and If-Match disagree",
            [{"field": "expected_version", "message": "differs from If-Match", "type": "value_error"}],
        )
    return header_version


def _request_id() -> str:
    event = router.current_event
    return event.request_context.request_id or uuid.uuid4().hex


@router.post(powertools_path(MEMORY_PATH), summary="Ingest items", responses=ERROR_RESPONSES)
def post_memory(
    tenant_id: TenantId, user_id: UserId, request: IngestRequest, idempotency_key: IdempotencyKey = None
) -> Response[JobsResponse]:
    jobs = ingest(tenant_id, user_id, request, _request_id(), idempotency_key, router.lambda_context)
    return Response(
        status_code=202, content_type=content_types.APPLICATION_JSON, body=JobsResponse.model_validate(jobs)
    )


@router.put(powertools_path(MEMORY_PATH), summary="Replace the summary by hand", responses=ERROR_RESPONSES)
def put_memory(
    tenant_id: TenantId, user_id: UserId, request: PutMemoryRequest, if_match: IfMatch = None
) -> Response[MemoryBody]:
    version = expected_version(request.expected_version, if_match)
    return memory_response(runtime.write_service().put_memory(tenant_id, user_id, request.memory, version))


@router.delete(powertools_path(MEMORY_PATH), summary="Forget the user entirely", responses=ERROR_RESPONSES)
def delete_memory(tenant_id: TenantId, user_id: UserId) -> Response[None]:
    runtime.write_service().delete_memory(tenant_id, user_id)
    return Response(status_code=204)


@router.delete(
    powertools_path(MEMORY_PATH + "/facts/{fact_id}"), summary="Delete one fact", responses=ERROR_RESPONSES
)
def delete_fact(tenant_id: TenantId, user_id: UserId, fact_id: FactId) -> Response[None]:
    runtime.write_service().delete_fact(tenant_id, user_id, fact_id)
    return Response(status_code=204)


def _direct_ingest(request: DirectInvocation, context: LambdaContext) -> dict[str, Any]:
    user_id = require(request.user_id, "user_id")
    items = IngestRequest.model_validate({"items": request.items})
    request_id = getattr(context, "aws_request_id", None) or uuid.uuid4().hex
    return ingest(request.tenant_id, user_id, items, request_id, request.idempotency_key, context)


def _direct_put(request: DirectInvocation, _: LambdaContext) -> dict[str, Any]:
    body = PutMemoryRequest.model_validate(
        {"memory": request.memory, "expected_version": request.expected_version}
    )
    service = runtime.write_service()
    memory = service.put_memory(
        request.tenant_id, require(request.user_id, "user_id"), body.memory, body.expected_version
    )
    return memory.model_dump(mode="json")


def _direct_delete(request: DirectInvocation, _: LambdaContext) -> None:
    runtime.write_service().delete_memory(request.tenant_id, require(request.user_id, "user_id"))


def _direct_delete_fact(request: DirectInvocation, _: LambdaContext) -> None:
    user_id = require(request.user_id, "user_id")
    runtime.write_service().delete_fact(request.tenant_id, user_id, require(request.fact_id, "fact_id"))


DIRECT_ACTIONS: dict[str, DirectAction] = {
    "ingest": _direct_ingest,
    "put_memory": _direct_put,
    "delete_memory": _direct_delete,
    "delete_fact": _direct_delete_fact,
}
