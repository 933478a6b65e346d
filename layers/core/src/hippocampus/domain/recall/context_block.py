"""The block of `POST …/memory/context`: what an application prepends to its prompt.

Layout (docs/api.md "Recall"), a section only when it has content, sections apart by a blank line:

    What you know about this user:
    <the summary>

    Relevant facts:
    - <fact text, on one line>

    Relevant records:
    - <record text, on one line> (since 8 May 2023)

    Relevant past conversation:
    - <episode text, on one line>

The summary comes first, whole when it fits; then facts, records and episodes are taken in ranked
order (the best first, whichever its type), each whole or not at all, and each section lists its
items in that order. A record's line ends with the date it became true (its `valid_from`, as the
ranked document's `updated_at`): a reader weighs "lives in Paris" by when. An item whose
normalised text (its words: case, spacing and punctuation aside; a record's date aside) equals one
already taken, or is contained in the (included) summary, is skipped. The block never has more than
`max_words` words, counted as the service counts them (`count_words`: headings and "-" included).
A summary too long on its own is cut to fit, at a sentence end if it can (`fit_budget`, as the
summary's own budget); when `max_words` leaves no room for the heading and one word, the block is
the cut summary alone, no heading.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from hippocampus.contracts.prompt_format import count_words, day_in_words
from hippocampus.domain.budget import fit_budget
from hippocampus.domain.recall.ranking import Ranked

MEMORY_HEADING: Final = "What you know about this user:"
FACTS_HEADING: Final = "Relevant facts:"
RECORDS_HEADING: Final = "Relevant records:"
EPISODES_HEADING: Final = "Relevant past conversation:"
BULLET: Final = "- "

# The sections in the block's order.
_HEADINGS: Final = {"fact": FACTS_HEADING, "record": RECORDS_HEADING, "episode": EPISODES_HEADING}
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+(?:'\w+)*")


@dataclass(frozen=True)
class ContextBlock:
    text: str
    word_count: int
    sources: list[dict[str, str]]  # {"type": "memory"} / {"type": "fact"|"record"|"episode", "id": ...}


@dataclass
class _Sections:
    """What is taken so far: the lines of each item type, their sources, the words left."""

    words_left: int
    lines: dict[str, list[str]] = field(default_factory=lambda: {kind: [] for kind in _HEADINGS})
    ids: dict[str, list[str]] = field(default_factory=lambda: {kind: [] for kind in _HEADINGS})
    seen: set[str] = field(default_factory=set)

    def cost(self, kind: str, line: str) -> int:
        heading = 0 if self.lines[kind] else count_words(_HEADINGS[kind])
        return heading + count_words(line)

    def take(self, kind: str, item_id: str, line: str) -> None:
        self.words_left -= self.cost(kind, line)
        self.lines[kind].append(line)
        self.ids[kind].append(item_id)


def one_line(text: str) -> str:
    """The text with every run of whitespace (newlines included) as one space."""
    return _SPACE.sub(" ", text).strip()


def dated(text: str, since: datetime) -> str:
    """A record's text and the date it became true: `Lives in Lyon. (since 8 May 2023)`, in English
    whatever the locale."""
    return f"{text} (since {day_in_words(since)})"


def normalised(text: str) -> str:
    """The text compared for duplicates: its lowercase words, one space apart (no punctuation)."""
    return " ".join(_WORD.findall(text.casefold().replace("\u2019", "'")))


def build_context(memory: str | None, ranked: Sequence[Ranked], max_words: int) -> ContextBlock:
    """The context block of at most `max_words` words (the module docstring gives the layout)."""
    summary = (memory or "").strip()
    parts: list[str] = []
    sources: list[dict[str, str]] = []
    if max_words < 1:
        return ContextBlock(text="", word_count=0, sources=[])
    if summary:
        summary, headed = _fit_summary(summary, max_words)
        parts.append(f"{MEMORY_HEADING}\n{summary}" if headed else summary)
        sources.append({"type": "memory"})
        if not headed:
            return ContextBlock(text=summary, word_count=count_words(summary), sources=sources)
    sections = _select(summary, ranked, max_words - sum(count_words(part) for part in parts))
    for kind, heading in _HEADINGS.items():
        if sections.lines[kind]:
            parts.append("\n".join([heading, *sections.lines[kind]]))
            sources.extend({"type": kind, "id": item_id} for item_id in sections.ids[kind])
    text = "\n\n".join(parts)
    return ContextBlock(text=text, word_count=count_words(text), sources=sources)


def _fit_summary(summary: str, max_words: int) -> tuple[str, bool]:
    """(the summary, cut to fit `max_words` with its heading, True), or cut to fit alone (False)
    when the budget has no room for the heading plus one word."""
    room = max_words - count_words(MEMORY_HEADING)
    if room < 1:
        return fit_budget(summary, max_words)[0], False
    return fit_budget(summary, room)[0], True


def _select(summary: str, ranked: Sequence[Ranked], words_left: int) -> _Sections:
    """The facts, records and episodes that fit, best first, each whole, none a duplicate."""
    sections = _Sections(words_left)
    in_summary = f" {normalised(summary)} "
    for item in ranked:
        document = item.document
        text = one_line(document.text)
        key = normalised(text)
        if not key or key in sections.seen or f" {key} " in in_summary:
            continue
        line = BULLET + (dated(text, document.updated_at) if document.type == "record" else text)
        if sections.cost(document.type, line) <= sections.words_left:
            sections.take(document.type, document.id, line)
            sections.seen.add(key)
    return sections
