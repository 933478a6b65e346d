"""What the offline stand-in reads a rendered prompt with: the fenced blocks, speaker labels, item
headers and sentences (shared by the plain-text merge of `offline.py` and the records of
`offline_records.py`)."""

import re

from hippocampus.contracts.prompt_format import (
    ITEM_DATE_LABEL,
    ITEM_ID_LABEL,
    NEW_CONTENT_BEGIN,
    NEW_CONTENT_END,
    OLD_MEMORY_BEGIN,
    OLD_MEMORY_END,
)

SPEAKER = re.compile(r"^([^:\n]{1,64}):\s+(.*)$")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?…])\s+")
_CODE_BLOCK = re.compile(r"```[\w-]*\n(.*?)```", re.DOTALL)
_LEADING_FILLER = re.compile(
    r"^(?:(?:hi|hello|hey|thanks|thank you|ok|okay|oh|yes|yeah|sure|great|cool|actually|also|btw|"
    r"by the way|anyway|and)(?=[\s,!.;:-])[\s,!.;:-]*)+",
    re.IGNORECASE,
)
WORDS = re.compile(r"[a-z0-9']+")
# Words that make up greetings, thanks and acknowledgements; a sentence of only these says nothing.
_SMALL_TALK = frozenset(
    """hi hello hey thanks thank you so much very ok okay oh yes yeah yep no nope sure great cool nice
    good morning afternoon evening night bye goodbye see later cheers welcome to meet too awesome
    perfect fine lol haha please that's it is sounds got understood alright right""".split()  # noqa: SIM905
)


def extract_blocks(prompt: str) -> tuple[str, str]:
    """(old memory, new content) from the fences; without them, the last code block or the whole prompt."""
    old = fenced_block(prompt, OLD_MEMORY_BEGIN, OLD_MEMORY_END) or ""
    new = fenced_block(prompt, NEW_CONTENT_BEGIN, NEW_CONTENT_END)
    if new is None:
        blocks = _CODE_BLOCK.findall(prompt)
        new = blocks[-1] if blocks else prompt
    return old, new


def fenced_block(prompt: str, begin: str, end: str) -> str | None:
    """The body of the last `begin`…`end` fence of the prompt; None when there is none."""
    # The rendered fence is `BEGIN\n…\nEND`; prose that merely names a marker does not match.
    blocks = re.findall(re.escape(begin) + r"\n(.*?)\n" + re.escape(end), prompt, re.DOTALL)
    return blocks[-1] if blocks else None


def is_item_header(line: str) -> bool:
    return line.startswith((ITEM_DATE_LABEL, ITEM_ID_LABEL))


def split_sentences(text: str) -> list[str]:
    """The sentences of a text, each tidied: leading fillers ("Oh, yes,") off, a final stop on."""
    return [tidy for part in _SENTENCE_SPLIT.split(text.strip()) if (tidy := _tidy(part))]


def _tidy(sentence: str) -> str:
    sentence = _LEADING_FILLER.sub("", sentence.strip()).strip()
    if not sentence:
        return ""
    if sentence[-1] not in ".!?…":
        sentence += "."
    return sentence[0].upper() + sentence[1:]


def is_small_talk(sentence: str) -> bool:
    """A question, or a sentence of greetings, thanks and acknowledgements only."""
    words = WORDS.findall(sentence.lower())
    return sentence.endswith("?") or all(word in _SMALL_TALK for word in words)
