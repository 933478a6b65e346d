"""Path, query and header parameters of the routes (their responses: api/openapi_responses.py)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query

from hippocampus.contracts.limits import (
    IDENTIFIER_PATTERN,
    MAX_CURSOR_CHARS,
    MAX_HISTORY_LIMIT,
    MAX_IDEMPOTENCY_KEY_CHARS,
)
from hippocampus.contracts.recall import MAX_LIST_LIMIT

TenantId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="Tenant identifier")]
UserId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="User identifier")]
JobId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="Job identifier")]
FactId = Annotated[str, Path(pattern=IDENTIFIER_PATTERN, description="Fact identifier")]
HistoryLimit = Annotated[
    int, Query(ge=1, le=MAX_HISTORY_LIMIT, description="Versions to return, newest first")
]
ListLimit = Annotated[int, Query(ge=1, le=MAX_LIST_LIMIT, description="Entries to return, newest first")]
ListCursor = Annotated[
    str | None,
    Query(min_length=1, max_length=MAX_CURSOR_CHARS, description="`next_cursor` of the previous page"),
]
ExportCursor = Annotated[
    str | None,
    Query(min_length=1, max_length=MAX_CURSOR_CHARS, description="`next_cursor` of the previous page"),
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
    str | None, Header(alias="If-Match", description='The expected version as an ETag, e.g. "3"')
]
