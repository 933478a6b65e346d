"""Deterministic, network-free LLM stand-in for development and tests (MEMORY_LLM_PROVIDER=offline).

It reads the fenced OLD_MEMORY / NEW_CONTENT blocks of the rendered prompt and merges them with simple
rules: keep the old sentences, add the user's durable sentences (no greetings, thanks or questions),
let a newer sentence replace an older one about the same subject, drop the oldest to fit the budget.
Like the prompt asks of a real model, it writes relative dates ("yesterday", "last week", "3 days
ago") as the absolute dates they mean, counted from the `Item date:` line of the item that says them
(`relative_dates.py`), and answers NOTHING_TO_KEEP when the merge leaves nothing.
"""

import re
from datetime import date

from hippocampus.adapters.llm.relative_dates import LEADING_DATE, parse_item_date, resolve_relative_dates
from hippocampus.contracts.ports import LlmResult
from hippocampus.contracts.prompt_format import (
    ASSISTANT_LABEL,
    ITEM_DATE_LABEL,
    ITEM_SEPARATOR,
    NEW_CONTENT_BEGIN,
    NEW_CONTENT_END,
    NOTHING_TO_KEEP,
    OLD_MEMORY_BEGIN,
    OLD_MEMORY_END,
    USER_LABEL,
    count_words,
)

_SPEAKER = re.compile(r"^([^:\n]{1,64}):\s+(.*)$")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?…])\s+")
_CODE_BLOCK = re.compile(r"```[\w-]*\n(.*?)```", re.DOTALL)
_LEADING_FILLER = re.compile(
    r"^(?:(?:hi|hello|hey|thanks|thank you|ok|okay|oh|yes|yeah|sure|great|cool|actually|also|btw|"
    r"by the way|anyway|and)(?=[\s,!.;:-])[\s,!.;:-]*)+",
    re.IGNORECASE,
)
_WORDS = re.compile(r"[a-z0-9']+")
# Words that make up greetings, thanks and acknowledgements; a sentence of only these says nothing.
_SMALL_TALK = frozenset(
    """hi hello hey thanks thank you so much very ok okay oh yes yeah yep no nope sure great cool nice
    good morning afternoon evening night bye goodbye see later cheers welcome to meet too awesome
    perfect fine lol haha please that's it is sounds got understood alright right""".split()  # noqa: SIM905
)
_KEY_SKIP = frozenset({"a", "an", "the"})


class OfflineModel:
    name = "offline"

    def __init__(self, max_words: int = 50) -> None:
        self.max_words = max_words

    def complete(self, system: str, prompt: str, timeout_s: float | None = None) -> LlmResult:
        old_memory, new_content = extract_blocks(prompt)
        # An empty answer would be a malfunction (docs/architecture.md "Condensation").
        text = self.merge(old_memory, new_content) or NOTHING_TO_KEEP
        # No tokenizer offline: words stand in for tokens.
        return LlmResult(text, count_words(system) + count_words(prompt), count_words(text))

    def merge(self, old_memory: str, new_content: str) -> str:
        """The structured path: the same merge `complete` performs, without a prompt."""
        new = durable_sentences(new_content)
        if not new:
            return old_memory.strip()
        merged: dict[tuple[str, ...], str] = {}
        for sentence in _sentences(old_memory) + new:
            key = _subject(sentence)
            merged.pop(key, None)  # the newer statement replaces the older and moves to the end
            merged[key] = sentence
        kept = list(merged.values())
        while len(kept) > 1 and count_words(" ".join(kept)) > self.max_words:
            kept.pop(0)  # the oldest goes first
        # A single sentence may still be over budget: its first `max_words` words, as a model would cut.
        return " ".join(" ".join(kept).split()[: self.max_words])


def extract_blocks(prompt: str) -> tuple[str, str]:
    """(old memory, new content) from the fences; without them, the last code block or the whole prompt."""
    old = _last_block(prompt, OLD_MEMORY_BEGIN, OLD_MEMORY_END) or ""
    new = _last_block(prompt, NEW_CONTENT_BEGIN, NEW_CONTENT_END)
    if new is None:
        blocks = _CODE_BLOCK.findall(prompt)
        new = blocks[-1] if blocks else prompt
    return old, new


def _last_block(prompt: str, begin: str, end: str) -> str | None:
    # The rendered fence is `BEGIN\n…\nEND`; prose that merely names a marker does not match.
    blocks = re.findall(re.escape(begin) + r"\n(.*?)\n" + re.escape(end), prompt, re.DOTALL)
    return blocks[-1] if blocks else None


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
            sentences.extend(s for s in _sentences(line) if not _is_small_talk(s))
    return sentences


def _user_lines(block: str) -> list[str]:
    """Drop what the assistant said; strip speaker labels from a conversation's user lines."""
    # An item's date line says when it happened, not what the user said.
    lines = [
        line.strip() for line in block.splitlines() if line.strip() and not line.startswith(ITEM_DATE_LABEL)
    ]
    is_dialogue = any(line.startswith(f"{ASSISTANT_LABEL}:") for line in lines)
    kept: list[str] = []
    speaker_is_assistant = False
    for line in lines:
        match = _SPEAKER.match(line)
        if match and (is_dialogue or match.group(1) == USER_LABEL):
            speaker_is_assistant = match.group(1) == ASSISTANT_LABEL
            line = match.group(2)
        if not speaker_is_assistant:
            kept.append(line)
    return kept


def _sentences(text: str) -> list[str]:
    return [tidy for part in _SENTENCE_SPLIT.split(text.strip()) if (tidy := _tidy(part))]


def _tidy(sentence: str) -> str:
    sentence = _LEADING_FILLER.sub("", sentence.strip()).strip()
    if not sentence:
        return ""
    if sentence[-1] not in ".!?…":
        sentence += "."
    return sentence[0].upper() + sentence[1:]


def _is_small_talk(sentence: str) -> bool:
    words = _WORDS.findall(sentence.lower())
    return sentence.endswith("?") or all(word in _SMALL_TALK for word in words)


def _subject(sentence: str) -> tuple[str, ...]:
    """What a sentence is about, roughly: its first three words, articles and a leading date aside."""
    text = LEADING_DATE.sub("", sentence).lower()
    words = [word for word in _WORDS.findall(text) if word not in _KEY_SKIP]
    return tuple(words[:3])
