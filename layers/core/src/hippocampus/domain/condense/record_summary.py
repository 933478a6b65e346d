"""A summary made of the current records, without an LLM call (docs/architecture.md "Records").

Used when a summary must be rebuilt with nothing but the records to go on: after an episode is
forgotten (the old summary may hold what it taught, so it is not reused), and when an answer added
records but wrote no summary. Whole records by priority — the category order of
RECORD_CATEGORIES (who someone is before what they did), then the newest first — within
`max_words` words and their character bound; the next condensation's LLM call rewrites it in prose.
"""

from collections.abc import Sequence

from hippocampus.contracts.prompt_format import count_words
from hippocampus.contracts.records import RECORD_CATEGORIES, MemoryRecord
from hippocampus.domain.budget import fit_budget, within_budget


def summary_from_records(records: Sequence[MemoryRecord], max_words: int) -> str | None:
    """The current records by priority, as many whole ones as fit; None when there are none."""
    ranked = sorted(
        (record for record in records if record.is_current),
        key=lambda record: (
            RECORD_CATEGORIES.index(record.category),
            -record.valid_from.timestamp(),
            record.id,
        ),
    )
    kept: list[str] = []
    for record in ranked:
        sentence = _sentence(record.text)
        if within_budget(" ".join([*kept, sentence]), max_words):
            kept.append(sentence)
        elif not kept:  # even the first is over the budget: its beginning, cut as any summary is
            return fit_budget(sentence, max_words)[0]
    summary = " ".join(kept)
    return summary if count_words(summary) else None


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?", "…")) else text + "."
