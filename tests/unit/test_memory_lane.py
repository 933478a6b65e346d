"""Which requests get_memory's fast lane answers itself (docs/architecture.md "The memory read's
fast lane"): the plain memory read only; anything the route would refuse, or read otherwise, is the
resolver's. tests/integration/test_memory_lane_moto.py holds the lane's answers to the route's."""

from typing import Any

import pytest

from hippocampus.api.memory_lane import plain_read
from tests.support.lambda_harness import api_event

MEMORY = "/v1/tenants/acme/users/alice/memory"


def test_a_plain_memory_read_is_the_lanes_with_its_decoded_ids_and_condition() -> None:
    request = plain_read(api_event("GET", "/v1/tenants/acme/users/alice%40example.com/memory"))
    assert request is not None and (request.tenant_id, request.user_id) == ("acme", "alice@example.com")
    assert request.if_none_match is None
    conditional = plain_read(api_event("GET", MEMORY, headers={"if-none-match": 'W/"3"'}))
    assert conditional is not None and conditional.if_none_match == 'W/"3"'
    # As Powertools reads headers: the multi-value map when the event has one.
    both_maps = with_fields(headers={"If-None-Match": '"1"'}, multiValueHeaders={"If-None-Match": ['"2"']})
    assert (plain := plain_read(both_maps)) is not None and plain.if_none_match == '"2"'


def with_fields(**fields: Any) -> dict[str, Any]:
    return {**api_event("GET", MEMORY), **fields}


@pytest.mark.parametrize(
    "event",
    [
        api_event("GET", MEMORY, query={"fields": "memory"}),
        api_event("GET", MEMORY, raw_body="{}"),
        api_event("POST", MEMORY, body={"items": []}),
        api_event("GET", "/v1/tenants/acme/users/al%2Fice/memory"),  # an id the route refuses
        api_event("GET", "/v1/tenants/acme/users/alice/memory/history"),
        api_event("GET", "/v1/tenants/acme/users/alice/agents/helper/memory"),
        {"action": "get_memory", "tenant_id": "acme", "user_id": "alice"},  # a direct invoke
        ["not", "an", "event"],
        with_fields(requestContext=None),
        with_fields(body=0),
        with_fields(isBase64Encoded="true"),
        with_fields(queryStringParameters=""),
        with_fields(headers={"X-Num": 1}),
        with_fields(multiValueHeaders={"If-None-Match": ['"1"', '"2"']}),
        with_fields(headers={"If-None-Match": 3}, multiValueHeaders=None),
        with_fields(headers=["If-None-Match"]),
    ],
)
def test_anything_else_is_left_to_the_resolver(event: Any) -> None:
    assert plain_read(event) is None
