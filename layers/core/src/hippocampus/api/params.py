"""Path, query and header parameters of the routes (their responses: api/openapi_responses.py)."""

import re
from datetime import datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query
from pydantic import BeforeValidator, Field

from hippocampus.contracts.limits import (
    IDENTIFIER_PATTERN,
    MAX_CURSOR_CHARS,
    MAX_HISTORY_LIMIT,
    MAX_IDEMPOTENCY_KEY_CHARS,
)
from hippocampus.contracts.models import rfc_3339
from hippocampus.contracts.recall import MAX_LIST_LIMIT
from hippocampus.contracts.records import MAX_RECORD_LIST_LIMIT

TenantId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="Tenant identifier")]
UserId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="User identifier")]
AgentId = Annotated[
    str,
    Path(pattern=IDENTIFIER_PATTERN, description="Agent identifier: its private scope of the user's memory"),
]
JobId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="Job identifier")]
FactId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="Fact identifier")]
EpisodeId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="Episode (item) identifier")]
RecordId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="Record identifier")]
ReceiptId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="Deletion receipt identifier")]

_DIGITS = re.compile(r"[0-9]+")


def _digits_only(value: Any) -> Any:
    """A query integer is written in ASCII digits alone (docs/api.md "Limits"): pydantic would also
    read `5.0`, ` 5`, `+5` and `5_0` as 5."""
    if isinstance(value, str) and _DIGITS.fullmatch(value) is None:
        raise ValueError("must be written in digits only (no sign, space or decimal point)")
    return value


# The bounds come before the digits check: so the OpenAPI document keeps `minimum` and `maximum`.
HistoryLimit = Annotated[
    int,
    Field(ge=1, le=MAX_HISTORY_LIMIT),
    BeforeValidator(_digits_only),
    Query(description="Versions to return, newest first"),
]
ListLimit = Annotated[
    int,
    Field(ge=1, le=MAX_LIST_LIMIT),
    BeforeValidator(_digits_only),
    Query(description="Entries to return, newest first"),
]
ListCursor = Annotated[
    str | None,
    Query(min_length=1, max_length=MAX_CURSOR_CHARS, description="`next_cursor` of the previous page"),
]
ExportCursor = Annotated[
    str | None,
    Query(min_length=1, max_length=MAX_CURSOR_CHARS, description="`next_cursor` of the previous page"),
]
RecordLimit = Annotated[
    int,
    Field(ge=1, le=MAX_RECORD_LIST_LIMIT),
    BeforeValidator(_digits_only),
    Query(description="Records to return, newest first"),
]


def _instant(value: Any) -> Any:
    """RFC 3339 with a Z or an offset, as items' `occurred_at` (docs/api.md "Records")."""
    return rfc_3339(value) if value is not None else None


AsOf = Annotated[
    datetime | None,
    BeforeValidator(_instant),
    Query(description="Only the records true at this time (RFC 3339), current or invalidated since"),
]
KnownAt = Annotated[
    datetime | None,
    BeforeValidator(_instant),
    Query(description="Only the records the service held at this time (RFC 3339)"),
]


def _boolean(value: Any) -> Any:
    """`true` or `false`, written so: pydantic would also read `1`, `yes` and `on`."""
    if isinstance(value, str) and value not in ("true", "false"):
        raise ValueError("must be true or false")
    return value == "true" if isinstance(value, str) else value


IncludeInvalidated = Annotated[
    bool,
    BeforeValidator(_boolean),
    Query(description="Invalidated records too (without as_of or known_at: current ones only)"),
]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,  # an empty key is refused, not taken for no key (docs/api.md "Limits")
        max_length=MAX_IDEMPOTENCY_KEY_CHARS,
        description="Replays return the first response",
    ),
]
IfMatch = Annotated[
    str | None,
    Header(
        alias="If-Match",
        description='The expected version as an ETag, e.g. "3" (one read before a delete never matches)',
    ),
]
