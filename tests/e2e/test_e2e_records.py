"""Records over HTTP on the local stack, the LLM answering through the OpenAI SDK with structured
outputs (docs/api.md "Records", "Forget one episode"): a move recorded as the end of the old
address, `as_of` answering what was true then, and forgetting the turn that said the move bringing
the old address back and rebuilding the summary without it."""

import json
import re
from typing import Any

import pytest
from e2e_support import Api

pytestmark = pytest.mark.e2e

_PARIS = re.compile(r"(rec_[0-9a-f]+) \| location \| [^|]+\| \S+ lives in Paris\.")


def structured_reply(body: dict[str, Any]) -> str:
    """What a model following the built-in prompt answers: asked with a JSON schema, the summary and
    the record operations; the move invalidates the Paris record the prompt lists."""
    assert body["response_format"]["type"] == "json_schema", "the condenser asks for structured outputs"
    prompt = "\n".join(str(m.get("content", "")) for m in body["messages"] if m.get("role") == "user")
    keys = ("op", "record_id", "text", "category", "valid_from", "source_items")
    name = re.search(r"<<<USER_NAME>>>\n(\w+)", prompt)
    who = name.group(1) if name else "The user"
    paris = _PARIS.search(prompt)
    if "moved to Berlin" in prompt and paris:
        move = ("invalidate", paris.group(1), f"{who} lives in Berlin.", "location", None, ["t2"])
        answer = {"summary": f"{who} lives in Berlin.", "operations": [dict(zip(keys, move, strict=True))]}
    else:
        add = ("add", None, f"{who} lives in Paris.", "location", None, ["t1"])
        answer = {"summary": f"{who} lives in Paris.", "operations": [dict(zip(keys, add, strict=True))]}
    return json.dumps(answer)


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
