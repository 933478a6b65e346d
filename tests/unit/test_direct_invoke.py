"""A direct invoke is the HTTP route it names (docs/api.md "Direct invocation"): each sample payload in
events/ gives the body its HTTP sample gives, on the same state, and every route has such a pair."""

import json
import re
from typing import Any

import pytest

from hippocampus.api import (
    direct,
    openapi,
    read_routes,
    recall_routes,
    write_routes,
)
from hippocampus.api.resolver import build_resolver
from hippocampus.contracts import routes
from tests.support.fakes import Ports
from tests.support.lambda_harness import EVENTS, Context, api_event

# Each direct sample and the HTTP sample of the same route.
PAIRS = {
    "invoke_get_health.json": "api_get_health.json",
    "invoke_get_openapi.json": "api_get_openapi.json",
    "invoke_get_memory.json": "api_get_memory.json",
    "invoke_get_history.json": "api_get_history.json",
    "invoke_export_memory.json": "api_get_export.json",
    "invoke_get_job.json": "api_get_job.json",
    "invoke_list_facts.json": "api_get_facts.json",
    "invoke_list_episodes.json": "api_get_episodes.json",
    "invoke_list_records.json": "api_get_records.json",
    "invoke_list_jobs.json": "api_get_jobs.json",
    "invoke_get_deletion.json": "api_get_deletion.json",
    "invoke_list_users.json": "api_get_users.json",
    "invoke_get_usage.json": "api_get_usage.json",
    "invoke_delete_record.json": "api_delete_record.json",
    "invoke_forget_episode.json": "api_delete_episode.json",
    "invoke_ingest.json": "api_post_memory.json",
    "invoke_put_memory.json": "api_put_memory.json",
    "invoke_delete_memory.json": "api_delete_memory.json",
    "invoke_delete_fact.json": "api_delete_fact.json",
    "invoke_query_memory.json": "api_post_query.json",
    "invoke_get_context.json": "api_post_context.json",
    # An agent's scope of the user (docs/api.md "Agent scopes").
    "invoke_get_agent_memory.json": "api_agent_get_memory.json",
    "invoke_get_agent_history.json": "api_agent_get_history.json",
    "invoke_export_agent_memory.json": "api_agent_get_export.json",
    "invoke_list_agent_facts.json": "api_agent_get_facts.json",
    "invoke_list_agent_episodes.json": "api_agent_get_episodes.json",
    "invoke_list_agent_records.json": "api_agent_get_records.json",
    "invoke_list_agent_jobs.json": "api_agent_get_jobs.json",
    "invoke_get_agent_job.json": "api_agent_get_job.json",
    "invoke_get_agent_deletion.json": "api_agent_get_deletion.json",
    "invoke_delete_agent_record.json": "api_agent_delete_record.json",
    "invoke_forget_agent_episode.json": "api_agent_delete_episode.json",
    "invoke_ingest_agent_memory.json": "api_agent_post_memory.json",
    "invoke_put_agent_memory.json": "api_agent_put_memory.json",
    "invoke_delete_agent_memory.json": "api_agent_delete_memory.json",
    "invoke_delete_agent_fact.json": "api_agent_delete_fact.json",
    "invoke_query_agent_memory.json": "api_agent_post_query.json",
    "invoke_get_agent_context.json": "api_agent_post_context.json",
}
# Times, and the ids of jobs done at once (random: two runs never share them).
_VARYING = re.compile(r".*_at$|job_ids?$|receipt_id$")


def load(name: str) -> Any:
    return json.loads((EVENTS / name).read_text())


def seeded_functions() -> dict[str, Any]:
    """The three API functions on fakes holding the sample user: a fact and a condensed summary."""
    functions = Ports().api_functions()
    samples = (
        "api_post_memory.json",
        "api_put_memory.json",
        "api_agent_post_memory.json",
        "api_agent_put_memory.json",
    )
    for sample in samples:
        assert functions["ingest"](load(sample), Context())["statusCode"] < 300
    return functions


def comparable(value: Any) -> Any:
    """The body with what differs between two runs blanked."""
    if isinstance(value, dict):
        return {key: "…" if _VARYING.match(key) else comparable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [comparable(item) for item in value]
    return value


def function_of(method: str, path: str) -> str:
    route = routes.match(method, path)
    assert route is not None
    return route.function


def http_body(functions: dict[str, Any], event: dict[str, Any], context: Context) -> Any:
    response = functions[function_of(event["httpMethod"], event["path"])](
        {**event, "requestContext": {"requestId": context.aws_request_id}}, context
    )
    if response.get("body"):
        return json.loads(response["body"])
    # What a 204 says in its headers: the deletion receipt of a DELETE …/memory (docs/api.md).
    receipt = (response.get("multiValueHeaders") or {}).get("Deletion-Receipt")
    return {"receipt_id": receipt[0]} if receipt else {}


def test_every_route_has_a_direct_sample_and_an_http_sample() -> None:
    app = build_resolver()
    for router in (
        read_routes.router,
        openapi.router,
        write_routes.router,
        recall_routes.router,
    ):
        app.include_router(router)
    assert {load(sample)["action"] for sample in PAIRS} == set(direct.actions(app))
    http_routes = {routes.match(load(s)["httpMethod"], load(s)["path"]) for s in PAIRS.values()}
    assert http_routes == set(routes.ROUTES) | {routes.match("GET", routes.OPENAPI_PATH)}


@pytest.mark.parametrize(("invoke_sample", "api_sample"), PAIRS.items())
def test_a_direct_sample_gives_the_body_of_its_route(invoke_sample: str, api_sample: str) -> None:
    payload, event = load(invoke_sample), load(api_sample)
    function = function_of(event["httpMethod"], event["path"])
    context = Context()
    direct_body = seeded_functions()[function](payload, context)
    assert comparable(direct_body) == comparable(http_body(seeded_functions(), event, context))


@pytest.mark.parametrize(
    ("payload", "method", "path", "query", "headers", "body"),
    [
        (  # an error: the same envelope both ways
            {"action": "get_history", "tenant_id": "acme", "user_id": "alice", "limit": 101},
            "GET",
            routes.HISTORY_PATH,
            {"limit": "101"},
            {},
            None,
        ),
        (  # a body at the top level of the payload, a header by its snake_case name
            {
                "action": "put_memory",
                "tenant_id": "acme",
                "user_id": "alice",
                "memory": "m",
                "if_match": '"1"',
            },
            "PUT",
            routes.MEMORY_PATH,
            {},
            {"If-Match": '"1"'},
            {"memory": "m"},
        ),
        (
            {"action": "get_context", "tenant_id": "acme", "user_id": "alice"},
            "POST",
            routes.CONTEXT_PATH,
            {},
            {},
            {},
        ),
    ],
)
def test_payload_fields_are_the_routes_parameters_and_body(
    payload: dict[str, Any], method: str, path: str, query: dict[str, str], headers: dict[str, str], body: Any
) -> None:
    function = function_of(method, path.format(tenant_id="acme", user_id="alice"))
    event = api_event(method, path.format(tenant_id="acme", user_id="alice"), body, headers, query)
    context = Context()
    answer = seeded_functions()[function](payload, context)
    assert comparable(answer) == comparable(http_body(seeded_functions(), event, context))
