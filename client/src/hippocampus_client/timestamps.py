"""`occurred_at`, the item field that says when a turn or fact happened (docs/api.md "Ingest").

The API takes an RFC 3339 timestamp with `Z` or a numeric offset, seconds included, at most six
digits of fraction ("2023-05-08T13:56:00Z", "2023-05-08T15:56:00.5+02:00"; RFC 3339 also allows
a lower-case `t` or `z` and a space for the `T`). The client refuses anything else
before any request, with `InvalidInputError` naming the field: a string without an offset, a
date alone, a naive `datetime`. A timezone-aware `datetime` is sent as RFC 3339 (`isoformat`,
e.g. "+00:00"). The bound in the future (5 minutes) is the service's to check, by its own clock
(client/README.md "Methods").

The same rule holds for the other times the client sends: `as_of` and `known_at` of `records`
(`occurred_at(value, "as_of")` names the field it checks).
"""

import re
from datetime import UTC, datetime, timedelta

from .errors import InvalidInputError

FIELD = "occurred_at"
# RFC 3339's `date-time`, as the API matches it: seconds required, microseconds at most.
RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})")
EXPECTED = (
    'a timezone-aware datetime or an RFC 3339 timestamp with Z or an offset (e.g. "2023-05-08T13:56:00Z")'
)
MAX_SHOWN = 40


def occurred_at(value: object, field: str = FIELD) -> str:
    """`value` as the API takes it: an RFC 3339 string (as given), or an aware `datetime` written
    as one; else `InvalidInputError` naming `field`."""
    if isinstance(value, datetime):
        return _from_datetime(value, field)
    if isinstance(value, str) and RFC3339.fullmatch(value) and _is_real(value):
        return value
    if isinstance(value, str):
        shown = repr(value) if len(value) <= MAX_SHOWN else f"a string of {len(value)} characters"
    else:
        shown = type(value).__name__
    raise _invalid(field, f"{field} must be {EXPECTED}; got {shown}")


def _from_datetime(value: datetime, field: str) -> str:
    offset = value.utcoffset()
    if offset is None:
        raise _invalid(field, f"{field} is a naive datetime: give it a timezone (e.g. tzinfo=UTC)")
    if offset % timedelta(minutes=1):
        value = value.astimezone(UTC)  # RFC 3339 offsets are whole minutes (some zones' LMT is not)
    return value.isoformat()


def _is_real(text: str) -> bool:
    """A date and time that exist: no 31 April, no 25:00, no offset of 24 hours."""
    try:
        return datetime.fromisoformat(text.upper().replace(" ", "T")).utcoffset() is not None
    except ValueError:
        return False


def _invalid(field: str, message: str) -> InvalidInputError:
    return InvalidInputError(
        message, details=[{"field": field, "message": "not an RFC 3339 timestamp", "type": "timestamp"}]
    )
