"""The budget of a summary: clean what an LLM answers, and cut it at a sentence boundary when it is too long.

A summary has at most `max_words` words and `max_memory_chars(max_words)` characters: a word is any
whitespace-separated token, however long, so the words alone would not keep a summary small
(docs/architecture.md "Condensation").
"""

import re

from hippocampus.contracts.prompt_format import FENCED_BLOCKS, NOTHING_TO_KEEP, count_words

# English words average about 6 characters with their space; 12 leaves room for names, numbers and
# technical terms (docs/configuration.md).
CHARS_PER_WORD = 12

_MARKER = re.compile(r"<<<\s*/?\s*(?:END_)?(?:" + "|".join(FENCED_BLOCKS) + r")\s*>>>", re.IGNORECASE)

_CODE_FENCE = re.compile(r"^\s*```[\w-]*[ \t]*\n?(.*?)\n?```\s*$", re.DOTALL)
_PREFIX = re.compile(
    r"^\s*(?:\*\*|__)?\s*(?:here\s+is\s+the\s+|the\s+)?(?:updated\s+|new\s+|condensed\s+|merged\s+)?"
    r"(?:summary|memory)\s*(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*",
    re.IGNORECASE,
)
# Opening → closing quote, typographic ones included (written as escapes for the linter).
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "«": "»", "`": "`"}
_SENTENCE_END = re.compile("[.!?…][\"')\\]\u201d\u2019]*(?=\\s|$)")
_WORD = re.compile(r"\S+")
_NOTHING_TO_KEEP = re.compile(rf"\W*{NOTHING_TO_KEEP}\W*", re.IGNORECASE)


def max_memory_chars(max_words: int) -> int:
    """The character bound of a summary, derived from its word budget."""
    return max_words * CHARS_PER_WORD


def within_budget(text: str, max_words: int) -> bool:
    return count_words(text) <= max_words and len(text) <= max_memory_chars(max_words)


def means_nothing_to_keep(answer: str) -> bool:
    """The answer is the prompt's explicit "nothing worth keeping" (NOTHING_TO_KEEP), alone."""
    return _NOTHING_TO_KEEP.fullmatch(answer) is not None


def clean_answer(text: str) -> str:
    """Strip the wrappers LLMs add: code fences, echoed fence markers, a "Summary:" label, quotes."""
    previous = None
    text = text.strip()
    while text != previous:
        previous = text
        if match := _CODE_FENCE.match(text):
            text = match.group(1).strip()
        text = _MARKER.sub(" ", text).strip()
        text = _PREFIX.sub("", text, count=1).strip()
        if len(text) >= 2 and _QUOTES.get(text[0]) == text[-1] and text[-1] not in text[1:-1]:
            text = text[1:-1].strip()
    return text


def fit_budget(text: str, max_words: int) -> tuple[str, bool]:
    """Cut at the last sentence end within both bounds, else after the last whole word within them;
    a first word longer than the character bound is cut at the bound. (text, was_cut)"""
    if within_budget(text, max_words):
        return text, False
    max_chars = max_memory_chars(max_words)
    word_ends = [word.end() for word in _WORD.finditer(text) if word.end() <= max_chars][:max_words]
    if not word_ends:
        return text[:max_chars].strip(), True
    hard_end = word_ends[-1]
    sentence_ends = [match.end() for match in _SENTENCE_END.finditer(text, 0, hard_end)]
    end = sentence_ends[-1] if sentence_ends else hard_end
    return text[:end].strip(), True
