"""The Lambda context object, as the local runtime and the tests hand it to a handler.

Only what the handlers and Powertools read: names, memory, ARN, request id and the time left.
A plain dataclass, so the runtime can send its fields to a worker process and rebuild it there.
"""

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from hippocampus.contracts.names import CONDENSER_TIMEOUT_S
from local_stack.paths import ACCOUNT_ID, DEFAULT_REGION

DEFAULT_FUNCTION_NAME = "hippocampus-local-function"
# Without a timeout: the condenser's, the longest of the functions, so no handler is short of time.
DEFAULT_REMAINING_MS = CONDENSER_TIMEOUT_S * 1000


def function_arn(region: str, function_name: str) -> str:
    return f"arn:aws:lambda:{region}:{ACCOUNT_ID}:function:{function_name}"


def _request_id() -> str:
    return str(uuid.uuid4())


@dataclass
class LambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools use.

    `remaining_ms` is the time the invocation has when it starts (the function's timeout); the
    time left counts down from `started_epoch_s`, which travels with the fields to a worker.
    """

    function_name: str = DEFAULT_FUNCTION_NAME
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = function_arn(DEFAULT_REGION, DEFAULT_FUNCTION_NAME)
    aws_request_id: str = field(default_factory=_request_id)
    remaining_ms: int = DEFAULT_REMAINING_MS
    started_epoch_s: float = field(default_factory=time.time)
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = ""
    identity: Any = None
    client_context: Any = None

    def get_remaining_time_in_millis(self) -> int:
        elapsed_ms = (time.time() - self.started_epoch_s) * 1000
        return max(0, int(self.remaining_ms - elapsed_ms))
