"""What both detectors do with their candidates: keep the best of each overlapping set."""

import bisect
from collections.abc import Iterable

from hippocampus.contracts.pii import PiiSpan


def without_overlaps(ranked: Iterable[PiiSpan]) -> list[PiiSpan]:
    """The spans, taken best first (the caller's order), that overlap none kept before them; in
    text order."""
    kept: list[PiiSpan] = []
    starts: list[int] = []
    for span in ranked:
        at = bisect.bisect_right(starts, span.start)
        if (at > 0 and kept[at - 1].end > span.start) or (at < len(kept) and kept[at].start < span.end):
            continue
        starts.insert(at, span.start)
        kept.insert(at, span)
    return kept


def digits_of(written: str) -> str:
    """A number as written (`4111 1111-…`, `(415) 555…`) reduced to its digits: its canonical value."""
    return "".join(char for char in written if char.isdigit())
