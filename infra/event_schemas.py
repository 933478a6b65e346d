"""The change events' schemas, as the stack's EventBridge schema registry holds them (docs/api.md "Events").

Generated at synth from the detail models the events function publishes (`DETAIL_MODELS`), in the form
of EventBridge's own discovered schemas: an OpenAPI 3.0 document whose `AWSEvent` envelope names the
event's source and detail type and refers to the detail's schema, all under `components.schemas`.
pydantic writes JSON Schema 2020-12, so the few keywords OpenAPI 3.0 spells otherwise are rewritten
(`"type": "null"` alternatives become `nullable`, `const` a one-value `enum`).

No aws_cdk import: the tests read the documents without a synth.
"""

from __future__ import annotations

from typing import Any, Final

from hippocampus.contracts.events import DETAIL_MODELS, EVENT_SOURCE

OPENAPI_VERSION: Final = "3.0.0"
ENVELOPE: Final = "AWSEvent"
REF_TEMPLATE: Final = "#/components/schemas/{model}"
_NULL: Final = {"type": "null"}


def schema_name(detail_type: str) -> str:
    """`hippocampus@MemoryUpdated`: source and detail type, as EventBridge names discovered schemas."""
    return f"{EVENT_SOURCE}@{detail_type.replace(' ', '')}"


def schema_document(detail_type: str) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one detail type: the envelope, the detail and the models it holds."""
    model = DETAIL_MODELS[detail_type]
    detail = model.model_json_schema(ref_template=REF_TEMPLATE, mode="serialization")
    nested = detail.pop("$defs", {})
    schemas = {ENVELOPE: _envelope(detail_type, model.__name__), model.__name__: detail, **nested}
    return {
        "openapi": OPENAPI_VERSION,
        "info": {"version": "1.0.0", "title": detail_type.replace(" ", "")},
        "paths": {},
        "components": {"schemas": {name: _openapi30(schema) for name, schema in schemas.items()}},
    }


def _envelope(detail_type: str, detail: str) -> dict[str, Any]:
    """The event as EventBridge delivers it (its metadata fields, all required as in EventBridge's discovered
    schemas), with this detail type's detail."""
    metadata = ("account", "detail-type", "id", "region", "resources", "source", "time", "version")
    properties: dict[str, Any] = {name: {"type": "string"} for name in metadata}
    properties["resources"] = {"type": "array", "items": {"type": "string"}}
    properties["time"] = {"type": "string", "format": "date-time"}
    return {
        "type": "object",
        "required": ["detail", *metadata],
        "x-amazon-events-detail-type": detail_type,
        "x-amazon-events-source": EVENT_SOURCE,
        "properties": {"detail": {"$ref": REF_TEMPLATE.format(model=detail)}, **properties},
    }


def _openapi30(node: Any) -> Any:
    """A JSON Schema 2020-12 node written in OpenAPI 3.0's dialect."""
    if isinstance(node, list):
        return [_openapi30(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _openapi30(value) for key, value in node.items()}
    if "const" in node:
        node["enum"] = [node.pop("const")]
    variants = node.get("anyOf")
    if isinstance(variants, list) and _NULL in variants:
        others = [variant for variant in variants if variant != _NULL]
        del node["anyOf"]
        if len(others) == 1 and "$ref" not in others[0]:
            node = others[0] | node  # `{"type": "string", "nullable": true, "title": ...}`
        else:  # a $ref takes no siblings in OpenAPI 3.0
            node["allOf" if len(others) == 1 else "anyOf"] = others
        node["nullable"] = True
    return node
