"""The memory read's fast lane answers exactly as the resolver's route does (docs/architecture.md
"The memory read's fast lane"): the same events, on the same stored state, give identical
responses — body, ETag, 304 — and a read that fails is answered by the resolver."""

from typing import Any
from urllib.parse import quote

import pytest
from botocore.exceptions import ClientError

from hippocampus import wiring
from hippocampus.adapters.dynamodb_memory_items import read_stored_memory
from hippocampus.adapters.dynamodb_table import Table
from hippocampus.adapters.tracing import NoTracing
from hippocampus.api.memory_lane import MemoryLane, memory_lane_function, plain_read
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
    assert (
        service.call(
            "PUT", memory_path(rich), {"memory": "Zoë likes tea; ☕ daily.", "expected_version": 0}
        ).status
        == 200
    )
    summary_only = "sam"
    assert (
        service.call(
            "PUT", memory_path(summary_only), {"memory": "Sam sells candles.", "expected_version": 0}
        ).status
        == 200
    )
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
