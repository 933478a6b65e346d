"""What a request may do to a user's facts: the fact limits and what each fact counts for
(docs/api.md "Ingest", "Limits"). Decided on one read of the facts (domain/ingest/fact_writes.py), and
held by the commit that writes them, which checks the counts again."""

from collections.abc import Mapping
from typing import Any

from hippocampus.contracts.errors import LimitExceeded
from hippocampus.contracts.fact_ports import FactCounts, FactLedger, StoredFact
from hippocampus.contracts.json_values import compact_json_size
from hippocampus.contracts.limits import MAX_FACT_BYTES_PER_USER, MAX_FACTS_PER_USER
from hippocampus.contracts.models import IngestItem, JobError

FACT_FIELDS = {"id", "text", "metadata", "additional_metadata", "title", "is_markdown"}
# What one fact adds to the stored item besides its fields (keys, generation, timestamps).
FACT_OVERHEAD_BYTES = 32

# The error of a fact's job that `upsert: false` skipped (docs/api.md "Jobs").
FACT_EXISTS = JobError(code="fact_exists", message="a fact with this id exists and upsert is false")


def _size(fields: Mapping[str, Any]) -> int:
    return compact_json_size(fields) + FACT_OVERHEAD_BYTES


def item_size(item: IngestItem) -> int:
    """The bytes a fact item counts for towards MAX_FACT_BYTES_PER_USER."""
    return _size(item.model_dump(mode="json", include=FACT_FIELDS))


def stored_size(stored: StoredFact) -> int:
    """The bytes a stored fact counts for: as counted when written, or (a fact stored before facts
    were counted) measured the same way from its fields."""
    if stored.size is not None:
        return stored.size
    return _size(stored.fact.model_dump(mode="json", include=FACT_FIELDS))


def live_counts(ledger: FactLedger) -> FactCounts:
    """The counts of the facts the read found: what the stored counts are rebased to."""
    return FactCounts(len(ledger.facts), sum(stored_size(stored) for stored in ledger.facts.values()))


def fact_limits() -> FactCounts:
    """The limits, read when called (a test may make them small)."""
    return FactCounts(MAX_FACTS_PER_USER, MAX_FACT_BYTES_PER_USER)


def within_limits(counts: FactCounts) -> bool:
    limits = fact_limits()
    return counts.facts <= limits.facts and counts.bytes <= limits.bytes


def refuse(counts: FactCounts) -> LimitExceeded:
    """The 422 of a request that would bring the user's facts to `counts`, naming the limit."""
    limits = fact_limits()
    if counts.facts > limits.facts:
        return LimitExceeded(
            f"a user holds at most {limits.facts} facts; this request would make {counts.facts}",
            [{"field": "items", "message": f"at most {limits.facts} facts per user", "type": "limit"}],
        )
    return LimitExceeded(
        f"a user's facts hold at most {limits.bytes} bytes in all (they come back in every read)",
        [{"field": "items", "message": "facts too large in total", "type": "limit"}],
    )
