"""SQS FIFO adapter: one message per accepted item, grouped by user so each user's items stay in
order; and the condenser's dead-letter queue, read by its scheduled pass and redriven on request."""

import hashlib
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from itertools import batched
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from hippocampus.contracts.errors import DependencyUnavailable
from hippocampus.contracts.models import CondenseMessage
from hippocampus.contracts.ports import MovedLetters
from hippocampus.contracts.recall import IndexMessage
from hippocampus.contracts.scopes import user_of
from hippocampus.observability import logger


def message_group_id(tenant_id: str, user_id: str) -> str:
    """One FIFO group per user, its agents' scopes included (`user_id` may be a scope key:
    contracts/scopes.py), so all of a user's items keep one order; hashed so identifiers never
    leak into queue metadata."""
    return hashlib.sha256(f"{tenant_id}\x1f{user_of(user_id)}".encode()).hexdigest()


_INDEX_ENTRY = "index"  # the batch entry id of an index request riding with turns


class SqsJobQueue:
    """JobQueue on one FIFO queue; the deduplication id is the job id and when it was queued."""

    def __init__(self, queue_url: str, client: Callable[[], Any]) -> None:
        self._queue_url = queue_url
        self._client = client

    def send(
        self, messages: Sequence[CondenseMessage], trace_header: str | None, index_for: str | None = None
    ) -> None:
        entries = [self._entry(str(index), message, trace_header) for index, message in enumerate(messages)]
        if index_for is not None:
            # In the turns' last call when it has room: a request of facts and turns makes one call.
            index = self._index_message(messages[0].tenant_id, messages[0].user_id, index_for)
            entries.append({"Id": _INDEX_ENTRY, **index})
        for chunk in batched(entries, 10):
            try:
                response = self._client().send_message_batch(QueueUrl=self._queue_url, Entries=list(chunk))
            except (BotoCoreError, ClientError) as error:
                raise DependencyUnavailable(
                    "the ingestion queue is unavailable; retry the request"
                ) from error
            refused = response.get("Failed", [])
            failed = [failure for failure in refused if failure.get("Id") != _INDEX_ENTRY]
            if len(failed) < len(refused):
                logger.warning(
                    "could not ask for the facts' vectors", extra={"tenant_id": messages[0].tenant_id}
                )
            if failed:
                codes = sorted({failure.get("Code", "unknown") for failure in failed})
                raise DependencyUnavailable(f"the queue rejected {len(failed)} message(s): {codes}")

    def request_index(self, tenant_id: str, user_id: str, request_id: str, everything: bool = False) -> None:
        message = self._index_message(tenant_id, user_id, request_id, everything)
        try:
            self._client().send_message(QueueUrl=self._queue_url, **message)
        except (BotoCoreError, ClientError) as error:
            raise DependencyUnavailable("the ingestion queue is unavailable") from error

    @staticmethod
    def _index_message(
        tenant_id: str, user_id: str, request_id: str, everything: bool = False
    ) -> dict[str, Any]:
        """An index request, as SendMessage takes it (a batch entry adds its `Id`)."""
        message = IndexMessage(
            tenant_id=tenant_id, user_id=user_id, requested_at=datetime.now(UTC), everything=everything
        )
        return {
            "MessageBody": message.model_dump_json(),
            # A group of its own: an index request that fails (the embedding provider down) comes
            # back later without holding back the user's turns behind it.
            "MessageGroupId": message_group_id(tenant_id, user_id) + "-index",
            # Per scope: a request to an agent's route may ask for the vectors of two scopes.
            "MessageDeduplicationId": "index-"
            + hashlib.sha256(f"{tenant_id}\x1f{user_id}\x1f{request_id}".encode()).hexdigest()[:64],
        }

    @staticmethod
    def _entry(entry_id: str, message: CondenseMessage, trace_header: str | None) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "Id": entry_id,
            "MessageBody": message.model_dump_json(),
            "MessageGroupId": message_group_id(message.tenant_id, message.user_id),
            # A failed job sent again is queued anew under the same id: its queue time tells the two
            # apart; a parked turn sent back, its release time.
            "MessageDeduplicationId": f"{message.job_id}-{_ms(message.queued_at)}"
            + (f"-r{_ms(message.released_at)}" if message.released_at else ""),
        }
        if trace_header:
            entry["MessageSystemAttributes"] = {
                "AWSTraceHeader": {"DataType": "String", "StringValue": trace_header}
            }
        return entry


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


