"""The condenser's direct action, `redrive_dead_letters` (docs/api.md "Direct invocation"): the
payload is checked strictly, and every error leaves as the envelope of the other functions' direct
actions (not a route: the condenser has no resolver).
"""

from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from hippocampus.api.direct import payload_object
from hippocampus.api.envelope import JSON, dependency_error, envelope, internal_error, validation_error
from hippocampus.contracts.errors import ServiceError, ValidationFailed
from hippocampus.contracts.redrive import REDRIVE_ACTION, RedriveRequest
from hippocampus.domain.condense.redrive import DeadLetterRedrive

RedriveProvider = Callable[[], DeadLetterRedrive]
_ONE_OF = f"one of: {REDRIVE_ACTION}"


def invoke_redrive(event: Any, context: LambdaContext, redrive: RedriveProvider | None) -> JSON:
    """`{"moved", "jobs_requeued", "remaining"}`, or the error envelope (never raises)."""

    def run() -> JSON:
        request = _request(payload_object(event), redrive is not None)
        assert redrive is not None  # _request refused the payload otherwise
        result = redrive().redrive(request.limit, context.get_remaining_time_in_millis)
        return result.model_dump(mode="json")

    return answered(run)


def _request(event: Mapping[str, Any], serves_redrive: bool) -> RedriveRequest:
    action = event.get("action")
    if not serves_redrive or (isinstance(action, str) and action != REDRIVE_ACTION):
        # The value is not echoed: any string may come here, and the other functions name theirs.
        served = REDRIVE_ACTION if serves_redrive else "none"
        raise ValidationFailed(
            f"this action is served by another function; the condenser serves: {served}",
            [{"field": "action", "message": _ONE_OF, "type": "literal_error"}],
        )
    return RedriveRequest.model_validate(event)


def answered(run: Callable[[], JSON]) -> JSON:
    """What `run` answers, or the error envelope of what it raised: the action never raises."""
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
