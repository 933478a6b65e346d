"""Path, query and header parameters of the routes, with the OpenAPI error responses they share."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

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

ERROR_RESPONSES: dict[int, OpenAPIResponse] = {
    status: {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}},
    }
    for status, description in {
        400: "Malformed JSON",
        415: "The body is not JSON (Content-Type)",
        404: "Unknown route, job or fact",
        409: "Version, idempotency or write conflict",
        413: "Body over 1 MiB",
        422: "Schema or limit violation",
        429: "Throttled",
        503: "A dependency is unavailable",
    }.items()
}
