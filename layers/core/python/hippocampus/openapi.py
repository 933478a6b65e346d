"""The OpenAPI 3.1 document of the whole API, generated from the routes of both functions."""

from functools import lru_cache
from typing import Any

from hippocampus import __version__
from hippocampus.models import ErrorEnvelope


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    """Built on first request: the read path's cold start never pays for it."""
    import json

    from aws_lambda_powertools.event_handler import APIGatewayRestResolver

    from hippocampus.read_api import router as read_router
    from hippocampus.write_api import router as write_router

    app = APIGatewayRestResolver(enable_validation=True)
    app.include_router(read_router)
    app.include_router(write_router)
    document: dict[str, Any] = json.loads(
        app.get_openapi_json_schema(
            title="Hippocampus on AWS",
            version=__version__,
            description="Persistent, per-user memory for LLM applications. Every route uses IAM (SigV4) auth.",
        )
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")["$defs"])
    schemas["ErrorEnvelope"] = {
        k: v
        for k, v in ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}").items()
        if k != "$defs"
    }
    return document
