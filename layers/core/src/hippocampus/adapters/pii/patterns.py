"""The offline detector (MEMORY_PII_DETECTOR=patterns): e-mail addresses, phone numbers, payment
cards, IBANs, US social security numbers and IP addresses, found by pattern and kept only when
their own check holds (phonenumbers' metadata, Luhn and issuer range, IBAN checksum, SSN rules,
ipaddress).

A missed value reaches a model; a false one only hides a number from it, yet dates, prices, times,
versions and order numbers are everywhere in conversations, so each candidate must pass a check
that such numbers fail by construction, not by luck:

- CARD: 13-19 digits (in groups separated by single spaces or dashes, or none) that are not part of
  a longer run of digits, pass Luhn, and start with a known issuer's prefix at one of its lengths
  (a Luhn-valid order number passes one time in ten; without an issuer prefix it is not a card).
- SSN: `123-45-6789` anywhere; nine digits otherwise (`123456789`, `123 45 6789`) only a few words
  after "SSN" or "social security", since a bare nine-digit number is usually something else.
- IP: an IPv4 address right after "version"/"v"/"build"/"release" is a version string.
- PHONE: not right after "#" or "order"/"invoice"/"tracking"/"ref"/... (a reference number), nor
  before a decimal part (an amount).

Overlaps (an IBAN's digits can read as a phone number): the kind first in PRIORITY wins, then
the longer span.
"""

import ipaddress
import re
from collections.abc import Iterator
from typing import Final

import phonenumbers
from stdnum import iban, luhn
from stdnum.us import ssn

from hippocampus.adapters.pii.spans import digits_of, without_overlaps
from hippocampus.contracts.pii import PiiKind, PiiSpan

# The order in which overlapping candidates are kept: the kinds with a checksum or a fixed shape
# before PHONE, whose matcher accepts most digit groups of a plausible length.
PRIORITY: Final[tuple[PiiKind, ...]] = ("EMAIL", "IBAN", "CARD", "SSN", "IP", "PHONE")

_EMAIL: Final = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}(?![\w-])"
)
# Country code, check digits and up to 30 more characters, in groups of any size separated by a single
# space or dash; where the IBAN ends is decided by its checksum (`_iban_spans`).
_IBAN: Final = re.compile(r"(?<![^\W_])[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]){11,30}", re.IGNORECASE)
_IBAN_LENGTHS: Final = range(15, 35)
# Digits in groups separated by one space or dash, as card numbers are written (`4111 1111 1111 1111`),
# not part of a decimal or a word; a card is 13-19 digits of whole groups in it (`_card_in`), so one
# followed by its expiry (`… 1111 12/27`) or preceded by a phone number is found all the same.
_DIGIT_RUN: Final = re.compile(r"(?<![\w.,-])\d+(?:[ -]\d+)*(?![\w.,]\d|\w)")
_DIGIT_GROUP: Final = re.compile(r"\d+")
_SSN_DASHED: Final = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-]|[.,]\d)")
_SSN_UNDASHED: Final = re.compile(r"(?<![\w-])(?<!\d[ .,])\d{3} ?\d{2} ?\d{4}(?![\w-]|[ .,]\d)")
_SSN_CONTEXT: Final = re.compile(r"\b(?:ssns?|social\s+security)\b\W*(?:\w+\W+){0,3}$", re.IGNORECASE)
_IPV4: Final = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)")
_VERSION_CONTEXT: Final = re.compile(r"\b(?:versions?|ver|v|release|build)\.?\s*$", re.IGNORECASE)
_IPV6: Final = re.compile(
    r"(?<![\w:.])(?:[0-9A-F]{0,4}:){2,7}+(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-F]{1,4})?+(?![\w:]|\.\w)",
    re.IGNORECASE,
)
# A `#` alone is no reference (`phone # 415-555-0132`): only after one of these words.
_REFERENCE_CONTEXT: Final = re.compile(
    r"\b(?:order|invoice|tracking|ref|reference|ticket|confirmation|booking)\b"
    r"(?:\s*(?:no\.?|nr\.?|number|num|id))?\s*[#:]?\s*$",
    re.IGNORECASE,
)
_DECIMAL_PART: Final = re.compile(r"[.,]\d")
# How far back the context rules look: a few words.
_CONTEXT_CHARS: Final = 48

# Issuer prefixes (IIN ranges) of the card networks, with the lengths each issues: (first prefix,
# last prefix, lengths). Prefixes of one range have one number of digits.
_CARD_ISSUERS: Final[tuple[tuple[int, int, frozenset[int]], ...]] = (
    (4, 4, frozenset({13, 16, 19})),  # Visa
    (51, 55, frozenset({16})),  # Mastercard
    (2221, 2720, frozenset({16})),  # Mastercard's 2-series
    (34, 34, frozenset({15})),  # American Express
    (37, 37, frozenset({15})),  # American Express
    (6011, 6011, frozenset(range(16, 20))),  # Discover
    (644, 649, frozenset(range(16, 20))),  # Discover
    (65, 65, frozenset(range(16, 20))),  # Discover
    (3528, 3589, frozenset(range(16, 20))),  # JCB
    (300, 305, frozenset(range(14, 20))),  # Diners Club
    (36, 36, frozenset(range(14, 20))),  # Diners Club
    (38, 39, frozenset(range(16, 20))),  # Diners Club (Discover network)
    (62, 62, frozenset(range(16, 20))),  # UnionPay
    (5018, 5018, frozenset(range(13, 20))),  # Maestro
    (5020, 5020, frozenset(range(13, 20))),  # Maestro
    (5038, 5038, frozenset(range(13, 20))),  # Maestro
    (5893, 5893, frozenset(range(13, 20))),  # Maestro
    (6304, 6304, frozenset(range(13, 20))),  # Maestro
    (6759, 6759, frozenset(range(13, 20))),  # Maestro
    (6761, 6763, frozenset(range(13, 20))),  # Maestro
)


