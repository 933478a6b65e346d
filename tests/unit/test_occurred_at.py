"""Dated items (docs/api.md "Ingest", `occurred_at`): validated and defaulted to acceptance, stored on
jobs, episodes and history, shown in the prompt with today's date, and ordering episode lists, the
export and recency — also for a backfill of older turns sent after newer ones."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hippocampus.adapters.llm.offline import OfflineModel
from hippocampus.contracts.ports import LlmResult
from hippocampus.domain.condense.prompt import PromptTemplate, spoken_date
from tests.support.fakes import Ports

MEMORY = "/v1/tenants/acme/users/alice/memory"


@pytest.fixture
def ports() -> Ports:
    return Ports()


class RecordingModel:
    """An LLM that keeps every prompt and answers one sentence."""

    name = "recording"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(
        self, system: str, prompt: str, timeout_s: float | None = None, schema: object = None
    ) -> LlmResult:
        self.prompts.append(prompt)
        return LlmResult("Lives in Berlin.", 10, 3)


def post(ports: Ports, *items: dict[str, Any]) -> tuple[int, Any]:
    status, _, body = ports.call("POST", MEMORY, {"items": list(items)})
    return status, body


def condense(ports: Ports, model: Any = None) -> None:
    """Condense what was queued since the last call."""
    outcome = ports.consolidation(model or OfflineModel()).process_batch(ports.queued())
    ports.queue.messages.clear()
    assert outcome.failures == {}


@pytest.mark.parametrize(
    "value",
    [
        "2023-05-08",  # a date alone
        "2023-05-08T13:56:00",  # no offset: which instant is it?
        "2023-05-08T13:56:00+0200",  # an offset without its colon
        "8 May 2023",
        "2023-13-08T13:56:00Z",  # no 13th month
        1683554160,  # epoch seconds: not coerced
        "",
    ],
)
def test_an_occurred_at_that_is_not_rfc_3339_is_refused_naming_the_field(ports, value):
    status, body = post(ports, {"id": "t1", "text": "I live in Paris."}, {"text": "x", "occurred_at": value})
    assert status == 422
    assert [detail["field"] for detail in body["error"]["details"]] == ["items[1].occurred_at"]
    assert ports.queue.messages == [] and ports.jobs.jobs == {}  # nothing accepted, the valid item neither


def test_an_occurred_at_more_than_five_minutes_ahead_is_refused_and_a_little_ahead_is_not(ports):
    ahead = (datetime.now(UTC) + timedelta(minutes=10)).isoformat()
    status, body = post(ports, {"text": "I live in Paris.", "occurred_at": ahead})
    assert status == 422 and "future" in body["error"]["details"][0]["message"]
    assert ports.queue.messages == []
    near = (datetime.now(UTC) + timedelta(minutes=2)).isoformat()
    assert post(ports, {"text": "I live in Paris.", "occurred_at": near})[0] == 202


def test_a_job_carries_when_its_item_happened_and_an_undated_item_sent_again_is_the_same_job(ports):
    item = {"id": "t1", "text": "I live in Paris."}
    [first] = post(ports, item)[1]["jobs"]
    [again] = post(ports, item)[1]["jobs"]
    assert again["job_id"] == first["job_id"] and len(ports.queue.messages) == 1  # a retry, not a turn
    assert first["occurred_at"] == first["created_at"]  # unsaid: when it was accepted

    [dated] = post(ports, {**item, "occurred_at": "2023-05-08T15:56:00+02:00"})[1]["jobs"]
    assert dated["job_id"] != first["job_id"]  # the same words on another day are another turn
    assert datetime.fromisoformat(dated["occurred_at"]) == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)

    [fact] = post(
        ports, {"id": "f1", "text": "Pays by card.", "infer": False, "occurred_at": "2022-01-02T03:04:05Z"}
    )[1]["jobs"]
    assert fact["status"] == "completed" and fact["occurred_at"] == "2022-01-02T03:04:05Z"
    status, _, job = ports.call("GET", f"/v1/tenants/acme/jobs/{dated['job_id']}")
    assert status == 200 and job["occurred_at"] == dated["occurred_at"]


def test_a_backfill_of_older_turns_after_newer_ones_is_listed_exported_and_ranked_by_when_it_happened(ports):
    assert (
        post(ports, {"id": "new", "text": "I moved to Berlin.", "occurred_at": "2024-03-01T10:00:00Z"})[0]
        == 202
    )
    condense(ports)
    older = [
        {"id": "old1", "text": "I live in Paris.", "occurred_at": "2023-01-10T10:00:00Z"},
        {"id": "old2", "text": "I work at a bakery in Paris.", "occurred_at": "2023-01-11T10:00:00+01:00"},
    ]
    assert post(ports, *older)[0] == 202
    condense(ports)

    status, _, page = ports.call("GET", MEMORY + "/episodes", query={"limit": "2"})
    assert status == 200 and [episode["id"] for episode in page["episodes"]] == ["new", "old2"]
    assert page["episodes"][0]["occurred_at"] == "2024-03-01T10:00:00Z"
    status, _, rest = ports.call(
        "GET", MEMORY + "/episodes", query={"limit": "2", "cursor": page["next_cursor"]}
    )
    assert status == 200 and [episode["id"] for episode in rest["episodes"]] == ["old1"]
    assert rest["next_cursor"] is None

    status, _, export = ports.call("GET", MEMORY + "/export")
    assert status == 200 and [episode["id"] for episode in export["episodes"]] == ["old1", "old2", "new"]
    assert {job["item_id"]: job["occurred_at"] for job in export["jobs"]}["old1"] == "2023-01-10T10:00:00Z"

    query = {"query": "Where does she live, Paris or Berlin?", "types": ["episode"], "recency_bias": 1.0}
    status, _, found = ports.call("POST", MEMORY + "/query", query)
    assert status == 200 and found["results"][0]["id"] == "new"  # the newest by date, not by arrival
    assert found["results"][0]["occurred_at"] == "2024-03-01T10:00:00Z"

    status, _, memory = ports.call("GET", MEMORY)
    assert status == 200 and "Item date" not in memory["memory"]  # the offline model reads past the dates


def test_the_prompt_shows_each_item_with_its_date_oldest_first_and_today(ports):
    before = spoken_date(datetime.now(UTC), with_time=False)
    items = [
        {"id": "b", "text": "I moved to Berlin.", "occurred_at": "2024-03-01T10:00:00Z"},
        {"id": "a", "text": "I live in Paris.", "occurred_at": "2023-05-08T15:56:00+02:00"},
        {"id": "c", "text": "I bought a bike yesterday."},  # undated: when it was accepted
    ]
    assert post(ports, *items)[0] == 202
    model = RecordingModel()
    condense(ports, model)
    after = spoken_date(datetime.now(UTC), with_time=False)

    [prompt] = model.prompts
    assert "Item date: Monday 8 May 2023, 15:56 UTC+02:00\nItem id: a\nI live in Paris." in prompt
    assert "Item date: Friday 1 March 2024, 10:00 UTC\nItem id: b\nI moved to Berlin." in prompt
    assert prompt.index("I live in Paris.") < prompt.index("I moved to Berlin.") < prompt.index("a bike")
    assert f"Today's date: {before}" in prompt or f"Today's date: {after}" in prompt
    assert "absolute dates" in prompt  # the built-in prompt asks for "yesterday" as a date

    status, _, history = ports.call("GET", MEMORY + "/history")
    newest = datetime.fromisoformat(history["versions"][0]["occurred_at"])
    assert status == 200 and abs(newest - datetime.now(UTC)) < timedelta(minutes=1)  # item c's acceptance


def test_a_custom_prompt_may_place_todays_date():
    template = PromptTemplate("On {{TODAY}}: {{NEW_CONTENT}}")
    rendered = template.render(
        old_memory=None, new_content="x", max_words=5, today=datetime(2026, 12, 2, tzinfo=UTC)
    )
    assert rendered.startswith("On Wednesday 2 December 2026: ")
