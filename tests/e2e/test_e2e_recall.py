"""Recall over HTTP on the local stack (or a deployed one): the recall function's query and
context routes after the condenser made the episodes and the vectors (docs/api.md "Recall")."""

from typing import Any

import pytest
from e2e_support import Api, assert_envelope, unique, wait_for

pytestmark = pytest.mark.e2e


def query(api: Api, tenant: str, user: str, text: str, **options: Any) -> dict[str, Any]:
    response = api.request("POST", api.memory_path(tenant, user) + "/query", json={"query": text, **options})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_user_recalls_facts_and_past_turns_and_forgets_them(api: Api, tenant: str, user: str) -> None:
    facts = [
        {"id": "pay", "text": "Pays every supplier through Stripe invoices.", "infer": False},
        {"id": "pet", "text": "Has a golden retriever called Biscuit.", "infer": False},
    ]
    turns = [
        {
            "id": "t1",
            "user_assistant_pairs": [{"user": "We opened a second store in Lyon.", "assistant": "Great!"}],
        },
        {"id": "t2", "text": "Orders ship to Canada now.", "metadata": {"channel": "web"}},
    ]
    api.wait_completed(tenant, api.ingest(tenant, user, facts) + api.ingest(tenant, user, turns))

    def indexed() -> dict[str, Any] | None:  # the condenser gives every document its vector
        body = query(api, tenant, user, "Stripe", alpha=1.0)
        return body if not body["retrieval"]["lexical_only"] else None

    wait_for(indexed, 30, what="the documents' vectors")
    assert query(api, tenant, user, "paying suppliers")["results"][0]["id"] == "pay"
    assert query(api, tenant, user, "stores in Lyon", types=["episode"])["results"][0]["id"] == "t1"
    filtered = query(api, tenant, user, "Canada Lyon", metadata_filters={"channel": "web"})["results"]
    assert [result["id"] for result in filtered] == ["t2"]
    assert query(api, tenant, unique("other"), "Stripe")["results"] == []  # nothing crosses users

    context = api.request(
        "POST",
        api.memory_path(tenant, user) + "/context",
        json={"query": "how are suppliers paid?", "max_words": 25},
    )
    assert context.status_code == 200 and context.json()["word_count"] <= 25
    assert {"type": "fact", "id": "pay"} in context.json()["sources"]

    bad = api.request("POST", api.memory_path(tenant, user) + "/query", json={"query": "x", "alpha": 2})
    assert assert_envelope(bad, 422, "validation_error")["details"][0]["field"] == "alpha"

    assert api.request("DELETE", api.memory_path(tenant, user)).status_code == 204
    assert query(api, tenant, user, "Stripe Biscuit Lyon Canada")["results"] == []
