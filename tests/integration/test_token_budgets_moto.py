"""On DynamoDB and SQS (moto), through the deployed handlers, with a tenant budget of 1 token a day:
the first turn spends it, the next is parked (an episode at once, its job `deferred`), the usage
route says so, the scheduled pass sends it back once the budget allows, and forgetting the user
erases a parked turn (docs/architecture.md "Token budgets")."""

from datetime import UTC, datetime

import boto3
import pytest

from hippocampus import wiring
from hippocampus.adapters.dynamodb_budgets import usage_pk
from tests.support.lambda_harness import Service

TENANT = "/v1/tenants/acme"
USER = f"{TENANT}/users/alice/memory"
SCHEDULED = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


@pytest.fixture
def service(aws, monkeypatch):
    monkeypatch.setenv("MEMORY_TENANT_DAILY_TOKENS", '{"acme": 1}')
    wiring.reset()
    return Service(aws.queue_url, boto3.client("sqs"))


def job_status(service: Service, answer) -> str:
    job_id = answer.body["jobs"][0]["job_id"]
    return service.call("GET", f"{TENANT}/jobs/{job_id}").body["status"]


def reset_the_day(aws) -> None:
    """What midnight UTC does to the budget: today's count starts again."""
    day = datetime.now(UTC).date().isoformat()
    boto3.client("dynamodb").delete_item(
        TableName=aws.table_name, Key={"pk": {"S": usage_pk("acme")}, "sk": {"S": f"DAY#{day}"}}
    )


def test_a_spent_budget_parks_turns_until_it_allows_again(service, aws):
    first = service.call("POST", USER, {"items": [{"id": "t1", "text": "I sell candles."}]})
    service.drain()
    assert job_status(service, first) == "completed"
    usage = service.call("GET", f"{TENANT}/usage").body
    assert usage["calls"] == 1 and usage["tokens"] > 1 and usage["remaining"] == 0

    parked = service.call("POST", USER, {"items": [{"id": "t2", "text": "I moved to Berlin."}]})
    service.drain()
    assert job_status(service, parked) == "deferred"
    texts = [episode["text"] for episode in service.call("GET", f"{USER}/episodes").body["episodes"]]
    assert "I moved to Berlin." in texts
    assert service.call("GET", f"{TENANT}/usage").body["deferred_jobs"] == 1

    service.invoke("condenser", SCHEDULED)  # still spent: nothing goes back
    assert not service.receive()
    reset_the_day(aws)
    service.invoke("condenser", SCHEDULED)
    assert job_status(service, parked) == "queued"
    service.drain()
    assert job_status(service, parked) == "completed"
    assert service.call("GET", f"{TENANT}/usage").body["deferred_jobs"] == 0
    assert "Berlin" in service.call("GET", USER).body["memory"]


def test_forgetting_a_user_erases_its_parked_turns(service):
    service.call("POST", USER, {"items": [{"id": "t1", "text": "I sell candles."}]})
    service.drain()
    service.call("POST", USER, {"items": [{"id": "t2", "text": "I moved to Berlin."}]})
    service.drain()
    answer = service.call("DELETE", USER)
    receipt = service.call("GET", f"{USER}/deletions/{answer.headers['deletion-receipt']}").body
    assert receipt["erased"]["queue"]["deferred_turns"] == 1
    assert service.call("GET", f"{TENANT}/usage").body["deferred_jobs"] == 0
    service.invoke("condenser", SCHEDULED)
    assert not service.receive()
