"""The memory read's fast lane answers exactly as the resolver's route does (docs/architecture.md
"The memory read's fast lane"): the same events, on the same stored state, give identical
responses — body, ETag, 304 — and a read that fails is answered by the resolver."""

import copy
import json
from typing import Any
from urllib.parse import quote

import boto3
import pytest
from botocore.exceptions import ClientError

from hippocampus import wiring
from hippocampus.adapters.dynamodb_memory_items import read_stored_memory
from hippocampus.adapters.dynamodb_table import Table
from hippocampus.adapters.tracing import NoTracing
from hippocampus.api.memory_lane import MemoryLane, memory_lane_function, plain_read
from hippocampus.api.observed import observed
from hippocampus.contracts.routes import MEMORY_PATH
from tests.support.lambda_harness import Context, api_event

TENANT = "acme"


def memory_path(user: str) -> str:
    return MEMORY_PATH.format(tenant_id=TENANT, user_id=user)


def both(event: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answer of get_memory's handler, through its lane, and of the resolver alone."""
    assert plain_read(event) is not None, "the lane must answer this event itself"
    return wiring.get_memory_handler()(event, Context()), wiring.read_api()(event, Context())


def fact(fact_id: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"id": fact_id, "text": text, "infer": False, **fields}


@pytest.fixture
def users(service: Any) -> dict[str, str]:
    """Users in every shape a memory body takes; their ids by what they show."""
    rich = "zoe@example.com"
    service.call(
        "POST",
        memory_path(rich),
        {
            "items": [
                fact("f1", "Prefers SMS over email — «always».", metadata={"source": "crm", "score": 0.5}),
                fact("f2", "# Plan\n\n- tea\n- ☕", title="Morning", is_markdown=True),
                fact("f3", "Lives in Zürich.", additional_metadata={"nested": {"list": [1, None, True]}}),
            ]
        },
    )
    summary_only = "sam"
    for user, summary in ((rich, "Zoë likes tea; ☕ daily."), (summary_only, "Sam sells candles.")):
        put = {"memory": summary, "expected_version": 0}
        assert service.call("PUT", memory_path(user), put).status == 200
    deleted = "dee"
    service.call("POST", memory_path(deleted), {"items": [fact("old", "Forgotten soon.")]})
    assert service.call("DELETE", memory_path(deleted)).status == 204
    service.call("POST", memory_path(deleted), {"items": [fact("new", "After the delete.")]})
    emptied = "emma"
    assert (
        service.call("PUT", memory_path(emptied), {"memory": "Briefly here.", "expected_version": 0}).status
        == 200
    )
    assert service.call("DELETE", memory_path(emptied)).status == 204
    return {
        "rich": rich,
        "summary_only": summary_only,
        "deleted": deleted,
        "emptied": emptied,
        "never": "nobody",
    }


@pytest.mark.parametrize("shape", ["rich", "summary_only", "deleted", "emptied", "never"])
def test_the_lane_answers_a_memory_read_exactly_as_the_route(users: dict[str, str], shape: str) -> None:
    lane, route = both(api_event("GET", memory_path(quote(users[shape], safe=""))))
    assert lane == route
    assert lane["statusCode"] == 200


def test_conditional_reads_are_answered_alike(users: dict[str, str]) -> None:
    path = memory_path(quote(users["rich"], safe=""))
    lane, _ = both(api_event("GET", path))
    etag = lane["multiValueHeaders"]["ETag"][0]
    for condition, status in [
        (etag, 304),
        ("W/" + etag, 304),
        (f'"0", {etag}', 304),
        ("*", 304),
        ('"7-000000000000"', 200),
        ("not a tag", 200),
    ]:
        for name in ("If-None-Match", "if-none-match"):
            lane, route = both(api_event("GET", path, headers={name: condition}))
            assert lane == route, (name, condition)
            assert lane["statusCode"] == status, (name, condition)


def test_a_read_that_fails_is_answered_by_the_resolver(users: dict[str, str]) -> None:
    def failing(tenant_id: str, user_id: str) -> Any:
        raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "Query")

    lane = memory_lane_function(MemoryLane(failing, NoTracing(), wiring.read_api))
    event = api_event("GET", memory_path(users["summary_only"]))
    answer = lane(event, Context())
    assert answer == wiring.read_api()(event, Context())
    assert answer["statusCode"] == 200


