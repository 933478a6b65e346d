"""Direct invocation (`lambda:Invoke` from another service, no API Gateway; docs/api.md "Direct invocation").

The payload names an `action`; the result is the same body as the HTTP route, or the same error
envelope. Each function serves the actions of its own routes. Any payload without `httpMethod`
is taken for one, whatever its JSON type, so that every payload gets the envelope.
"""

from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from hippocampus.api.envelope import JSON, dependency_error, envelope, internal_error, validation_error
from hippocampus.api.request_checks import has_lone_surrogate
from hippocampus.contracts.errors import MalformedJson, ServiceError, ValidationFailed
from hippocampus.contracts.models import DirectInvocation

DirectHandler = Callable[[DirectInvocation, LambdaContext], JSON | None]


def is_direct(event: Any) -> bool:
    return not isinstance(event, Mapping) or "httpMethod" not in event


def invoke_direct(event: Any, context: LambdaContext, actions: Mapping[str, DirectHandler]) -> JSON:
    return answered(lambda: _run(payload_object(event), context, actions))


def _run(event: Mapping[str, Any], context: LambdaContext, actions: Mapping[str, DirectHandler]) -> JSON:
    request = DirectInvocation.model_validate(event)
    action = actions.get(request.action)
    if action is None:
        allowed = ", ".join(sorted(actions))
        raise ValidationFailed(
            f"action '{request.action}' is served by the other function; this one serves: {allowed}",
            [{"field": "action", "message": f"one of: {allowed}", "type": "literal_error"}],
        )
    return action(request, context) or {}


def payload_object(event: Any) -> Mapping[str, Any]:
    """The payload, if it is a JSON object whose strings can be stored (else the error to answer)."""
    if not isinstance(event, Mapping):
        raise ValidationFailed(
            f"the payload must be a JSON object with an 'action', not {_json_type(event)}",
            [{"field": "payload", "message": "must be a JSON object", "type": "model_type"}],
        )
    if has_lone_surrogate(event):
        # Unencodable text would fail in DynamoDB or S3 after part of the request was written.
        raise MalformedJson("the payload is not valid UTF-8: a string holds a lone surrogate")
    return event


def answered(run: Callable[[], JSON]) -> JSON:
    """What `run` answers, or the error envelope of what it raised: a direct action never raises."""
    try:
        return run()
    except ValidationError as error:
        return envelope(validation_error(list(error.errors())))
    except ServiceError as error:
        return envelope(error)
    except (BotoCoreError, ClientError) as error:
        return envelope(dependency_error(error))
    except Exception as error:
        return envelope(internal_error(error))


def _json_type(value: Any) -> str:
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def require(value: str | None, field: str) -> str:
    if not value:
        raise ValidationFailed(
            f"'{field}' is required for this action",
            [{"field": field, "message": "field required", "type": "missing"}],
        )
    return value
