from typing import Any

import boto3
import pytest
from moto import mock_aws

from hippocampus import wiring
from hippocampus.adapters import aws_clients
from hippocampus.contracts import names
from tests.support.lambda_harness import Service
from tests.support.moto_resources import create_resources


@pytest.fixture
def aws(monkeypatch):
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_METRICS_NAMESPACE": names.METRICS_NAMESPACE,
    }.items():
        monkeypatch.setenv(name, value)
    for name in (
        "AWS_ENDPOINT_URL",
        "AWS_PROFILE",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "MEMORY_LLM_PROVIDER",
    ):
        monkeypatch.delenv(name, raising=False)
    with mock_aws():
        resources = create_resources()
        monkeypatch.setenv("MEMORY_TABLE_NAME", resources.table_name)
        monkeypatch.setenv("MEMORY_BUCKET_NAME", resources.bucket_name)
        monkeypatch.setenv("MEMORY_QUEUE_URL", resources.queue_url)
        monkeypatch.setenv("MEMORY_DLQ_URL", resources.dlq_url)
        wiring.reset()
        yield resources
        wiring.reset()


@pytest.fixture
def service(aws):
    return Service(aws.queue_url, boto3.client("sqs"))


@pytest.fixture
def items_read(aws: Any) -> list[int]:
    """The number of items each DynamoDB Query of the functions returned."""
    counts: list[int] = []

    def count(parsed: dict[str, Any], **_: Any) -> None:
        counts.append(len(parsed.get("Items", [])))

    aws_clients.client("dynamodb").meta.events.register("after-call.dynamodb.Query", count)
    return counts
