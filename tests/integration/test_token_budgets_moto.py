"""On DynamoDB and SQS (moto), through the deployed handlers, with a tenant budget of 1 token a day:
the first turn spends it, the next is parked (an episode at once, its job `deferred`), the usage
route says so, the scheduled pass sends it back once the budget allows, and forgetting the user
erases a parked turn (docs/architecture.md "Token budgets")."""

from datetime import UTC, datetime

import boto3
import pytest

from hippocampus import wiring
from hippocampus.adapters import aws_clients
from hippocampus.adapters.dynamodb_budgets import DynamoDeferralStore, usage_pk
from hippocampus.adapters.dynamodb_episodes import DynamoEpisodeStore
from hippocampus.adapters.dynamodb_table import Table
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


def deferrals(aws) -> DynamoDeferralStore:
    table = Table(aws.table_name, lambda: aws_clients.client("dynamodb"))
    return DynamoDeferralStore(table, DynamoEpisodeStore(table, retention_days=30))


def test_a_delete_erases_the_parked_turns_of_the_old_life_only(service, aws):
    service.call("POST", USER, {"items": [{"id": "t1", "text": "I sell candles."}]})
    service.drain()  # spends the budget
    service.call("POST", USER, {"items": [{"id": "t2", "text": "I moved to Berlin."}]})
    service.drain()
    assert service.call("DELETE", USER).status == 204
    new_life = service.call("POST", USER, {"items": [{"id": "t3", "text": "I am new here."}]})
    service.drain()
    assert job_status(service, new_life) == "deferred"
    # A delete still running (its tombstone was generation 1) erases nothing of the new life.
    assert deferrals(aws).erase_user("acme", "alice", 1) == 0
    assert deferrals(aws).count("acme") == 1


def test_an_entry_parked_again_or_sent_again_since_it_was_read_is_not_marked(service, aws):
    service.call("POST", USER, {"items": [{"id": "t1", "text": "I sell candles."}]})
    service.drain()
    service.call("POST", USER, {"items": [{"id": "t2", "text": "I moved to Berlin."}]})
    service.drain()
    store = deferrals(aws)
    [entry] = store.entries("acme")
    now = datetime.now(UTC)
    assert [m.job_id for m in store.mark_released("acme", [entry], now)] == [entry.message.job_id]
    assert store.mark_released("acme", [entry], now) == []  # a second pass with what it read before
    [sent] = store.entries("acme")
    assert sent.released and sent.message.released_at == now
