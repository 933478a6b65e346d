"""`GET /v1/openapi.json`: the OpenAPI 3.1 document of the whole API, from the routes of every function.

Ready for a client generator (docs/api.md, the paragraph on OpenAPI): each operation has a readable `operationId`,
its success with a schema, and the error envelope for each error status it can answer
(`api/openapi_responses.py`); SigV4 is the one security scheme, as in API Gateway's own export;
every schema in the components is used. `docs/openapi.json` is this document (`make openapi`).
"""

import json
from functools import lru_cache
from typing import Any

from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hippocampus import __version__
from hippocampus.contracts.routes import OPENAPI_PATH

router = APIGatewayRouter()

SIGV4: dict[str, Any] = {
    "type": "apiKey",
    "name": "Authorization",
    "in": "header",
    "description": 'AWS Signature Version 4 for the service `execute-api` (docs/api.md "Authentication")',
    # How API Gateway names IAM auth in its own OpenAPI export and import.
    "x-amazon-apigateway-authtype": "awsSigv4",
}
_SCHEMA_PREFIX = "#/components/schemas/"


@router.get(
    OPENAPI_PATH,
    summary="The OpenAPI 3.1 document of this API",
    operation_id="getOpenapi",
    include_in_schema=False,
)
def openapi() -> dict[str, Any]:
    return openapi_document()


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    """Built on the first request for it: the read path's cold start never pays for it, nor for the
    write routes' models."""
    from aws_lambda_powertools.event_handler.openapi.models import APIKey

    from hippocampus.api import read_routes, recall_routes, write_routes
    from hippocampus.api.openapi_responses import ERROR_ENVELOPE
    from hippocampus.api.resolver import build_resolver
    from hippocampus.contracts.models import ErrorEnvelope

    app = build_resolver()
    app.include_router(read_routes.router)
    app.include_router(write_routes.router)
    app.include_router(recall_routes.router)
    document: dict[str, Any] = json.loads(
        app.get_openapi_json_schema(
            title="Hippocampus on AWS",
            version=__version__,
            description="Persistent, per-user memory for LLM applications. Every route uses IAM (SigV4) auth.",
            security_schemes={"sigv4": APIKey.model_validate(SIGV4)},
            security=[{"sigv4": []}],
        )
    )
    error_schema = ErrorEnvelope.model_json_schema(
        ref_template=_SCHEMA_PREFIX + "{model}", mode="serialization"
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(error_schema.pop("$defs"))
    schemas[ERROR_ENVELOPE] = error_schema
    for operations in document["paths"].values():
        for operation in operations.values():
            for response in operation["responses"].values():
                if response.get("content") == {}:  # a response without a body (204, 304)
                    del response["content"]
    # Powertools always adds its own validation error schemas; every error here is the envelope.
    used = _used_schemas(document)
    document["components"]["schemas"] = {name: schema for name, schema in schemas.items() if name in used}
    return document


def _used_schemas(document: dict[str, Any]) -> set[str]:
    """The component schemas the paths refer to, directly or through other schemas."""
    schemas = document["components"]["schemas"]
    used: set[str] = set()
    pending = _refs({key: value for key, value in document.items() if key != "components"})
    while pending:
        name = pending.pop()
        if name not in used:
            used.add(name)
            pending |= _refs(schemas.get(name, {}))
    return used


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {ref.removeprefix(_SCHEMA_PREFIX)} if isinstance(ref := node.get("$ref"), str) else set()
        return found.union(*(_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(value) for value in node))
    return set()
