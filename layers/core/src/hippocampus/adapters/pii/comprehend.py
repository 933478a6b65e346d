"""Amazon Comprehend's DetectPiiEntities (MEMORY_PII_DETECTOR=comprehend): the kinds the pattern
detector finds, and also names and postal addresses.

Offsets: the Comprehend API Reference ("PiiEntity", and the SDKs' docs of DetectPiiEntities' result)
counts BeginOffset/EndOffset in characters — "the position of each UTF-8 code point", a multi-byte
character being one — so they index a Python str directly; EndOffset is exclusive (`text[begin:end]`
is the entity). Only the request's size is in bytes: "A UTF-8 text string. The maximum string size
is 100 KB" (API Reference "DetectPiiEntities"), so a longer text is sent in chunks cut at whitespace.
"""

import re
from collections.abc import Iterator
from typing import Any, Final

from hippocampus.adapters import aws_clients
from hippocampus.adapters.pii.spans import digits_of, without_overlaps
from hippocampus.contracts.pii import PiiKind, PiiSpan

# Read as 100,000 bytes, the smaller reading of "100 KB".
MAX_TEXT_BYTES: Final = 100_000
# Comprehend reports weak guesses too (a product code as a PIN, a common word as a NAME); below an
# even chance, masking one would hide words the model needs more often than it would protect a value.
MIN_SCORE: Final = 0.5

_KINDS: Final[dict[str, PiiKind]] = {
    "EMAIL": "EMAIL",
    "PHONE": "PHONE",
    "CREDIT_DEBIT_NUMBER": "CARD",
    "INTERNATIONAL_BANK_ACCOUNT_NUMBER": "IBAN",
    "SSN": "SSN",
    "IP_ADDRESS": "IP",
    "NAME": "NAME",
    "ADDRESS": "ADDRESS",
}
_WHITESPACE: Final = re.compile(r"\s+")
_IBAN_SEPARATORS: Final = re.compile(r"[\s-]+")


class ComprehendDetector:
    """Personal data found by Amazon Comprehend in texts of `language` ("en" or "es")."""

    def __init__(self, *, language: str = "en", client: Any | None = None) -> None:
        self.language = language
        self._client = client

    def detect(self, text: str) -> list[PiiSpan]:
        found: list[tuple[PiiSpan, float]] = []
        for offset, chunk in _chunks(text):
            if chunk.strip():
                found.extend(self._detect_in(chunk, offset))
        # The longer first, then the higher-scored.
        ranked = sorted(found, key=lambda pair: (pair[0].start - pair[0].end, -pair[1], pair[0].start))
        return without_overlaps(span for span, _score in ranked)

    def _comprehend(self) -> Any:
        """The given client, else the process-wide one (created on first use)."""
        return self._client if self._client is not None else aws_clients.client("comprehend")

    def _detect_in(self, chunk: str, offset: int) -> Iterator[tuple[PiiSpan, float]]:
        response = self._comprehend().detect_pii_entities(Text=chunk, LanguageCode=self.language)
        for entity in response.get("Entities", []):
            kind = _KINDS.get(entity.get("Type", ""))
            score = float(entity.get("Score", 0.0))
            begin, end = entity.get("BeginOffset"), entity.get("EndOffset")
            if kind is None or score < MIN_SCORE or begin is None or end is None or begin >= end:
                continue
            value = _canonical(kind, chunk[begin:end])
            yield PiiSpan(kind, offset + begin, offset + end, value), score


def _chunks(text: str) -> Iterator[tuple[int, str]]:
    """(offset, chunk) pairs covering `text`, each chunk at most MAX_TEXT_BYTES of UTF-8."""
    start = 0
    while start < len(text):
        end = start + _chars_within_limit(text[start : start + MAX_TEXT_BYTES])
        if end < len(text):
            end = _after_last_whitespace(text, start, end)
        yield start, text[start:end]
        start = end


def _chars_within_limit(text: str) -> int:
    """How many of `text`'s first characters fit in MAX_TEXT_BYTES (a character cut in two is left out)."""
    return len(text.encode()[:MAX_TEXT_BYTES].decode(errors="ignore"))


def _after_last_whitespace(text: str, start: int, end: int) -> int:
    """Where to cut text[start:end] so no word is split: after its last whitespace (at `end` if none)."""
    cut = end
    while cut > start and not text[cut - 1].isspace():
        cut -= 1
    return cut if cut > start else end


def _canonical(kind: PiiKind, written: str) -> str:
    collapsed = _WHITESPACE.sub(" ", written.strip())
    match kind:
        case "EMAIL":
            return collapsed.lower()
        case "PHONE" | "CARD" | "SSN":
            return digits_of(written) or collapsed
        case "IBAN":
            return _IBAN_SEPARATORS.sub("", written).upper()
        case _:
            return collapsed
