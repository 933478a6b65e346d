"""The local stack itself: API Gateway events and responses, the SQS event source, moto's FIFO queues.

The event and response mappings are checked as functions; the queue semantics against the moto
server of the running local stack (on queues of the test's own, so the condenser never sees them).
"""

import base64
import json
import socket
import subprocess
import sys
import uuid

import boto3
import pytest
from e2e_support import ROOT, LocalStackProcess

from hippocampus.contracts import names as schema
from hippocampus.contracts import routes
from local_stack.apigateway import HttpRequest, build_event, map_response
from local_stack.event_source import failed_message_ids
from local_stack.events import PROXY_RESOURCE, sqs_record
from local_stack.moto_endpoint import free_port

pytestmark = pytest.mark.e2e

MEMORY = "/v1/tenants/acme/users/al%40ice/memory"


def _request(method: str, target: str, body: bytes = b"", headers: list[tuple[str, str]] | None = None):
    return HttpRequest(
        method=method,
        target=target,
        headers=headers or [("Host", "127.0.0.1:3000"), ("Content-Type", "application/json")],
        body=body,
        source_ip="127.0.0.1",
        host="127.0.0.1:3000",
    )


def test_a_request_becomes_a_rest_proxy_event() -> None:
    headers = [
        ("Host", "127.0.0.1:3000"),
        ("X-Tag", "a"),
        ("x-tag", "b"),
        ("Content-Type", "application/json"),
    ]
    function, event = build_event(
        _request("GET", MEMORY + "/history?limit=3&limit=4&flag", headers=headers),
        stage="local",
        now=1_700_000_000,
    )
    assert function == "get_memory"
    assert event["resource"] == routes.MEMORY_PATH + "/history"
    assert event["path"] == MEMORY + "/history"
    assert event["httpMethod"] == "GET"
    assert event["pathParameters"] == {"tenant_id": "acme", "user_id": "al@ice"}
    assert event["queryStringParameters"] == {"limit": "4", "flag": ""}
    assert event["multiValueQueryStringParameters"] == {"limit": ["3", "4"], "flag": [""]}
    assert event["headers"]["X-Tag"] == "b"
    assert event["multiValueHeaders"]["X-Tag"] == ["a", "b"]
    assert event["stageVariables"] is None
    assert event["body"] is None and event["isBase64Encoded"] is False
    context = event["requestContext"]
    assert context["stage"] == "local"
    assert context["resourcePath"] == event["resource"]
    assert context["httpMethod"] == "GET"
    assert context["path"] == "/local" + event["path"]
    assert context["identity"]["sourceIp"] == "127.0.0.1"
    assert context["requestTimeEpoch"] == 1_700_000_000_000
    uuid.UUID(context["requestId"])


def test_routing_follows_the_route_table() -> None:
    for route in routes.ROUTES:
        path = route.path.replace("{tenant_id}", "t").replace("{user_id}", "u")
        path = path.replace("{job_id}", "j").replace("{fact_id}", "f")
        function, event = build_event(_request(route.method, path), stage="local")
        assert (function, event["resource"]) == (route.function, route.path)
    # A known path with another method reaches get_memory on its own resource (405 there).
    function, event = build_event(_request("PATCH", MEMORY), stage="local")
    assert (function, event["resource"], event["httpMethod"]) == ("get_memory", routes.MEMORY_PATH, "PATCH")
    # An unknown path reaches get_memory too (404 there), as {proxy+}.
    function, event = build_event(_request("GET", "/v1/nowhere"), stage="local")
    assert (function, event["resource"], event["pathParameters"]) == (
        "get_memory",
        PROXY_RESOURCE,
        {"proxy": "v1/nowhere"},
    )


def test_bodies_are_text_unless_of_a_binary_media_type() -> None:
    _, event = build_event(_request("POST", MEMORY, b'{"items": []}'), stage="local")
    assert (event["body"], event["isBase64Encoded"]) == ('{"items": []}', False)
    binary = b"\xff\xfe\x00binary"
    # No binary media types (as deployed): a text payload, invalid UTF-8 replaced.
    _, event = build_event(_request("POST", MEMORY, binary), stage="local")
    assert (event["body"], event["isBase64Encoded"]) == ("\ufffd\ufffd\x00binary", False)
    octets = [("Content-Type", "application/octet-stream")]
    _, event = build_event(
        _request("POST", MEMORY, binary, octets), stage="local", binary_media_types=("application/*",)
    )
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == binary