def test_the_lane_reads_the_memory_the_store_reads(users: dict[str, str], aws: Any) -> None:
    table = Table(aws.table_name, lambda: wiring.aws_clients.client("dynamodb"))
    stored = read_stored_memory(table, TENANT, users["rich"])
    read = wiring.read_service().read_memory(TENANT, users["rich"])
    assert stored.state.version == read.body.version == 1
    assert [f["id"] for f in stored.facts] == [f.id for f in read.body.facts] == ["f1", "f2", "f3"]


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v1/tenants/acme/users/-bad/memory", 422),  # an id the route refuses, named by it
        ("/v1/tenants/acme/users/sam/memory/history", 200),  # another route of the function
        ("/v1/tenants/acme/users/sam/agents/helper/memory", 200),  # an agent's read: both scopes
        ("/v1/tenants/acme/users/sam/memory/nothing-here", 404),
    ],
)
def test_what_the_lane_does_not_answer_the_resolver_does(
    users: dict[str, str], path: str, status: int
) -> None:
    event = api_event("GET", path)
    assert plain_read(event) is None
    answer = wiring.get_memory_handler()(event, Context())
    assert answer == wiring.read_api()(event, Context())
    assert answer["statusCode"] == status


def answers(event: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> list[Any]:
    """The handler's answer and metrics, then the resolver's (observed as the handler is)."""
    results = []
    for handler in (wiring.get_memory_handler(), observed(wiring.read_api())):
        capsys.readouterr()
        answer = handler(copy.deepcopy(event), Context())
        metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
        for metric in metrics:
            metric["_aws"].pop("Timestamp")
        results.append((answer, metrics))
    return results


def event_with(**fields: Any) -> dict[str, Any]:
    return {**api_event("GET", memory_path("sam")), **fields}


# Events sent by hand (a direct invoke of a proxy event, a test harness): whatever the lane takes
# of them, the answer is the route's.
HAND_MADE = {
    "a newline after the user id": api_event("GET", "/v1/tenants/acme/users/sam%0A/memory"),
    "a newline after the tenant id": api_event("GET", "/v1/tenants/acme%0A/users/sam/memory"),
    "a percent-encoded letter": api_event("GET", "/v1/tenants/%61cme/users/%73am/memory"),
    "the condition in the single-value map only": event_with(
        headers={"If-None-Match": "*"}, multiValueHeaders={"Accept": ["*/*"]}
    ),
    "the condition in the multi-value map only": event_with(
        headers={}, multiValueHeaders={"if-none-match": ["*"]}
    ),
    "an empty condition": api_event("GET", memory_path("sam"), headers={"If-None-Match": ""}),
    "two conditions": event_with(multiValueHeaders={"If-None-Match": ['"1"', "*"]}),
    "a query string that is a string": event_with(queryStringParameters=""),
    "empty query maps": event_with(queryStringParameters={}, multiValueQueryStringParameters={}),
    "a body that is a number": event_with(body=0),
    "a body that is an object": event_with(body={}),
    "an empty body": event_with(body=""),
    "isBase64Encoded as a string": event_with(isBase64Encoded="true"),
    "a header whose value is a number": event_with(headers={"X-Num": 1}, multiValueHeaders={"X-Num": [1]}),
    "a multi-value header that is no list": event_with(multiValueHeaders={"Accept": "*/*"}),
    "no header maps": event_with(headers=None, multiValueHeaders=None),
    "no request id": event_with(requestContext={}),
    "a HEAD": {**event_with(), "httpMethod": "HEAD"},
}


@pytest.mark.parametrize("name", list(HAND_MADE))
def test_a_hand_made_event_gets_the_routes_answer_and_metrics(
    users: dict[str, str], capsys: pytest.CaptureFixture[str], name: str
) -> None:
    lane, route = answers(HAND_MADE[name], capsys)
    assert lane == route


# Items written by hand into the table: the lane answers as the models would, or not at all.
HAND_WRITTEN = {
    "metadata that is not JSON": ("FACT#", {"metadata": "{not json"}),
    "a time that is no time": ("FACT#", {"updated_at": "yesterday"}),
    "a title that is a number": ("FACT#", {"title": 5}),
    "metadata that is a list": ("FACT#", {"metadata": "[1,2]"}),
    "a time with an offset": ("FACT#", {"updated_at": "2026-01-01T00:00:00.100000+02:00"}),
    "a time without an offset": ("FACT#", {"updated_at": "2026-01-01T00:00:00"}),
    "a time in Z": ("FACT#", {"updated_at": "2026-01-01T00:00:00Z"}),
    "a word count that is a string": ("MEMORY", {"word_count": "3"}),
    "a summary time west of UTC": ("MEMORY", {"updated_at": "2026-01-01T00:00:00.000001-05:30"}),
}


@pytest.mark.parametrize("name", list(HAND_WRITTEN))
def test_an_item_written_by_hand_is_answered_as_the_models_answer_it(
    service: Any, aws: Any, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = memory_path("sam")
    service.call("POST", path, {"items": [fact("f1", "Sells candles.")]})
    assert service.call("PUT", path, {"memory": "Sam.", "expected_version": 0}).status == 200
    table = boto3.resource("dynamodb").Table(aws.table_name)
    prefix, change = HAND_WRITTEN[name]
    for item in table.scan()["Items"]:
        if item["sk"].startswith(prefix):
            table.put_item(Item={**item, **change})
    lane, route = answers(api_event("GET", path), capsys)
    assert lane == route
