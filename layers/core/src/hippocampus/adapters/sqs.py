"""SQS FIFO adapter: one message per accepted item, grouped by user so each user's items stay in order."""

import hashlib
from collections.abc import Callable, Sequence
from itertools import batched
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hippocampus.contracts.errors import DependencyUnavailable
from hippocampus.contracts.models import CondenseMessage


def message_group_id(tenant_id: str, user_id: str) -> str:
    """One FIFO group per user; hashed so identifiers never leak into queue metadata."""
    return hashlib.sha256(f"{tenant_id}\x1f{user_id}".encode()).hexdigest()


class SqsJobQueue:
    """JobQueue on one FIFO queue; the deduplication id is the job id and when it was queued."""

    def __init__(self, queue_url: str, client: Callable[[], Any]) -> None:
        self._queue_url = queue_url
        self._client = client

    def send(self, messages: Sequence[CondenseMessage], trace_header: str | None) -> None:
        for chunk in batched(messages, 10):
            entries = [self._entry(index, message, trace_header) for index, message in enumerate(chunk)]
            try:
                response = self._client().send_message_batch(QueueUrl=self._queue_url, Entries=entries)
            except (BotoCoreError, ClientError) as error:
                raise DependencyUnavailable(
                    "the ingestion queue is unavailable; retry the request"
                ) from error
            if response.get("Failed"):
                codes = sorted({failure.get("Code", "unknown") for failure in response["Failed"]})
                raise DependencyUnavailable(
                    f"the queue rejected {len(response['Failed'])} message(s): {codes}"
                )

    @staticmethod
    def _entry(index: int, message: CondenseMessage, trace_header: str | None) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "Id": str(index),
            "MessageBody": message.model_dump_json(),
            "MessageGroupId": message_group_id(message.tenant_id, message.user_id),
            # A failed job sent again is queued anew under the same id: its queue time tells the two apart.
            "MessageDeduplicationId": f"{message.job_id}-{int(message.queued_at.timestamp() * 1000)}",
        }
        if trace_header:
            entry["MessageSystemAttributes"] = {
                "AWSTraceHeader": {"DataType": "String", "StringValue": trace_header}
            }
        return entry