# A message read by one pass stays hidden from the pass's next receives for this long (they read
# on); the pass makes them visible again when it is done, so that a redrive can take them.
PEEK_VISIBILITY_S = 240


class SqsDeadLetters:
    """DeadLetters on the FIFO DLQ. A FIFO queue hides the rest of a message group while a message
    of it is in flight, so a pass sees up to 10 messages per user."""

    def __init__(self, dlq_url: str, client: Callable[[], Any]) -> None:
        self._dlq_url = dlq_url
        self._client = client

    def peek(self, limit: int) -> list[CondenseMessage]:
        messages: list[CondenseMessage] = []
        read: list[dict[str, Any]] = []
        while len(read) < limit:
            received = receive(self._client(), self._dlq_url, min(10, limit - len(read)), PEEK_VISIBILITY_S)
            if not received:
                break
            read += received
            messages += [message for raw in received if (message := condensation(raw["Body"]))]
        release(self._client(), self._dlq_url, read)
        return messages


def receive(client: Any, queue_url: str, count: int, visibility_s: int) -> list[dict[str, Any]]:
    """One receive of up to `count` messages, hidden `visibility_s` from other readers."""
    return list(
        client.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=count,
            VisibilityTimeout=visibility_s,
            WaitTimeSeconds=0,
            MessageSystemAttributeNames=["MessageGroupId", "AWSTraceHeader"],
            # A receive retried by the SDK gets the same messages, instead of hiding a second set.
            ReceiveRequestAttemptId=uuid.uuid4().hex,
        ).get("Messages", [])
    )


def release(client: Any, queue_url: str, messages: Sequence[dict[str, Any]]) -> None:
    """Make `messages` visible again now; best effort (else they are, once their timeout ends)."""
    for chunk in batched(messages, 10):
        entries = [
            {"Id": str(index), "ReceiptHandle": raw["ReceiptHandle"], "VisibilityTimeout": 0}
            for index, raw in enumerate(chunk)
        ]
        try:
            client.change_message_visibility_batch(QueueUrl=queue_url, Entries=entries)
        except (BotoCoreError, ClientError) as error:
            logger.warning("dead letters not released", extra={"error_type": type(error).__name__})


def condensation(body: str) -> CondenseMessage | None:
    """The message's condensation; None for an index request or a body of no known kind."""
    try:
        return CondenseMessage.model_validate_json(body)
    except ValidationError:
        return None


# A message taken for a redrive stays hidden this long: its send and its delete fit well within.
# Should the invocation die in between, it comes back, and its deduplication id drops the copy.
REDRIVE_VISIBILITY_S = 60
# SendMessageBatch takes at most this many bytes of bodies in all (10 entries at most).
MAX_BATCH_BYTES = 262_144


