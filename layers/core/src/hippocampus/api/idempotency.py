"""The `Idempotency-Key` header: Powertools idempotency around ingest (docs/api.md "Idempotency").

Keyed by tenant, user and key; the body is the payload that must match (409 otherwise). The
validated request goes in as a pydantic model and the response comes back as one
(`PydanticSerializer`): nothing is parsed twice. Each request uses the records of its own user
(`records_of`), which a delete of the user erases.
"""

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.serialization.pydantic import PydanticSerializer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from hippocampus.contracts.errors import DependencyUnavailable, IdempotencyConflict
from hippocampus.contracts.models import IngestRequest, JobsResponse
from hippocampus.contracts.names import IDEMPOTENCY_KEY_PREFIX
from hippocampus.domain.ingest.service import IngestService


class IngestCommand(BaseModel):
    """One ingest request, as the idempotency record sees it."""

    tenant_id: str
    user_id: str
    idempotency_key: str
    request_id: str
    body: IngestRequest


class IdempotentIngest:
    """Ingest; with an Idempotency-Key, a replay gets the first response and nothing is enqueued twice."""

    def __init__(
        self,
        ingest: IngestService,
        records_of: Callable[[str, str], BasePersistenceLayer],
        ttl_s: int,
    ) -> None:
        self._ingest = ingest
        self._records_of = records_of
        self._ttl_s = ttl_s

    def _idempotent_run(self, tenant_id: str, user_id: str, context: LambdaContext) -> Callable[..., Any]:
        """The ingest, wrapped by Powertools for this request's user (a config of its own: the
        Lambda context is per request, and requests run concurrently on the local stack)."""
        config = IdempotencyConfig(
            event_key_jmespath="[tenant_id, user_id, idempotency_key]",
            payload_validation_jmespath="body",
            expires_after_seconds=self._ttl_s,
        )
        config.register_lambda_context(context)
        ingest = self._ingest

        @idempotent_function(
            data_keyword_argument="command",
            persistence_store=self._records_of(tenant_id, user_id),
            config=config,
            output_serializer=PydanticSerializer(JobsResponse),
            key_prefix=IDEMPOTENCY_KEY_PREFIX,
        )
        def run(command: IngestCommand) -> JobsResponse:
            return ingest.ingest(command.tenant_id, command.user_id, command.body, command.request_id)

        wrapped: Callable[..., Any] = run
        return wrapped

    def __call__(
        self,
        tenant_id: str,
        user_id: str,
        request: IngestRequest,
        request_id: str,
        idempotency_key: str | None,
        context: LambdaContext,
    ) -> JobsResponse:
        if not idempotency_key:
            return self._ingest.ingest(tenant_id, user_id, request, request_id)
        command = IngestCommand(
            tenant_id=tenant_id,
            user_id=user_id,
            idempotency_key=idempotency_key,
            request_id=request_id,
            body=request,
        )
        run = self._idempotent_run(tenant_id, user_id, context)
        try:
            response: JobsResponse = run(command=command)
        except IdempotencyValidationError as error:
            raise IdempotencyConflict(
                "this Idempotency-Key was already used with a different body"
            ) from error
        except IdempotencyAlreadyInProgressError as error:
            raise IdempotencyConflict("a request with this Idempotency-Key is still in progress") from error
        except IdempotencyPersistenceLayerError as error:
            raise DependencyUnavailable("the idempotency store is unavailable; retry later") from error
        return response
