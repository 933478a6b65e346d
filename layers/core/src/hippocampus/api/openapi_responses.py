"""The OpenAPI responses each route declares: its success, the `ETag` header, its error statuses.

From docs/api.md "Routes", "Errors" and "Headers". Plain dicts, cheap to import on a cold start:
a schema given here is a `$ref` by model name (resolved when `api/openapi.py` builds the
document), and a success without one takes the schema of the handler's return annotation, so
declaring them builds no model. Every error body is the envelope of docs/api.md "Errors".
"""

from collections.abc import Mapping
from typing import Final

from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse, OpenAPIResponseHeader

from hippocampus.contracts.names import DELETION_RECEIPT_HEADER

JSON: Final = "application/json"
ERROR_ENVELOPE: Final = "ErrorEnvelope"


def schema_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_ETAG: Final[dict[str, OpenAPIResponseHeader]] = {
    "ETag": {
        "description": 'Names the memory body, never the same across a delete: `"<version>"` without facts '
        'for a user never deleted, `"<version>-<digest>"` (over the generation and the facts) otherwise',
        "schema": {"type": "string"},
    }
}

_RECEIPT: Final[dict[str, OpenAPIResponseHeader]] = {
    DELETION_RECEIPT_HEADER: {
        "description": "The id of the deletion receipt: `GET …/memory/deletions/{receipt_id}` tells what was erased",
        "schema": {"type": "string"},
    }
}

# What any request may meet: the checks before routing (api/entry.py) and API Gateway's own answers.
REQUEST_ERRORS: Final[Mapping[int, str]] = {
    400: "`malformed_json`: the body is not strict JSON, or not UTF-8",
    403: "`access_denied`, `invalid_signature` or `expired_token`: SigV4 refused (API Gateway)",
    404: "`not_found`: no such route, or the request is not signed (API Gateway)",
    413: "`payload_too_large`: the body is over 1 MiB",
    415: "`unsupported_media_type`: a body whose Content-Type is not JSON",
    422: "`validation_error`: a path id, parameter, header or field breaks the schema (`details` name them)",
    429: "`throttled`: over the stage's rate or burst limit (API Gateway)",
    500: "`internal_error`: an unexpected error",
    502: "`dependency_unavailable`: the function failed (API Gateway)",
    504: "`timeout`: the function did not answer in time (API Gateway)",
}
# What a route that reads or writes the stores may also meet.
STORAGE_ERRORS: Final[Mapping[int, str]] = {
    503: "`dependency_unavailable`: DynamoDB, S3 or SQS failed; retry"
}
_CURSOR: Final = REQUEST_ERRORS[422] + ", or a `cursor` this service did not give"


def success(
    description: str, *, model: str | None = None, etag: bool = False, receipt: bool = False
) -> OpenAPIResponse:
    """A success with a JSON body: `model`'s, else the one the handler's return annotation names."""
    response: OpenAPIResponse = {"description": description}
    if model is not None:
        response["content"] = {JSON: {"schema": schema_ref(model)}}
    return _with_headers(response, etag, receipt)


def no_body(description: str, *, etag: bool = False, receipt: bool = False) -> OpenAPIResponse:
    # Powertools fills in an absent `content`; an empty one stays, and `api/openapi.py` drops it.
    response: OpenAPIResponse = {"description": description, "content": {}}
    return _with_headers(response, etag, receipt)


def _with_headers(response: OpenAPIResponse, etag: bool, receipt: bool) -> OpenAPIResponse:
    headers = {**(_ETAG if etag else {}), **(_RECEIPT if receipt else {})}
    if headers:
        response["headers"] = headers
    return response


def error(description: str) -> OpenAPIResponse:
    return {"description": description, "content": {JSON: {"schema": schema_ref(ERROR_ENVELOPE)}}}


def responses(
    successes: Mapping[int, OpenAPIResponse], errors: Mapping[int, str] | None = None, *, storage: bool = True
) -> dict[int, OpenAPIResponse]:
    """`successes`, then every error status the route can answer: the request's, the stores' (when
    `storage`), and `errors`, the route's own (which may describe a shared status more precisely)."""
    statuses = {**REQUEST_ERRORS, **(STORAGE_ERRORS if storage else {}), **(errors or {})}
    return {**successes, **{status: error(statuses[status]) for status in sorted(statuses)}}


