"""Which committed changes are events, and what each event says (docs/architecture.md "Events").

- `Memory Updated`: the summary item's `version` moved (a condensation or a PUT wrote a version,
  or a forgotten episode's rebuild, which may empty it; a delete keeps the version counter and
  writes none, and turns wait as episodes with none).
- `Records Changed`: a record item was created (`added`), given `invalidated_at` (`invalidated`),
  or removed (`deleted`: one record's delete, a forgotten episode's, a trim or the user's delete).
  Other changes of a record (its vector, an episode id dropped) are not events.
- `Job Finished`: a job's status became `completed`, `failed` or `skipped`.
- `User Forgotten`: a deletion receipt of the user's scope was written.

No memory text and no record text is put in a detail unless `include_content`.
"""

from collections.abc import Callable

from hippocampus.contracts.events import (
    JOB_FINISHED,
    MEMORY_UPDATED,
    RECORDS_CHANGED,
    USER_FORGOTTEN,
    ChangeEvent,
    JobFinishedDetail,
    MemoryUpdatedDetail,
    RecordsChangedDetail,
    StoredChange,
    UserForgottenDetail,
)
from hippocampus.contracts.receipts import DeletionReceipt

_FINISHED = frozenset({"completed", "failed", "skipped"})


def event_of(change: StoredChange, include_content: bool = False) -> ChangeEvent | None:
    """The event a change is, or None when it is none."""
    return _BY_KIND[change.kind](change, include_content)


def _memory(change: StoredChange, include_content: bool) -> ChangeEvent | None:
    new, old = change.new or {}, change.old or {}
    version, previous = int(new.get("version", 0)), int(old.get("version", 0))
    # A version with no text is one too: a forgotten episode's rebuild from no records empties it.
    if version <= previous:
        return None
    detail = MemoryUpdatedDetail(
        event_id=change.event_id,
        tenant_id=change.tenant_id,
        user_id=change.user_id,
        version=version,
        previous_version=previous,
        generation=int(new.get("generation", 0)),
        word_count=int(new.get("word_count", 0)),
        job_ids=list(new.get("job_ids") or []),
        updated_at=new["updated_at"],
        memory=new.get("memory") if include_content else None,
    )
    return ChangeEvent(MEMORY_UPDATED, detail)


def _record(change: StoredChange, include_content: bool) -> ChangeEvent | None:
    new, old = change.new, change.old
    if new is not None and old is None:
        what = "added"
    elif new is not None and old is not None and new.get("invalidated_at") and not old.get("invalidated_at"):
        what = "invalidated"
    elif new is None and old is not None:
        what = "deleted"
    else:
        return None
    item = new if new is not None else old
    assert item is not None  # one of the two, by the cases above
    detail = RecordsChangedDetail(
        event_id=change.event_id,
        tenant_id=change.tenant_id,
        user_id=change.user_id,
        record_id=item["id"],
        change=what,
        category=item.get("category"),
        valid_from=item.get("valid_from"),
        valid_to=item.get("valid_to"),
        superseded_by=item.get("superseded_by"),
        job_id=item.get("job_id"),
        generation=int(item.get("generation", 0)),
        # Never for a deleted record: a user's delete would publish the text of all it erased.
        text=item.get("text") if include_content and what != "deleted" else None,
    )
    return ChangeEvent(RECORDS_CHANGED, detail)


def _job(change: StoredChange, include_content: bool) -> ChangeEvent | None:
    new, old = change.new, change.old or {}
    if new is None or new.get("status") not in _FINISHED or new.get("status") == old.get("status"):
        return None
    error = new.get("error") or {}
    detail = JobFinishedDetail(
        event_id=change.event_id,
        tenant_id=change.tenant_id,
        user_id=change.user_id,
        job_id=new["job_id"],
        item_id=new.get("item_id"),
        status=new["status"],
        memory_version=new.get("memory_version"),
        error_code=error.get("code"),
    )
    return ChangeEvent(JOB_FINISHED, detail)


def _receipt(change: StoredChange, include_content: bool) -> ChangeEvent | None:
    if change.new is None or change.old is not None:
        return None
    receipt = DeletionReceipt.model_validate_json(change.new["receipt"])
    if receipt.scope not in ("user", "agent"):  # an agent's scope forgotten: `agent_id` says which
        return None
    detail = UserForgottenDetail(
        event_id=change.event_id,
        tenant_id=receipt.tenant_id,
        user_id=receipt.scope_key,
        receipt_id=receipt.receipt_id,
        generation=receipt.generation,
        requested_at=receipt.requested_at,
        completed_at=receipt.completed_at,
        erased=receipt.erased,
    )
    return ChangeEvent(USER_FORGOTTEN, detail)


_BY_KIND: dict[str, Callable[[StoredChange, bool], ChangeEvent | None]] = {
    "memory": _memory,
    "record": _record,
    "job": _job,
    "receipt": _receipt,
}
