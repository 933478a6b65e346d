"""Dated items through the real handlers and adapters on moto (docs/api.md "Ingest", `occurred_at`):
the table orders episodes by when they happened, so a backfill of older turns sent after newer ones
is listed, paged and exported in its own order; jobs and episodes keep the date."""

from typing import Any

T, U = "acme", "alice"
MEMORY = f"/v1/tenants/{T}/users/{U}/memory"


def ingest(service: Any, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    response = service.call("POST", MEMORY, {"items": items})
    assert response.status == 202, response.body
    jobs: list[dict[str, Any]] = response.body["jobs"]
    return jobs


def test_a_backfill_sent_after_newer_turns_is_listed_by_when_it_happened(service: Any) -> None:
    ingest(service, [{"id": "new", "text": "I moved to Berlin.", "occurred_at": "2024-03-01T10:00:00Z"}])
    assert service.drain() >= 1
    jobs = ingest(
        service,
        [
            {"id": "old1", "text": "I live in Paris.", "occurred_at": "2023-01-10T10:00:00Z"},
            # One instant, written in another offset: ordered as the same instant in UTC.
            {"id": "old2", "text": "I work at a bakery.", "occurred_at": "2023-01-11T11:00:00+01:00"},
            {"id": "now", "text": "I bought a bike."},  # undated: when it was accepted, the newest
        ],
    )
    assert service.drain() >= 1

    seen: list[str] = []
    cursor = None
    while True:
        query = {"limit": "1"} | ({"cursor": cursor} if cursor else {})
        response = service.call("GET", MEMORY + "/episodes", query=query)
        assert response.status == 200, response.body
        seen += [episode["id"] for episode in response.body["episodes"]]
        cursor = response.body["next_cursor"]
        if cursor is None:
            break
    assert seen == ["now", "new", "old2", "old1"]

    export = service.call("GET", MEMORY + "/export").body
    assert [episode["id"] for episode in export["episodes"]] == ["old1", "old2", "new", "now"]
    occurred = {episode["id"]: episode["occurred_at"] for episode in export["episodes"]}
    assert occurred["old2"] == "2023-01-11T10:00:00Z"
    job = service.call("GET", f"/v1/tenants/{T}/jobs/{jobs[0]['job_id']}").body
    assert job["status"] == "completed" and job["occurred_at"] == "2023-01-10T10:00:00Z"
