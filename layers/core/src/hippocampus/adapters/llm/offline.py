"""Deterministic, network-free LLM stand-in for development and tests (MEMORY_LLM_PROVIDER=offline).

Asked for plain text (no `schema`), it reads the fenced OLD_MEMORY / NEW_CONTENT blocks of the rendered
prompt and merges them with simple rules: keep the old sentences, add the user's durable sentences (no
greetings, thanks or questions), let a newer sentence replace an older one about the same subject, drop
the oldest to fit the budget. Like the prompt asks of a real model, it writes relative dates
("yesterday", "last week", "3 days ago") as the absolute dates they mean, counted from the `Item date:`
line of the item that says them (`relative_dates.py`), and answers NOTHING_TO_KEEP when the merge
leaves nothing.

Asked for the structured answer (`schema`: contracts/records.ANSWER_SCHEMA), it answers the JSON
object `{"summary", "operations"}`: operations on the user's records read from the same blocks plus
RECORDS and USER_NAME, and a summary built from the records (`offline_records.py`).
"""

import json
from collections.abc import Mapping
from datetime import date
from typing import Any

from hippocampus.adapters.llm.offline_records import structured_answer
from hippocampus.adapters.llm.offline_text import (
    SPEAKER,
    WORDS,
    extract_blocks,
    is_item_header,
    is_small_talk,
    split_sentences,
)
from hippocampus.adapters.llm.relative_dates import LEADING_DATE, parse_item_date, resolve_relative_dates
from hippocampus.contracts.ports import LlmResult
from hippocampus.contracts.prompt_format import (
    ASSISTANT_LABEL,
    ITEM_DATE_LABEL,
    ITEM_SEPARATOR,
    NOTHING_TO_KEEP,
    USER_LABEL,
    count_words,
)

_KEY_SKIP = frozenset({"a", "an", "the"})


class OfflineModel:
    name = "offline"

    def __init__(self, max_words: int = 50) -> None:
        self.max_words = max_words

    def complete(
        self,
        system: str,
        prompt: str,
        timeout_s: float | None = None,
        schema: Mapping[str, Any] | None = None,
    ) -> LlmResult:
        if schema is not None:
            text = json.dumps(structured_answer(prompt, self.max_words, self.merge))
        else:
            old_memory, new_content = extract_blocks(prompt)
            # An empty answer would be a malfunction (docs/architecture.md "Condensation").
            text = self.merge(old_memory, new_content) or NOTHING_TO_KEEP
        # No tokenizer offline: words stand in for tokens.
        return LlmResult(text, count_words(system) + count_words(prompt), count_words(text))

    def merge(self, old_memory: str, new_content: str) -> str:
        """The plain-text answer `complete` gives without a schema, from the blocks rather than a prompt."""
        new = durable_sentences(new_content)
        if not new:
            return old_memory.strip()
        merged: dict[tuple[str, ...], str] = {}
        for sentence in split_sentences(old_memory) + new:
            key = _subject(sentence)
            merged.pop(key, None)  # the newer statement replaces the older and moves to the end
            merged[key] = sentence
        kept = list(merged.values())
        while len(kept) > 1 and count_words(" ".join(kept)) > self.max_words:
            kept.pop(0)  # the oldest goes first
        # A single sentence may still be over budget: its first `max_words` words, as a model would cut.
        return " ".join(" ".join(kept).split()[: self.max_words])


def durable_sentences(content: str) -> list[str]:
    """The user's sentences worth remembering, in order, their relative dates made absolute."""
    sentences: list[str] = []
    day: date | None = None
    in_code = False
    for block in content.split(ITEM_SEPARATOR):
        first = block.lstrip("\n").partition("\n")[0]
        if first.startswith(ITEM_DATE_LABEL):
            # A new item. The service dates every item, so a block without a date line is the
            # next paragraph of the item before; an unreadable date leaves the item's dates as they are.
            moment = parse_item_date(first)
            day, in_code = (moment.date() if moment else None), False
        for line in _user_lines(block):
            fence_line = line.startswith("```")
            if day is not None and not in_code and not fence_line:
                line = resolve_relative_dates(line, day)
            in_code ^= fence_line  # a fenced code block's lines are kept as they are
            sentences.extend(s for s in split_sentences(line) if not is_small_talk(s))
    return sentences


def _user_lines(block: str) -> list[str]:
    """Drop what the assistant said; strip speaker labels from a conversation's user lines."""
    # An item's date and id lines say when it happened and which it is, not what the user said.
    lines = [line.strip() for line in block.splitlines() if line.strip() and not is_item_header(line)]
    is_dialogue = any(line.startswith(f"{ASSISTANT_LABEL}:") for line in lines)
    kept: list[str] = []
    speaker_is_assistant = False
    for line in lines:
        match = SPEAKER.match(line)
        if match and (is_dialogue or match.group(1) == USER_LABEL):
            speaker_is_assistant = match.group(1) == ASSISTANT_LABEL
            line = match.group(2)
        if not speaker_is_assistant:
            kept.append(line)
    return kept


def _subject(sentence: str) -> tuple[str, ...]:
    """What a sentence is about, roughly: its first three words, articles and a leading date aside."""
    text = LEADING_DATE.sub("", sentence).lower()
    words = [word for word in WORDS.findall(text) if word not in _KEY_SKIP]
    return tuple(words[:3])
