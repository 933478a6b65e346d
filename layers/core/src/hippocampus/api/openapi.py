"""`GET /v1/openapi.json`: the OpenAPI 3.1 document of the whole API, from the routes of every function."""

import json
from functools import lru_cache
from typing import Any

from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hippocampus import __version__
from hippocampus.contracts.models import ErrorEnvelope
from hippocampus.contracts.routes import OPENAPI_PATH

router = APIGatewayRouter()


@router.get(OPENAPI_PATH, summary="The OpenAPI 3.1 document of this API", include_in_schema=False)
def openapi() -> dict[str, Any]:
    return openapi_document()


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    """Built on the first request for it: the read path's cold start never pays for it, nor for the
    write routes' models."""
    from hippocampus.api import read_routes, recall_routes, write_routes
    from hippocampus.api.resolver import build_resolver

    app = build_resolver()
    app.include_router(read_routes.router)
    app.include_router(write_routes.router)
    app.include_router(recall_routes.router)
    document: dict[str, Any] = json.loads(
        app.get_openapi_json_schema(
            title="Hippocampus on AWS",
            version=__version__,
            description="Persistent, per-user memory for LLM applications. Every route uses IAM (SigV4) auth.",
        )
    )
    error_schema = ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(error_schema.pop("$defs"))
    schemas["ErrorEnvelope"] = error_schema
    return document
