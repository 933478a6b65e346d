"""`records` and `delete_record` (client/README.md "Methods"; docs/api.md "Records"): the request
each sends, the typed records it reads, every page within the read budget, a bad id or time refused
before any request, and None (False) on error unless strict."""

import asyncio
import logging
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx2
import pytest
from client_test_servers import Recorder, envelope, mocked, mocked_async

from hippocampus_client import InvalidInputError, MemoryRecord, NotFoundError

RECORDS = "/v1/tenants/acme/users/alice/memory/records"
BERLIN = {
    "id": "rec_018c2b3a4d5e6f708192a3b4",
    "text": "Caroline moved to Berlin.",
    "category": "location",
    "valid_from": "2023-05-08T00:00:00Z",
    "valid_to": None,
    "recorded_at": "2026-12-05T11:02:17.210Z",
    "invalidated_at": None,
    "superseded_by": None,
    "episode_ids": ["D1:3"],
    "job_id": "job-4f1c",
    "agent_id": None,
}
PARIS = BERLIN | {
    "id": "rec_0007",
    "text": "Caroline lived in Paris.",
    "valid_from": "2019-01-01T00:00:00Z",
    "valid_to": "2023-05-08T00:00:00Z",
    "invalidated_at": "2026-12-05T11:02:17.210Z",
    "superseded_by": BERLIN["id"],
}


def page(*records: dict[str, Any], cursor: str | None = None) -> httpx2.Response:
    return httpx2.Response(200, json={"items": list(records), "next_cursor": cursor})


def test_records_reads_the_current_records_as_typed_models() -> None:
    recorder = Recorder(page(BERLIN))
    found = mocked(recorder).records("alice")
    assert [(r.method, r.url.path) for r in recorder.requests] == [("GET", RECORDS)]
    assert recorder.queries() == [{"limit": "100"}]  # current records only: no filter sent
    assert found is not None and len(found) == 1
    record = found[0]
    assert isinstance(record, MemoryRecord)
    assert (record.id, record.text, record.category) == (
        BERLIN["id"],
        "Caroline moved to Berlin.",
        "location",
    )
    assert (record.valid_from, record.valid_to, record.superseded_by) == ("2023-05-08T00:00:00Z", None, None)
    assert record.episode_ids == ["D1:3"]


def test_as_of_known_at_and_include_invalidated_are_sent_as_the_api_takes_them() -> None:
    recorder = Recorder(page(PARIS))
    memory = mocked(recorder, strict=True)
    memory.records("alice", as_of=datetime(2022, 6, 1, tzinfo=UTC))
    memory.records("alice", as_of="2022-06-01T12:00:00+02:00", known_at="2026-12-01T00:00:00Z")
    memory.records("alice", include_invalidated=True, limit=5)
    paris = datetime(2022, 6, 1, 9, 30, tzinfo=timezone(timedelta(hours=2)))
    memory.records("alice", known_at=paris)
    assert recorder.queries() == [
        {"limit": "100", "as_of": "2022-06-01T00:00:00+00:00"},
        {"limit": "100", "as_of": "2022-06-01T12:00:00+02:00", "known_at": "2026-12-01T00:00:00Z"},
        {"limit": "5", "include_invalidated": "true"},
        {"limit": "100", "known_at": "2022-06-01T09:30:00+02:00"},
    ]
    # `+` is encoded: a server decoding the query must not read it as a space.
    assert "as_of=2022-06-01T12%3A00%3A00%2B02%3A00" in str(recorder.requests[1].url)


def test_records_follow_every_page_and_stop_at_the_limit() -> None:
    recorder = Recorder(
        page(BERLIN, PARIS, cursor="c1"), page(BERLIN | {"id": "rec_3"}, cursor="c2"), page(PARIS)
    )
    found = mocked(recorder).records("alice", include_invalidated=True)
    assert [r.id for r in found or []] == [BERLIN["id"], "rec_0007", "rec_3", "rec_0007"]
    assert [q.get("cursor") for q in recorder.queries()] == [None, "c1", "c2"]
    assert all(q["include_invalidated"] == "true" for q in recorder.queries())  # on every page

    limited = Recorder(page(BERLIN, PARIS, cursor="c1"), page(BERLIN | {"id": "rec_3"}, cursor="c2"))
    found = mocked(limited).records("alice", limit=3)
    assert [r.id for r in found or []] == [BERLIN["id"], "rec_0007", "rec_3"]
    assert limited.queries() == [{"limit": "3"}, {"limit": "1", "cursor": "c1"}]  # not the third page


