"""The redrive of the dead-letter queue on moto's FIFO queues, through the condenser's real handler
(docs/operations.md "The dead-letter queue"): messages go back in order with their group and
trace, their jobs are queued again, the condenser completes them, and a retried redrive never
queues a message twice."""

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from hippocampus import wiring
from hippocampus.adapters import aws_clients
from hippocampus.adapters import sqs as sqs_adapter
from hippocampus.adapters.sqs import message_group_id
from hippocampus.contracts.models import CondenseMessage
from hippocampus.contracts.ports import LlmResult
from hippocampus.contracts.prompt_format import NEW_CONTENT_BEGIN, NEW_CONTENT_END
from hippocampus.contracts.recall import IndexMessage

T = "acme"
TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
REDRIVE = {"action": "redrive_dead_letters"}


class AppendingLlm:
    """Appends the new turns to the memory, in the order the prompt gives them; `down` fails every call."""

    name = "appending"

    def __init__(self) -> None:
        self.down = False

    def complete(
        self, system: str, prompt: str, timeout_s: float | None = None, schema: object = None
    ) -> LlmResult:
        if self.down:
            raise TimeoutError("the LLM provider is down")
        new = prompt.split(NEW_CONTENT_BEGIN, 1)[1].split(NEW_CONTENT_END, 1)[0].strip()
        old = prompt.split("<<<OLD_MEMORY>>>", 1)[1].split("<<<END_OLD_MEMORY>>>", 1)[0].strip()
        return LlmResult(" ".join(part for part in (old, new) if part))


@pytest.fixture
def llm(service, monkeypatch) -> AppendingLlm:
    monkeypatch.setenv("MEMORY_MAX_WORDS", "2000")
    wiring.reset()
    model = AppendingLlm()
    service.condense_with(model)
    return model


@pytest.fixture
def sqs(aws) -> Any:
    return boto3.client("sqs")


def ingest(service, user: str, *texts: str) -> list[str]:
    response = service.call(
        "POST", f"/v1/tenants/{T}/users/{user}/memory", {"items": [{"text": t} for t in texts]}
    )
    assert response.status == 202, response.body
    return [job["job_id"] for job in response.body["jobs"]]


def job(service, job_id: str) -> dict[str, Any]:
    return service.call("GET", f"/v1/tenants/{T}/jobs/{job_id}").body


def receive(sqs, url: str) -> list[dict[str, Any]]:
    return sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=10,
        VisibilityTimeout=60,
        AttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    ).get("Messages", [])


def fail_into_the_dlq(service, sqs, aws, llm: AppendingLlm) -> None:
    """Every queued message fails its fifth attempt (its job `failed`) and moves to the DLQ as SQS
    moves it: same id-less body, same group, in the order of the ingest queue."""
    llm.down = True
    while messages := receive(sqs, aws.queue_url):
        assert service.deliver(messages, receive_count=5) == {m["MessageId"] for m in messages}
        for message in messages:
            sqs.send_message(
                QueueUrl=aws.dlq_url,
                MessageBody=message["Body"],
                MessageGroupId=message["Attributes"]["MessageGroupId"],
                MessageDeduplicationId=message["MessageId"],
            )
            sqs.delete_message(QueueUrl=aws.queue_url, ReceiptHandle=message["ReceiptHandle"])
    llm.down = False


def drain_recording(service, sqs, aws) -> list[dict[str, Any]]:
    """Condense everything queued, batch after batch; the messages as they were delivered."""
    delivered: list[dict[str, Any]] = []
    while messages := receive(sqs, aws.queue_url):
        assert service.deliver(messages) == set()
        delivered += messages
    return delivered


def depth(sqs, url: str) -> int:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(attributes[name]) for name in names)


