"""SQS FIFO adapter: one message per accepted item, grouped by user so each user's items stay in order."""

import hashlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from itertools import batched
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from hippocampus.contracts.errors import DependencyUnavailable
from hippocampus.contracts.models import CondenseMessage
from hippocampus.contracts.recall import IndexMessage


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

    def request_index(self, tenant_id: str, user_id: str, request_id: str, everything: bool = False) -> None:
        now = datetime.now(UTC)
        message = IndexMessage(tenant_id=tenant_id, user_id=user_id, requested_at=now, everything=everything)
        try:
            self._client().send_message(
                QueueUrl=self._queue_url,
                MessageBody=message.model_dump_json(),
                # A group of its own: an index request that fails (the embedding provider down)
                # comes back later without holding back the user's turns behind it.
                MessageGroupId=message_group_id(tenant_id, user_id) + "-index",
                MessageDeduplicationId=f"index-{hashlib.sha256(request_id.encode()).hexdigest()[:64]}",
            )
        except (BotoCoreError, ClientError) as error:
            raise DependencyUnavailable("the ingestion queue is unavailable") from error

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


# A message read by one pass stays hidden from the next ones for this long (they read on).
PEEK_VISIBILITY_S = 240


class SqsDeadLetters:
    """DeadLetters on the FIFO DLQ. A FIFO queue hides the rest of a message group while a message
    of it is in flight, so a pass sees up to 10 messages per user; the next pass sees the next ones."""

    def __init__(self, dlq_url: str, client: Callable[[], Any]) -> None:
        self._dlq_url = dlq_url
        self._client = client

    def peek(self, limit: int) -> list[CondenseMessage]:
        messages: list[CondenseMessage] = []
        while len(messages) < limit:
            received = (
                self._client()
                .receive_message(
                    QueueUrl=self._dlq_url,
                    MaxNumberOfMessages=min(10, limit - len(messages)),
                    VisibilityTimeout=PEEK_VISIBILITY_S,
                    WaitTimeSeconds=0,
                )
                .get("Messages", [])
            )
            if not received:
                break
            for raw in received:
                try:
                    messages.append(CondenseMessage.model_validate_json(raw["Body"]))
                except ValidationError:
                    continue  # not a message of this service: nothing to close
        return messages