HEALTH: Final = responses({200: success("The service is up")}, storage=False)
GET_MEMORY: Final = responses(
    {
        200: success(
            "The memory and its facts (version 0 for a user never seen)", model="MemoryBody", etag=True
        ),
        304: no_body("Not modified: the memory still has an ETag `If-None-Match` named", etag=True),
    }
)
GET_AGENT_MEMORY: Final = responses(
    {
        200: success(
            "The user's shared memory and the agent's private one (each at version 0 when empty)",
            model="AgentMemoryBody",
            etag=True,
        ),
        304: no_body("Not modified: neither memory changed since the ETag `If-None-Match` named", etag=True),
    }
)
INGEST: Final = responses(
    {202: success("Accepted: one job per item, in item order")},
    {
        409: "`idempotency_conflict` (the key was used with another body, or is in progress) "
        "or `write_conflict` (the user's facts kept changing under the request for 3 s, or the user was deleted twice during it: send again)",
        422: REQUEST_ERRORS[422] + ", or `limit_exceeded`: facts per user or in total",
    },
)
PUT_MEMORY: Final = responses(
    {
        200: success(
            "The new memory, at a version the user never had (versions go on after a delete)", etag=True
        )
    },
    {
        409: "`version_conflict`: the memory is not at the expected version (one read before a delete "
        "never is), or changed meanwhile",
        422: REQUEST_ERRORS[422] + " (also no expected version, or a bad `If-Match`), "
        "or `limit_exceeded`: over `max_words` words or their character bound",
    },
)
DELETE_MEMORY: Final = responses(
    {
        204: no_body(
            "Forgotten: nothing of the user's content is kept; the receipt's id in `Deletion-Receipt`",
            receipt=True,
        )
    }
)
DELETE_AGENT_MEMORY: Final = responses(
    {
        204: no_body(
            "The agent's private scope is forgotten (the user's shared memory stays); the receipt's id "
            "in `Deletion-Receipt`",
            receipt=True,
        )
    }
)
DELETE_FACT: Final = responses(
    {204: no_body("The fact is deleted; the receipt's id in `Deletion-Receipt`", receipt=True)},
    {404: REQUEST_ERRORS[404] + "; or the user has no such fact"},
)
HISTORY: Final = responses({200: success("Past versions of the summary, newest first")})
EXPORT: Final = responses({200: success("Everything stored about the user, one page")}, {422: _CURSOR})
FACTS: Final = responses({200: success("One page of the user's facts, newest first")}, {422: _CURSOR})
EPISODES: Final = responses({200: success("One page of the user's episodes, newest first")}, {422: _CURSOR})
RECORDS: Final = responses(
    {200: success("One page of the user's records, newest first")},
    {422: _CURSOR + "; or `as_of` / `known_at` not RFC 3339 with an offset"},
)
DELETE_RECORD: Final = responses(
    {204: no_body("The record is deleted; the receipt's id in `Deletion-Receipt`", receipt=True)},
    {404: REQUEST_ERRORS[404] + "; or the user has no such record"},
)
FORGET_EPISODE: Final = responses(
    {
        202: success(
            "Forgotten: the episode and what it alone taught; the job rebuilds the summary; the receipt's "
            "id in `receipt_id` (and `Deletion-Receipt`)",
            receipt=True,
        )
    },
    {
        404: REQUEST_ERRORS[404] + "; or the user has no such episode",
        409: "`write_conflict`: the user's records kept changing under the request: send again",
    },
)
JOB: Final = responses(
    {200: success("The job")},
    {404: REQUEST_ERRORS[404] + "; or the job is unknown, expired, erased by a delete, or another tenant's"},
)
AGENT_JOB: Final = responses(
    {200: success("The job")},
    {404: REQUEST_ERRORS[404] + "; or no such job of the agent's scope or of the user's shared memory"},
)
DELETION: Final = responses(
    {200: success("The receipt: what the delete erased, per store, in counts; the generation and the times")},
    {404: REQUEST_ERRORS[404] + "; or no such receipt of this user (unknown, expired, or another user's)"},
)
JOBS: Final = responses({200: success("One page of the user's jobs, newest first")}, {422: _CURSOR})
USERS: Final = responses(
    {200: success("One page of the tenant's users with a summary or facts stored, by user id")},
    {422: _CURSOR},
)
USAGE: Final = responses({200: success("The tenant's LLM calls and tokens of the UTC day, and its budget")})
QUERY: Final = responses({200: success("The user's facts, records and episodes ranked for the query")})
CONTEXT: Final = responses({200: success("A block of context, within `max_words`")})
