"""Every sample in events/ drives its function and gets the answer the contract promises."""

import json

import pytest

from tests.support.lambda_harness import EVENTS, Context

EXPECTED_STATUS = {
    "api_get_health.json": ("get_memory", 200),
    "api_get_openapi.json": ("get_memory", 200),
    "api_get_memory.json": ("get_memory", 200),
    "api_get_history.json": ("get_memory", 200),
    "api_get_export.json": ("get_memory", 200),
    "api_get_job.json": ("get_memory", 404),  # the sample's job id is unknown
    "api_post_memory.json": ("ingest", 202),
    "api_put_memory.json": ("ingest", 200),
    "api_delete_memory.json": ("ingest", 204),
    "api_delete_fact.json": ("ingest", 204),
    "api_post_query.json": ("recall", 200),
    "api_post_context.json": ("recall", 200),
    "api_get_facts.json": ("get_memory", 200),
    "api_get_episodes.json": ("get_memory", 200),
    "api_get_records.json": ("get_memory", 200),
    "api_get_jobs.json": ("get_memory", 200),
    "api_get_deletion.json": ("get_memory", 404),  # no such receipt of the sample user
    "api_get_users.json": ("get_memory", 200),
    "api_get_usage.json": ("get_memory", 200),
    "api_delete_record.json": ("ingest", 404),  # the sample user has no such record yet
    "api_delete_episode.json": ("ingest", 404),  # the sample turn is queued, not an episode yet
    # The agent `research` of the sample user, which has written nothing yet.
    "api_agent_get_memory.json": ("get_memory", 200),
    "api_agent_get_history.json": ("get_memory", 200),
    "api_agent_get_export.json": ("get_memory", 200),
    "api_agent_post_memory.json": ("ingest", 202),
    "api_agent_put_memory.json": ("ingest", 200),
    "api_agent_delete_memory.json": ("ingest", 204),
    "api_agent_delete_fact.json": ("ingest", 404),  # the fact is the user's, not the agent's
    "api_agent_post_query.json": ("recall", 200),
    "api_agent_post_context.json": ("recall", 200),
    "api_agent_get_facts.json": ("get_memory", 200),
    "api_agent_get_episodes.json": ("get_memory", 200),
    "api_agent_get_records.json": ("get_memory", 200),
    "api_agent_get_jobs.json": ("get_memory", 200),
    "api_agent_get_job.json": ("get_memory", 404),  # the sample's job id is unknown
    "api_agent_get_deletion.json": ("get_memory", 404),
    "api_agent_delete_record.json": ("ingest", 404),
    "api_agent_delete_episode.json": ("ingest", 404),
}

