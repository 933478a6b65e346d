"""What a request may do to a user's facts, decided under the facts lease (domain/fact_lease.py)
before anything is written: the fact limits, and which facts `upsert: false` leaves as they are
(docs/api.md "Ingest", "Limits")."""

from collections.abc import Sequence

from hippocampus.contracts.errors import LimitExceeded
from hippocampus.contracts.json_values import compact_json_size
from hippocampus.contracts.limits import MAX_FACT_BYTES_PER_USER, MAX_FACTS_PER_USER
from hippocampus.contracts.models import Fact, IngestItem, JobError

FACT_FIELDS = {"id", "text", "metadata", "additional_metadata", "title", "is_markdown"}
# What one fact adds to the stored item besides its fields (keys, generation, timestamps).
FACT_OVERHEAD_BYTES = 32

# The error of a fact's job that `upsert: false` skipped (docs/api.md "Jobs").
FACT_EXISTS = JobError(code="fact_exists", message="a fact with this id exists and upsert is false")


def check_fact_limits(items: Sequence[IngestItem], existing: list[Fact]) -> None:
    """At most MAX_FACTS_PER_USER facts, MAX_FACT_BYTES_PER_USER in all: checked before anything is
    written. `items` are the ones to be written (turns among them are ignored)."""
    sizes = {fact.id: compact_json_size(fact.model_dump(mode="json")) for fact in existing}
    for item in items:
        if not item.infer:
            assert item.id is not None  # ids are assigned before the check
            fields = item.model_dump(mode="json", include=FACT_FIELDS)
            sizes[item.id] = compact_json_size(fields) + FACT_OVERHEAD_BYTES
    if len(sizes) > MAX_FACTS_PER_USER:
        raise LimitExceeded(
            f"a user holds at most {MAX_FACTS_PER_USER} facts; this request would make {len(sizes)}",
            [{"field": "items", "message": f"at most {MAX_FACTS_PER_USER} facts per user", "type": "limit"}],
        )
    if sum(sizes.values()) > MAX_FACT_BYTES_PER_USER:
        raise LimitExceeded(
            f"a user's facts hold at most {MAX_FACT_BYTES_PER_USER} bytes in all (they come back in every read)",
            [{"field": "items", "message": "facts too large in total", "type": "limit"}],
        )


def facts_not_replaced(items: Sequence[IngestItem], existing: list[Fact], upsert: bool) -> set[int]:
    """The places of the facts that `upsert: false` skips: their id is a fact of the user already,
    or an earlier item of the request writes it (items apply in order, so the first one wins)."""
    if upsert:
        return set()
    taken = {fact.id for fact in existing}
    skipped: set[int] = set()
    for index, item in enumerate(items):
        if item.infer:
            continue  # a turn has no identity to replace: upsert does not apply to it
        assert item.id is not None  # ids are assigned before the check
        if item.id in taken:
            skipped.add(index)
        else:
            taken.add(item.id)
    return skipped