def test_a_redrive_moves_each_users_messages_back_in_order_and_the_condenser_completes_them(
    service, sqs, aws, llm, monkeypatch
):
    client = aws_clients.client("sqs")
    sent: list[dict[str, Any]] = []
    real_send = client.send_message_batch

    def recording(**kwargs: Any) -> Any:
        sent.extend(kwargs["Entries"])
        return real_send(**kwargs)

    monkeypatch.setattr(client, "send_message_batch", recording)
    alice = ingest(service, "alice", *(f"Alice turn {n:02d}." for n in range(13)))  # over one receive
    bob = ingest(service, "bob", *(f"Bob turn {n}." for n in range(3)))
    fail_into_the_dlq(service, sqs, aws, llm)
    index = IndexMessage(tenant_id=T, user_id="alice", requested_at=datetime.now(UTC))
    sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody=index.model_dump_json(),
        MessageGroupId=message_group_id(T, "alice") + "-index",
        MessageDeduplicationId="index-1",
        MessageSystemAttributes={"AWSTraceHeader": {"DataType": "String", "StringValue": TRACE}},
    )
    assert {job(service, j)["status"] for j in alice + bob} == {"failed"}
    assert depth(sqs, aws.dlq_url) == 17

    assert service.invoke("condenser", REDRIVE) == {"moved": 17, "jobs_requeued": 16, "remaining": 0}
    for job_id in alice + bob:
        queued = job(service, job_id)
        assert queued["status"] == "queued" and queued["error"]["code"] == "llm_or_dependency_error"

    delivered = drain_recording(service, sqs, aws)
    by_group: dict[str, list[str]] = {}
    for message in delivered:
        by_group.setdefault(message["Attributes"]["MessageGroupId"], []).append(message["Body"])
    turns = [CondenseMessage.model_validate_json(body) for body in by_group[message_group_id(T, "alice")]]
    assert [turn.job_id for turn in turns] == alice  # across two receives of the DLQ
    assert len(by_group[message_group_id(T, "bob")]) == 3
    (redriven_index,) = by_group[message_group_id(T, "alice") + "-index"]
    assert IndexMessage.model_validate_json(redriven_index) == index
    # The trace goes along (moto's SendMessageBatch drops system attributes: the request shows it).
    (index_entry,) = [entry for entry in sent if entry["MessageBody"] == redriven_index]
    assert index_entry["MessageSystemAttributes"]["AWSTraceHeader"]["StringValue"] == TRACE
    assert [entry for entry in sent if "MessageSystemAttributes" in entry] == [index_entry]
    assert all(m["Attributes"]["MessageDeduplicationId"].startswith("redrive-") for m in delivered)
    assert {job(service, j)["status"] for j in alice + bob} == {"completed"}
    memory = service.call("GET", f"/v1/tenants/{T}/users/alice/memory").body["memory"]
    assert memory.index("Alice turn 00.") < memory.index("Alice turn 09.") < memory.index("Alice turn 12.")


def test_the_limit_leaves_the_rest_and_a_second_redrive_moves_it(service, sqs, aws, llm):
    ingest(service, "alice", *(f"Turn {n}." for n in range(7)))
    fail_into_the_dlq(service, sqs, aws, llm)
    first = service.invoke("condenser", {"action": "redrive_dead_letters", "limit": 5})
    assert first == {"moved": 5, "jobs_requeued": 5, "remaining": 2}
    assert service.invoke("condenser", REDRIVE) == {"moved": 2, "jobs_requeued": 2, "remaining": 0}
    assert service.invoke("condenser", REDRIVE) == {"moved": 0, "jobs_requeued": 0, "remaining": 0}
    assert depth(sqs, aws.queue_url) == 7


def test_a_redrive_retried_after_a_failed_delete_never_queues_a_message_twice(
    service, sqs, aws, llm, monkeypatch
):
    [job_id] = ingest(service, "alice", "Alice sells candles.")
    fail_into_the_dlq(service, sqs, aws, llm)
    monkeypatch.setattr(sqs_adapter, "REDRIVE_VISIBILITY_S", 0)  # visible again at once for the retry
    client = aws_clients.client("sqs")
    real_delete = client.delete_message_batch

    def throttled(**kwargs: Any) -> Any:
        raise ClientError(
            {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "DeleteMessageBatch"
        )

    monkeypatch.setattr(client, "delete_message_batch", throttled)
    failed = service.invoke("condenser", REDRIVE)
    assert failed["error"]["status"] == 503  # sent, but still in the DLQ
    monkeypatch.setattr(client, "delete_message_batch", real_delete)
    assert service.invoke("condenser", REDRIVE)["moved"] == 1  # sent again: SQS drops the copy
    assert depth(sqs, aws.dlq_url) == 0 and depth(sqs, aws.queue_url) == 1
    assert len(drain_recording(service, sqs, aws)) == 1
    assert job(service, job_id)["status"] == "completed"


def test_the_scheduled_pass_leaves_the_dead_letters_to_a_redrive(service, sqs, aws, llm):
    ingest(service, "alice", "Alice sells candles.", "On Shopify.")
    fail_into_the_dlq(service, sqs, aws, llm)
    scheduled = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
    assert service.invoke("condenser", scheduled) == {"batchItemFailures": []}
    # The pass made what it read visible again: the redrive right after it takes everything.
    assert service.invoke("condenser", REDRIVE) == {"moved": 2, "jobs_requeued": 2, "remaining": 0}


def test_a_bad_payload_is_the_422_envelope(service, aws):
    answer = service.invoke("condenser", {"action": "redrive_dead_letters", "limit": 1001})
    assert answer["error"]["status"] == 422 and answer["error"]["details"][0]["field"] == "limit"