EXPECTED_DIRECT = {
    "invoke_get_health.json": ("get_memory", lambda body: body == {"status": "ok"}),
    "invoke_get_openapi.json": ("get_memory", lambda body: body["openapi"].startswith("3.1")),
    "invoke_get_memory.json": ("get_memory", lambda body: body["user_id"] == "alice" and "version" in body),
    "invoke_get_history.json": ("get_memory", lambda body: "versions" in body),
    "invoke_export_memory.json": (
        "get_memory",
        lambda body: (
            [fact["id"] for fact in body["memory"]["facts"]] == ["pref_dark_mode"]
            and [item["id"] for item in body["items"]] == ["turn-42"]
            and body["next_cursor"] is None
        ),
    ),
    "invoke_get_job.json": ("get_memory", lambda body: body["error"]["status"] == 404),
    "invoke_ingest.json": (
        "ingest",
        lambda body: [j["item_id"] for j in body["jobs"]] == ["turn-42", "pref_dark_mode"],
    ),
    "invoke_put_memory.json": (
        "ingest",
        lambda body: body["version"] == 1 and body["memory"].startswith("Alice runs a Shopify store"),
    ),
    "invoke_delete_memory.json": ("ingest", lambda body: body["receipt_id"].startswith("del_")),
    "invoke_delete_fact.json": ("ingest", lambda body: body["receipt_id"].startswith("del_")),
    # The sample user's fact `pref_dark_mode` is searchable at once (lexically, before its vector).
    "invoke_query_memory.json": ("recall", lambda body: body["results"][0]["id"] == "pref_dark_mode"),
    "invoke_get_context.json": (
        "recall",
        lambda body: (
            body["sources"] == [{"type": "fact", "id": "pref_dark_mode"}] and body["word_count"] <= 120
        ),
    ),
    "invoke_list_facts.json": (
        "get_memory",
        lambda body: [f["id"] for f in body["facts"]] == ["pref_dark_mode"],
    ),
    "invoke_list_episodes.json": ("get_memory", lambda body: body == {"episodes": [], "next_cursor": None}),
    # The sample turn is still queued: nothing recorded yet.
    "invoke_list_records.json": ("get_memory", lambda body: body == {"items": [], "next_cursor": None}),
    "invoke_delete_record.json": ("ingest", lambda body: body["error"]["status"] == 404),
    "invoke_get_deletion.json": ("get_memory", lambda body: body["error"]["status"] == 404),
    "invoke_list_jobs.json": (
        "get_memory",
        lambda body: {job["item_id"] for job in body["items"]} == {"turn-42", "pref_dark_mode"},
    ),
    # The sample user's fact lists it among the tenant's users.
    "invoke_list_users.json": ("get_memory", lambda body: body["items"] == [{"user_id": "alice"}]),
    "invoke_forget_episode.json": ("ingest", lambda body: body["error"]["status"] == 404),
    # No budget configured: the day's counts, no limit.
    "invoke_get_usage.json": (
        "get_memory",
        lambda body: body["tenant_id"] == "acme" and body["budget"] is None and body["deferred_jobs"] == 0,
    ),
    # The agent `research` of the sample user: the shared memory is the user's, its own is empty.
    "invoke_get_agent_memory.json": (
        "get_memory",
        lambda body: (
            body["agent_id"] == "research"
            and [fact["id"] for fact in body["scopes"]["shared"]["facts"]] == ["pref_dark_mode"]
            and body["scopes"]["agent"]["facts"] == []
        ),
    ),
    "invoke_get_agent_history.json": ("get_memory", lambda body: body == {"versions": []}),
    "invoke_export_agent_memory.json": (
        "get_memory",
        lambda body: (body["user_id"], body["agent_id"], body["items"]) == ("alice", "research", []),
    ),
    "invoke_ingest_agent_memory.json": (
        "ingest",
        lambda body: (
            [(j["item_id"], j.get("agent_id")) for j in body["jobs"]]
            == [("turn-42", "research"), ("pref_dark_mode", None)]
        ),
    ),
    "invoke_put_agent_memory.json": (
        "ingest",
        lambda body: (body["version"], body["agent_id"]) == (1, "research"),
    ),
    "invoke_delete_agent_memory.json": ("ingest", lambda body: body["receipt_id"].startswith("del_")),
    "invoke_delete_agent_fact.json": ("ingest", lambda body: body["error"]["status"] == 404),
    "invoke_query_agent_memory.json": (
        "recall",
        lambda body: [(r["id"], r["scope"]) for r in body["results"]] == [("pref_dark_mode", "shared")],
    ),
    "invoke_get_agent_context.json": (
        "recall",
        lambda body: body["sources"] == [{"type": "fact", "id": "pref_dark_mode", "scope": "shared"}],
    ),
    "invoke_list_agent_facts.json": ("get_memory", lambda body: body == {"facts": [], "next_cursor": None}),
    "invoke_list_agent_episodes.json": (
        "get_memory",
        lambda body: body == {"episodes": [], "next_cursor": None},
    ),
    "invoke_list_agent_records.json": ("get_memory", lambda body: body == {"items": [], "next_cursor": None}),
    "invoke_list_agent_jobs.json": ("get_memory", lambda body: body == {"items": [], "next_cursor": None}),
    "invoke_get_agent_job.json": ("get_memory", lambda body: body["error"]["status"] == 404),
    "invoke_delete_agent_record.json": ("ingest", lambda body: body["error"]["status"] == 404),
    "invoke_get_agent_deletion.json": ("get_memory", lambda body: body["error"]["status"] == 404),
    "invoke_forget_agent_episode.json": ("ingest", lambda body: body["error"]["status"] == 404),
    # Nothing was dead-lettered: nothing to move (docs/operations.md "The dead-letter queue").
    "invoke_redrive_dead_letters.json": (
        "condenser",
        lambda body: body == {"moved": 0, "jobs_requeued": 0, "remaining": 0},
    ),
}


