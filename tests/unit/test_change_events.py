"""Which committed changes are events and what they say (docs/architecture.md "Events"): ids,
versions, counts and times, never memory or record text unless content is asked for."""

import pytest

from hippocampus.contracts.events import StoredChange
from hippocampus.contracts.receipts import DeletionReceipt, ErasedCounts
from hippocampus.domain.events.changes import event_of

T, U = "acme", "alice"
MEMORY_V1 = {
    "memory": "Alice sells candles.",
    "version": 1,
    "generation": 0,
    "word_count": 3,
    "job_ids": ["job-1"],
    "updated_at": "2026-12-05T10:00:00Z",
}
RECORD = {
    "id": "rec_1",
    "text": "Lives in Paris.",
    "category": "fact",
    "valid_from": "2023-05-01T00:00:00Z",
    "recorded_at": "2026-12-05T10:00:00Z",
    "job_id": "job-1",
    "generation": 0,
}


def change(kind, old, new, event_id="e-1"):
    return StoredChange(event_id, kind, T, U, old, new)


def test_a_new_summary_version_is_memory_updated_without_its_text():
    event = event_of(change("memory", None, MEMORY_V1))
    assert event is not None and event.detail_type == "Memory Updated"
    detail = event.detail.model_dump(mode="json")
    assert detail == {
        "event_id": "e-1",
        "tenant_id": T,
        "user_id": U,
        "version": 1,
        "previous_version": 0,
        "generation": 0,
        "word_count": 3,
        "job_ids": ["job-1"],
        "updated_at": "2026-12-05T10:00:00Z",
    }
    assert "Alice" not in event.detail.model_dump_json()


def test_the_text_comes_only_when_asked_for_and_never_for_a_deleted_record():
    event = event_of(change("memory", None, MEMORY_V1), include_content=True)
    assert event is not None and event.detail.model_dump()["memory"] == "Alice sells candles."
    added = event_of(change("record", None, RECORD), include_content=True)
    assert added is not None and added.detail.model_dump()["text"] == "Lives in Paris."
    deleted = event_of(change("record", RECORD, None), include_content=True)
    assert deleted is not None and "Paris" not in deleted.detail.model_dump_json()


def test_a_version_that_empties_the_summary_is_memory_updated_too():
    emptied = {
        "version": 2,
        "generation": 0,
        "word_count": 0,
        "job_ids": ["job-9"],
        "updated_at": "2026-12-06T10:00:00Z",
    }
    event = event_of(change("memory", MEMORY_V1, emptied))
    assert event is not None and event.detail.model_dump()["word_count"] == 0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (MEMORY_V1, {**MEMORY_V1, "episode_count": 4}),  # a count moved, not the version
        (MEMORY_V1, {"version": 1, "generation": 1, "word_count": 0}),  # a delete's tombstone
    ],
)
def test_a_change_of_the_memory_item_without_a_new_version_is_no_event(old, new):
    assert event_of(change("memory", old, new)) is None


def test_records_added_invalidated_and_deleted():
    invalidated = {
        **RECORD,
        "invalidated_at": "2026-12-06T10:00:00Z",
        "valid_to": "2026-12-06T00:00:00Z",
        "superseded_by": "rec_2",
    }
    added, ended, gone = (
        event_of(change("record", None, RECORD)),
        event_of(change("record", RECORD, invalidated)),
        event_of(change("record", invalidated, None)),
    )
    assert [e.detail.model_dump()["change"] for e in (added, ended, gone) if e] == [
        "added",
        "invalidated",
        "deleted",
    ]
    assert ended and ended.detail.model_dump()["superseded_by"] == "rec_2"
    assert added and "Paris" not in added.detail.model_dump_json()
    assert event_of(change("record", RECORD, {**RECORD, "vector_model": "m@256"})) is None


def test_a_job_that_finishes_is_job_finished_once():
    queued = {"job_id": "job-1", "item_id": "t1", "status": "queued", "tenant_id": T, "user_id": U}
    done = {**queued, "status": "completed", "memory_version": 3}
    event = event_of(change("job", queued, done))
    assert event is not None and event.detail.model_dump() == {
        "event_id": "e-1",
        "tenant_id": T,
        "user_id": U,
        "job_id": "job-1",
        "item_id": "t1",
        "status": "completed",
        "memory_version": 3,
        "error_code": None,
    }
    assert event_of(change("job", done, {**done, "updated_at": "later"})) is None
    assert event_of(change("job", None, queued)) is None
    failed = event_of(
        change("job", queued, {**queued, "status": "failed", "error": {"code": "dead_lettered"}})
    )
    assert failed and failed.detail.model_dump()["error_code"] == "dead_lettered"


def test_a_user_s_deletion_receipt_is_user_forgotten_and_other_receipts_are_not():
    receipt = DeletionReceipt(
        receipt_id="del_1",
        tenant_id=T,
        user_id=U,
        scope="user",
        target_id=None,
        generation=2,
        requested_at="2026-12-05T10:00:00Z",
        completed_at="2026-12-05T10:00:01Z",
        expires_at="2028-01-09T10:00:01Z",
        erased=ErasedCounts(),
    )
    event = event_of(change("receipt", None, {"receipt": receipt.model_dump_json()}))
    assert event is not None and event.detail_type == "User Forgotten"
    assert event.detail.model_dump(mode="json")["receipt_id"] == "del_1"
    fact = receipt.model_copy(update={"scope": "fact", "target_id": "f1"})
    assert event_of(change("receipt", None, {"receipt": fact.model_dump_json()})) is None
