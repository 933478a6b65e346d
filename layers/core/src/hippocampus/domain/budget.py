"""The word budget: clean what an LLM answers, and cut it at a sentence boundary when it is too long."""

import re

from hippocampus.contracts.prompt_format import count_words

_MARKER = re.compile(r"<<<\s*/?\s*(?:END_)?(?:OLD_MEMORY|NEW_CONTENT)\s*>>>", re.IGNORECASE)

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
    """Cut at the last sentence end within the budget, else after `max_words` words; (text, was_cut)."""
    if count_words(text) <= max_words:
        return text, False
    words = list(_WORD.finditer(text))
    hard_end = words[max_words - 1].end()
    sentence_ends = [match.end() for match in _SENTENCE_END.finditer(text, 0, hard_end)]
    end = sentence_ends[-1] if sentence_ends else hard_end
    return text[:end].strip(), True
