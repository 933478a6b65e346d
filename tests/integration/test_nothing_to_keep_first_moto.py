"""A user's first turn with nothing worth keeping (small talk) writes its episode and creates the
memory item with the user's generation, so the next request and condensation go through."""

from typing import Any

MEMORY = "/v1/tenants/acme/users/bob/memory"


def test_small_talk_first_then_a_statement(service: Any) -> None:
    assert service.call("POST", MEMORY, {"items": [{"id": "t1", "text": "Hi!"}]}).status == 202
    assert service.drain() >= 1
    assert service.call("GET", MEMORY).body["memory"] is None
    response = service.call("POST", MEMORY, {"items": [{"id": "t2", "text": "I live in Paris."}]})
    assert response.status == 202, response.body
    assert service.drain() >= 1
    assert "Paris" in service.call("GET", MEMORY).body["memory"]
    episodes = service.call("GET", MEMORY + "/episodes").body["episodes"]
    assert [episode["id"] for episode in episodes] == ["t2", "t1"]