class SqsRedrive:
    """DeadLetterMover from the FIFO DLQ back to the ingest queue (docs/operations.md "The dead-letter queue").

    Order: a FIFO queue hands out a message group's messages in order, and none of a group while
    one of it is in flight (received, neither deleted nor visible again). So a receive gets the
    next messages of each group, in order; they are sent to the ingest queue in that order, under
    their own group id; and each is deleted from the DLQ only once it was sent, which is what makes
    the group's later messages receivable. A user's messages reach the ingest queue in the order
    they reached the DLQ, across batches, invocations and concurrent redrives. Should the ingest
    queue refuse one entry of a batch yet take a later one of the same group (a failure of that
    entry alone: rare), the refused message comes back behind it on the next redrive.
    """

    def __init__(self, dlq_url: str, queue_url: str, client: Callable[[], Any]) -> None:
        self._dlq_url = dlq_url
        self._queue_url = queue_url
        self._client = client

    def move_to_queue(self, limit: int) -> MovedLetters:
        try:
            received = receive(self._client(), self._dlq_url, min(10, limit), REDRIVE_VISIBILITY_S)
        except (BotoCoreError, ClientError) as error:
            raise DependencyUnavailable("the dead-letter queue is unavailable; redrive again") from error
        if not received:
            return MovedLetters()
        sent = self._send(received)
        moved = [raw for raw in received if raw["MessageId"] in sent]
        release(self._client(), self._dlq_url, [raw for raw in received if raw["MessageId"] not in sent])
        self._delete(moved)
        condensations = [message for raw in moved if (message := condensation(raw["Body"]))]
        return MovedLetters(len(moved), condensations, refused=len(received) - len(moved))

    def depth(self) -> int:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        attributes = self._client().get_queue_attributes(QueueUrl=self._dlq_url, AttributeNames=names)
        return sum(int(attributes["Attributes"].get(name, 0)) for name in names)

    def _send(self, received: Sequence[dict[str, Any]]) -> set[str]:
        """The ids of the messages the ingest queue took; it stops at the first refusal, so no
        later message of a group goes ahead of a refused one across sends."""
        sent: set[str] = set()
        for chunk in _chunks([_redriven(raw) for raw in received]):
            try:
                response = self._client().send_message_batch(QueueUrl=self._queue_url, Entries=chunk)
            except (BotoCoreError, ClientError) as error:
                logger.warning("ingest queue refused a redrive", extra={"error_type": type(error).__name__})
                break
            sent |= {entry["Id"] for entry in response.get("Successful", [])}
            if response.get("Failed"):
                break
        return sent

    def _delete(self, moved: Sequence[dict[str, Any]]) -> None:
        # One left behind is in both queues: a redrive sends it again under the same deduplication
        # id (dropped within 5 minutes), and later the condenser's ledger finds its job settled.
        for chunk in batched(moved, 10):
            entries = [{"Id": raw["MessageId"], "ReceiptHandle": raw["ReceiptHandle"]} for raw in chunk]
            response = self._client().delete_message_batch(QueueUrl=self._dlq_url, Entries=entries)
            if response.get("Failed"):
                logger.warning(
                    "redriven dead letters not deleted", extra={"messages": len(response["Failed"])}
                )


def _redriven(raw: dict[str, Any]) -> dict[str, Any]:
    """The SendMessageBatch entry of a dead letter: its body and group, and its trace if it has one.

    The deduplication id comes from the dead letter's own id: a redrive retried (or run twice at
    once) never queues it twice within SQS's 5-minute deduplication window."""
    attributes = raw.get("Attributes", {})
    entry: dict[str, Any] = {
        "Id": raw["MessageId"],
        "MessageBody": raw["Body"],
        "MessageGroupId": attributes.get("MessageGroupId", ""),
        "MessageDeduplicationId": f"redrive-{raw['MessageId']}",
    }
    if attributes.get("AWSTraceHeader"):
        entry["MessageSystemAttributes"] = {
            "AWSTraceHeader": {"DataType": "String", "StringValue": attributes["AWSTraceHeader"]}
        }
    return entry


def _chunks(entries: Sequence[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """`entries` in order, in batches of at most 10 entries and MAX_BATCH_BYTES of bodies."""
    chunk: list[dict[str, Any]] = []
    size = 0
    for entry in entries:
        entry_bytes = len(entry["MessageBody"].encode())
        if chunk and (len(chunk) == 10 or size + entry_bytes > MAX_BATCH_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(entry)
        size += entry_bytes
    if chunk:
        yield chunk
