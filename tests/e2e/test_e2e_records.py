"""Records over HTTP on the local stack, the LLM answering through the OpenAI SDK with structured
outputs (docs/api.md "Records", "Forget one episode"): a move recorded as the end of the old
address, `as_of` answering what was true then, and forgetting the turn that said the move bringing
the old address back and rebuilding the summary without it."""

from typing import Any

import pytest
from e2e_support import Api, structured_reply

pytestmark = pytest.mark.e2e


def records(api: Api, tenant: str, user: str, **params: str) -> list[str]:
    response = api.request("GET", api.memory_path(tenant, user) + "/records", params=params)
    assert response.status_code == 200, response.text
    return [record["text"] for record in response.json()["items"]]


def test_a_move_is_kept_over_time_and_forgetting_it_brings_the_old_address_back(
    llm: Any, api: Api, tenant: str, user: str
) -> None:
    llm.set_reply(structured_reply)
    first = {
        "id": "t1",
        "text": "I live in Paris.",
        "occurred_at": "2023-05-08T10:00:00Z",
        "user_name": "Ana",
    }
    api.wait_completed(tenant, api.ingest(tenant, user, [first]))
    second = {
        "id": "t2",
        "text": "I moved to Berlin.",
        "occurred_at": "2024-03-01T10:00:00Z",
        "user_name": "Ana",
    }
    api.wait_completed(tenant, api.ingest(tenant, user, [second]))

    assert records(api, tenant, user) == ["Ana lives in Berlin."]
    assert records(api, tenant, user, as_of="2023-12-31T00:00:00+01:00") == ["Ana lives in Paris."]
    assert records(api, tenant, user, include_invalidated="true") == [
        "Ana lives in Berlin.",
        "Ana lives in Paris.",
    ]
    assert api.memory(tenant, user)["memory"] == "Ana lives in Berlin."

    forgotten = api.request("DELETE", api.memory_path(tenant, user) + "/episodes/t2")
    assert forgotten.status_code == 202, forgotten.text
    api.wait_completed(tenant, forgotten.json()["jobs"])
    assert records(api, tenant, user, include_invalidated="true") == ["Ana lives in Paris."]
    assert api.memory(tenant, user)["memory"] == "Ana lives in Paris."
    episodes = api.request("GET", api.memory_path(tenant, user) + "/episodes").json()["episodes"]
    assert [episode["id"] for episode in episodes] == ["t1"]
