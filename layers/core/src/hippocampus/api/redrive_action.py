"""The condenser's direct action, `redrive_dead_letters` (docs/api.md "Direct invocation"): the
payload is checked strictly, and every error leaves as the envelope the other functions' direct
actions use (`api/direct.py`).
"""

from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from hippocampus.api.envelope import JSON, dependency_error, envelope, internal_error, validation_error
from hippocampus.api.request_checks import has_lone_surrogate
from hippocampus.contracts.errors import MalformedJson, ServiceError, ValidationFailed
from hippocampus.contracts.redrive import REDRIVE_ACTION, RedriveRequest
from hippocampus.domain.redrive import DeadLetterRedrive

RedriveProvider = Callable[[], DeadLetterRedrive]
_ONE_OF = f"one of: {REDRIVE_ACTION}"


def invoke_redrive(event: Any, context: LambdaContext, redrive: RedriveProvider | None) -> JSON:
    """`{"moved", "jobs_requeued", "remaining"}`, or the error envelope (never raises)."""
    try:
        request = _request(event, redrive is not None)
        assert redrive is not None  # _request refused the payload otherwise
        result = redrive().redrive(request.limit, context.get_remaining_time_in_millis)
        return result.model_dump(mode="json")
    except ValidationError as error:
        return envelope(validation_error(list(error.errors())))
    except ServiceError as error:
        return envelope(error)
    except (BotoCoreError, ClientError) as error:
        return envelope(dependency_error(error))
    except Exception as error:
        return envelope(internal_error(error))


def _request(event: Any, serves_redrive: bool) -> RedriveRequest:
    if not isinstance(event, Mapping):
        raise ValidationFailed(
            "the payload must be a JSON object with an 'action'",
            [{"field": "payload", "message": "must be a JSON object", "type": "model_type"}],
        )
    if has_lone_surrogate(event):
        raise MalformedJson("the payload is not valid UTF-8: a string holds a lone surrogate")
    action = event.get("action")
    if not serves_redrive or (isinstance(action, str) and action != REDRIVE_ACTION):
        # The value is not echoed: any string may come here, and the other functions name theirs.
        served = REDRIVE_ACTION if serves_redrive else "none"
        raise ValidationFailed(
            f"this action is served by another function; the condenser serves: {served}",
            [{"field": "action", "message": _ONE_OF, "type": "literal_error"}],
        )
    return RedriveRequest.model_validate(event)
