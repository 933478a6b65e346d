"""Personal data masked before any model sees it (docs/architecture.md "PII masking").

With `MEMORY_PII=mask`, a detector finds the personal data in a text (`PiiSpan`s), and each value
is replaced by a typed placeholder numbered per user (`[EMAIL_1]`): the same value gets the same
placeholder in every item, fact and query of that user. The numbers are kept by `PlaceholderStore`
under a keyed digest of the value, never the value itself.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol

PiiMode = Literal["off", "mask"]
PiiDetectorName = Literal["patterns", "comprehend"]
# What a placeholder says the value was. `patterns` finds the first six; `comprehend` adds names and
# postal addresses.
PiiKind = Literal["EMAIL", "PHONE", "CARD", "IBAN", "SSN", "IP", "NAME", "ADDRESS"]
PII_KINDS: Final[tuple[PiiKind, ...]] = ("EMAIL", "PHONE", "CARD", "IBAN", "SSN", "IP", "NAME", "ADDRESS")


@dataclass(frozen=True)
class PiiSpan:
    """One value found in a text: `text[start:end]`, of `kind`, and its canonical form (`value`),
    so that two spellings of one value (`+1 415 555 0100`, `(415) 555-0100`) get one placeholder."""

    kind: PiiKind
    start: int
    end: int
    value: str


class PiiDetector(Protocol):
    """Finds personal data in texts."""

    def detect(self, text: str) -> list[PiiSpan]:
        """The values in `text`, in order, none overlapping another."""
        ...


@dataclass(frozen=True)
class PiiValue:
    kind: PiiKind
    value: str  # canonical (PiiSpan.value)


class PlaceholderStore(Protocol):
    """A user's placeholder numbers, per kind, kept under a keyed digest of each value."""

    def numbers(
        self, tenant_id: str, user_id: str, generation: int, values: Sequence[PiiValue]
    ) -> dict[PiiValue, int]:
        """The number of each value, new values numbered after the user's last of their kind.

        Raises ConditionFailed when the user was forgotten since `generation` was read."""
        ...

    def known_numbers(self, tenant_id: str, user_id: str, values: Sequence[PiiValue]) -> dict[PiiValue, int]:
        """The numbers the user's values already have (a query numbers nothing)."""
        ...


def placeholder(kind: PiiKind, number: int | None) -> str:
    """`[EMAIL_1]`; `[EMAIL]` for a value that has no number (in a query, one the user never sent)."""
    return f"[{kind}_{number}]" if number is not None else f"[{kind}]"