class PatternDetector:
    """Personal data found offline; phone numbers without a country code are read as `phone_region`'s."""

    def __init__(self, *, phone_region: str = "US") -> None:
        self.phone_region = phone_region

    def detect(self, text: str) -> list[PiiSpan]:
        candidates = [
            *_email_spans(text),
            *_iban_spans(text),
            *_card_spans(text),
            *_ssn_spans(text),
            *_ip_spans(text),
            *self._phone_spans(text),
        ]
        # By PRIORITY, then the longer first.
        return without_overlaps(
            sorted(candidates, key=lambda span: (PRIORITY.index(span.kind), span.start - span.end))
        )

    def _phone_spans(self, text: str) -> Iterator[PiiSpan]:
        matcher = phonenumbers.PhoneNumberMatcher(
            text, self.phone_region, leniency=phonenumbers.Leniency.VALID
        )
        for match in matcher:
            if _REFERENCE_CONTEXT.search(_before(text, match.start)) or _DECIMAL_PART.match(text, match.end):
                continue
            e164 = phonenumbers.format_number(match.number, phonenumbers.PhoneNumberFormat.E164)
            yield PiiSpan("PHONE", match.start, match.end, e164)


def _email_spans(text: str) -> Iterator[PiiSpan]:
    for match in _EMAIL.finditer(text):
        yield PiiSpan("EMAIL", match.start(), match.end(), match.group().lower())


def _iban_spans(text: str) -> Iterator[PiiSpan]:
    position = 0
    while match := _IBAN.search(text, position):
        span = _longest_valid_iban(text, match.start(), match.end())
        # A valid IBAN consumes its characters; otherwise the next candidate may start inside this one.
        position = span.end if span else match.start() + 1
        if span:
            yield span


def _longest_valid_iban(text: str, start: int, end: int) -> PiiSpan | None:
    for stop in range(end, start, -1):
        if not _ends_word(text, stop):
            continue
        compact = iban.compact(text[start:stop])
        if len(compact) in _IBAN_LENGTHS and iban.is_valid(compact):
            return PiiSpan("IBAN", start, stop, compact)
    return None


def _ends_word(text: str, stop: int) -> bool:
    return text[stop - 1].isalnum() and (stop == len(text) or not text[stop].isalnum())


def _card_spans(text: str) -> Iterator[PiiSpan]:
    for run in _DIGIT_RUN.finditer(text):
        groups = [
            (run.start() + g.start(), run.start() + g.end()) for g in _DIGIT_GROUP.finditer(run.group())
        ]
        card = _card_in(text, groups)
        if card is not None:
            yield card


def _card_in(text: str, groups: list[tuple[int, int]]) -> PiiSpan | None:
    """The first card of whole groups in a run, the longest from each group on: 13-19 digits that
    pass Luhn and begin with an issuer's prefix."""
    for first in range(len(groups)):
        for last in range(len(groups) - 1, first - 1, -1):
            start, end = groups[first][0], groups[last][1]
            digits = digits_of(text[start:end])
            if 13 <= len(digits) <= 19 and luhn.is_valid(digits) and _has_issuer_prefix(digits):
                return PiiSpan("CARD", start, end, digits)
    return None


def _has_issuer_prefix(digits: str) -> bool:
    return any(
        len(digits) in lengths and first <= int(digits[: len(str(first))]) <= last
        for first, last, lengths in _CARD_ISSUERS
    )


def _ssn_spans(text: str) -> Iterator[PiiSpan]:
    for match in _SSN_DASHED.finditer(text):
        if ssn.is_valid(match.group()):
            yield PiiSpan("SSN", match.start(), match.end(), digits_of(match.group()))
    for match in _SSN_UNDASHED.finditer(text):
        digits = digits_of(match.group())
        if ssn.is_valid(digits) and _SSN_CONTEXT.search(_before(text, match.start())):
            yield PiiSpan("SSN", match.start(), match.end(), digits)


def _ip_spans(text: str) -> Iterator[PiiSpan]:
    for match in _IPV4.finditer(text):
        if not _VERSION_CONTEXT.search(_before(text, match.start())):
            yield from _ip_span(match.group(), match.start())
    for match in _IPV6.finditer(text):
        written = match.group()
        if written.endswith(":") and not written.endswith("::"):
            written = written[:-1]  # a sentence's colon after the address
        groups = [group for group in written.split(":") if group]
        # Two groups and a digit at least: `a::b` and `::` are more often code than addresses.
        if len(groups) >= 2 and any(char.isdigit() for char in written):
            yield from _ip_span(written, match.start())


def _ip_span(written: str, start: int) -> Iterator[PiiSpan]:
    try:
        address = ipaddress.ip_address(written)
    except ValueError:  # 999.1.1.1, 12:30:45, leading zeros
        return
    yield PiiSpan("IP", start, start + len(written), str(address))


def _before(text: str, start: int) -> str:
    return text[max(0, start - _CONTEXT_CHARS) : start]