def load(name):
    return json.loads((EVENTS / name).read_text())


def test_every_sample_event_is_covered():
    samples = {path.name for path in EVENTS.glob("*.json")}
    assert samples == set(EXPECTED_STATUS) | set(EXPECTED_DIRECT) | {"sqs_condenser_batch.json"}


@pytest.fixture
def seeded(service):
    """The user after the sample ingest: a fact `pref_dark_mode` and one queued turn."""
    response = service.invoke("ingest", load("api_post_memory.json"))
    assert response["statusCode"] == 202
    return service


@pytest.mark.parametrize("name", sorted(EXPECTED_STATUS))
def test_api_sample(seeded, name):
    function, status = EXPECTED_STATUS[name]
    response = seeded.invoke(function, load(name))
    assert response["statusCode"] == status, response["body"]
    if status >= 400:
        assert json.loads(response["body"])["error"]["status"] == status


@pytest.mark.parametrize("name", sorted(EXPECTED_DIRECT))
def test_direct_invocation_sample(seeded, name):
    function, check = EXPECTED_DIRECT[name]
    assert check(seeded.invoke(function, load(name)))


def test_sqs_sample(service):
    result = service.invoke("condenser", load("sqs_condenser_batch.json"))
    assert result == {"batchItemFailures": []}  # an unknown job is acknowledged, never retried


def test_sample_ingest_then_condense_end_to_end(seeded):
    assert seeded.drain() == 2  # the turn, and the request for the fact's vector
    memory = seeded.invoke("get_memory", load("invoke_get_memory.json"))
    assert memory["version"] == 1 and "candles" in memory["memory"]
    assert [fact["id"] for fact in memory["facts"]] == ["pref_dark_mode"]


def test_direct_invocation_errors_use_the_envelope(service):
    wrong_function = service.invoke(
        "get_memory", {"action": "ingest", "tenant_id": "acme", "user_id": "a", "items": []}
    )
    assert (
        wrong_function["error"]["status"] == 422
        and wrong_function["error"]["details"][0]["field"] == "action"
    )
    missing_user = service.invoke("get_memory", {"action": "get_memory", "tenant_id": "acme"})
    assert (
        missing_user["error"]["status"] == 422 and missing_user["error"]["details"][0]["field"] == "user_id"
    )
    bad_item = service.invoke(
        "ingest", {"action": "ingest", "tenant_id": "acme", "user_id": "a", "items": [{"text": ""}]}
    )
    assert bad_item["error"]["status"] == 422 and bad_item["error"]["details"][0]["field"].startswith(
        "items[0].text"
    )
    unknown_action = service.invoke("ingest", {"action": "explode", "tenant_id": "acme"})
    assert (
        unknown_action["error"]["status"] == 422
        and unknown_action["error"]["details"][0]["field"] == "action"
    )
    stale = service.invoke(
        "ingest",
        {"action": "put_memory", "tenant_id": "acme", "user_id": "a", "memory": "x", "expected_version": 4},
    )
    assert stale["error"]["code"] == "version_conflict"


def test_handlers_accept_the_lambda_context(service):
    # Powertools' logger reads these attributes; a direct invoke passes the real context.
    assert service.get_memory.lambda_handler(load("invoke_get_memory.json"), Context())["version"] == 0