def test_proxy_responses_map_back() -> None:
    response = map_response(
        {
            "statusCode": 200,
            "headers": {"ETag": '"3"', "X-One": "single"},
            "multiValueHeaders": {"X-Many": ["a", "b"], "x-one": ["multi"]},
            "body": base64.b64encode(b"\x00\x01").decode(),
            "isBase64Encoded": True,
        },
        "request-1",
    )
    assert response.status == 200
    assert response.body == b"\x00\x01"
    assert ("ETag", '"3"') in response.headers
    assert [v for k, v in response.headers if k == "X-Many"] == ["a", "b"]
    assert [v for k, v in response.headers if k.lower() == "x-one"] == ["multi"]  # multi-value wins
    for malformed in ({"statusCode": "abc"}, {"statusCode": 200, "body": {"not": "a string"}}, ["nope"]):
        failed = map_response(malformed, "request-2")
        assert failed.status == 502
        assert json.loads(failed.body)["error"]["status"] == 502


def test_batch_item_failures_as_lambda_reads_them() -> None:
    ids = ["m1", "m2", "m3"]
    assert failed_message_ids({"batchItemFailures": []}, ids) == set()
    assert failed_message_ids(None, ids) == set()
    assert failed_message_ids({"batchItemFailures": [{"itemIdentifier": "m2"}]}, ids) == {"m2"}
    # An empty or unknown identifier fails the whole batch.
    assert failed_message_ids({"batchItemFailures": [{"itemIdentifier": ""}]}, ids) == set(ids)
    assert failed_message_ids({"batchItemFailures": [{"itemIdentifier": "other"}]}, ids) == set(ids)


def _sqs(local_stack: LocalStackProcess):
    return boto3.client(
        "sqs",
        endpoint_url=local_stack.aws_endpoint,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


def test_fifo_groups_keep_their_order_across_retries_and_redrive_after_five_receives(
    local_stack: LocalStackProcess | None,
) -> None:
    if local_stack is None:
        pytest.skip("inspects the local stack's moto server")
    sqs = _sqs(local_stack)
    suffix = uuid.uuid4().hex[:8]
    dlq = sqs.create_queue(QueueName=f"test-dlq-{suffix}.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    queue = sqs.create_queue(
        QueueName=f"test-{suffix}.fifo",
        Attributes={
            "FifoQueue": "true",
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": schema.DLQ_MAX_RECEIVE_COUNT}
            ),
        },
    )["QueueUrl"]
    for index in range(3):
        sqs.send_message(
            QueueUrl=queue,
            MessageBody=f"g-{index}",
            MessageGroupId="g",
            MessageDeduplicationId=f"g-{index}",
            MessageAttributes={"kind": {"DataType": "String", "StringValue": "test"}},
        )

    def receive() -> list[dict]:
        return sqs.receive_message(
            QueueUrl=queue,
            MaxNumberOfMessages=10,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])

    for attempt in range(1, schema.DLQ_MAX_RECEIVE_COUNT + 1):
        messages = receive()
        # The whole group, in order, every time (moto alone would deliver g-2 first on a retry).
        assert [m["Body"] for m in messages] == ["g-0", "g-1", "g-2"], attempt
        assert receive() == []  # the group is in flight
        record = sqs_record(messages[0], "arn:aws:sqs:us-east-1:123456789012:q.fifo", "us-east-1")
        assert record["attributes"]["ApproximateReceiveCount"] == str(attempt)
        assert {"SentTimestamp", "MessageGroupId", "MessageDeduplicationId", "SequenceNumber"} <= set(
            record["attributes"]
        )
        assert record["messageAttributes"]["kind"]["stringValue"] == "test"
        assert record["eventSource"] == "aws:sqs" and record["md5OfBody"]
        sqs.change_message_visibility_batch(
            QueueUrl=queue,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                for i, m in enumerate(messages)
            ],
        )
    assert receive() == []  # the sixth receive moves them to the DLQ
    dead = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10).get("Messages", [])
    assert [m["Body"] for m in dead] == ["g-0", "g-1", "g-2"]


def test_the_local_stack_refuses_a_port_in_use() -> None:
    port = free_port()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        result = subprocess.run(
            [sys.executable, "-m", "local_stack", "--port", str(port), "--in-memory"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1
    assert "in use" in result.stderr
