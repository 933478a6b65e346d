"""Direct invocation (`lambda:Invoke` from another service, no API Gateway; docs/api.md "Direct invocation").

The payload names an `action`; the result is the same body as the HTTP route, or the same error
envelope. Each function serves the actions of its own routes.
"""

from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from hippocampus.api.envelope import JSON, dependency_error, envelope, internal_error, validation_error
from hippocampus.contracts.errors import ServiceError, ValidationFailed
from hippocampus.contracts.models import DirectInvocation

DirectHandler = Callable[[DirectInvocation, LambdaContext], JSON | None]


def is_direct(event: Mapping[str, Any]) -> bool:
    return "httpMethod" not in event and "action" in event


def invoke_direct(event: JSON, context: LambdaContext, actions: Mapping[str, DirectHandler]) -> JSON:
    try:
        request = DirectInvocation.model_validate(event)
        action = actions.get(request.action)
        if action is None:
            allowed = ", ".join(sorted(actions))
            raise ValidationFailed(
                f"action '{request.action}' is served by the other function; this one serves: {allowed}",
                [{"field": "action", "message": f"one of: {allowed}", "type": "literal_error"}],
            )
        return action(request, context) or {}
    except ValidationError as error:
        return envelope(validation_error(list(error.errors())))
    except ServiceError as error:
        return envelope(error)
    except (BotoCoreError, ClientError) as error:
        return envelope(dependency_error(error))
    except Exception as error:
        return envelope(internal_error(error))


def require(value: str | None, field: str) -> str:
    if not value:
        raise ValidationFailed(
            f"'{field}' is required for this action",
            [{"field": field, "message": "field required", "type": "missing"}],
        )
    return value