@pytest.mark.parametrize(
    "bad",
    [
        "2022-06-01",  # a date alone
        "2022-06-01T00:00:00",  # no offset
        "2022-02-30T00:00:00Z",  # no such day
        "yesterday",
        datetime(2022, 6, 1),  # naive
        1654041600,
    ],
    ids=repr,
)
def test_a_time_the_api_would_refuse_is_refused_before_any_request(
    bad: Any, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder(page(BERLIN))
    for field in ("as_of", "known_at"):
        with pytest.raises(InvalidInputError) as raised:
            mocked(recorder, strict=True).records("alice", **{field: bad})
        assert raised.value.details[0]["field"] == field
        with caplog.at_level(logging.WARNING, logger="hippocampus_client"):
            assert mocked(recorder).records("alice", **{field: bad}) is None
        assert f"field={field}" in caplog.text
    assert recorder.requests == []


@pytest.mark.parametrize("hostile", ["..", "a/b", "", "é", "x" * 129, "alice\n"], ids=repr)
def test_a_user_or_record_id_the_api_refuses_makes_no_request(hostile: str) -> None:
    recorder = Recorder(page(BERLIN))
    memory = mocked(recorder)
    assert memory.records(hostile) is None
    assert memory.delete_record(hostile, "rec_1") is False
    assert memory.delete_record("alice", hostile) is False
    with pytest.raises(InvalidInputError) as raised:
        mocked(recorder, strict=True).delete_record("alice", hostile)
    assert raised.value.details[0]["field"] == "record_id"
    assert recorder.requests == []


def test_an_error_or_an_answer_of_another_shape_is_none_and_strict_raises() -> None:
    missing = Recorder(httpx2.Response(404, json=envelope("not_found", 404)))
    assert mocked(missing).records("alice") is None
    with pytest.raises(NotFoundError):
        mocked(missing, strict=True).records("alice")
    for body in ({"records": [BERLIN]}, {"items": [{"text": "no id"}]}, {"items": "none"}):
        assert mocked(Recorder(httpx2.Response(200, json=body))).records("alice") is None


def test_delete_record_sends_its_route_and_is_false_on_an_unknown_record() -> None:
    recorder = Recorder(httpx2.Response(204), httpx2.Response(404, json=envelope("not_found", 404)))
    memory = mocked(recorder)
    assert memory.delete_record("alice", "rec_018c2b3a4d5e6f708192a3b4") is True
    assert memory.delete_record("alice", "rec_gone") is False
    assert [(r.method, r.url.path) for r in recorder.requests] == [
        ("DELETE", RECORDS + "/rec_018c2b3a4d5e6f708192a3b4"),
        ("DELETE", RECORDS + "/rec_gone"),
    ]


def test_the_async_client_lists_and_deletes_the_same_way() -> None:
    recorder = Recorder(page(PARIS, cursor="c1"), page(BERLIN), httpx2.Response(204))
    memory = mocked_async(recorder)

    async def scenario() -> tuple[Any, bool, Any]:
        found = await memory.records("alice", as_of="2022-06-01T00:00:00Z")
        deleted = await memory.delete_record("alice", "rec_0007")
        refused = await memory.records("alice", known_at="2022-06-01")
        return found, deleted, refused

    found, deleted, refused = asyncio.run(scenario())
    assert [r.id for r in found] == ["rec_0007", BERLIN["id"]]
    assert (deleted, refused) == (True, None)
    assert recorder.queries()[:2] == [
        {"limit": "100", "as_of": "2022-06-01T00:00:00Z"},
        {"limit": "100", "as_of": "2022-06-01T00:00:00Z", "cursor": "c1"},
    ]
    assert len(recorder.requests) == 3  # the refused known_at sent nothing
