"""Write the client's models (client/src/hippocampus_client/models.py) from docs/openapi.json.

The service publishes its bodies in docs/openapi.json (`make openapi`); the client's pydantic
models are generated from it, so the two cannot drift: tests/client/test_client_models.py fails
while the committed module differs from what this script makes of the document.

    .venv/bin/python client/scripts/generate_models.py          # rewrite models.py
    .venv/bin/python client/scripts/generate_models.py --check  # exit 1 when it is stale

What the document does not say and the client decides is in `CLIENT_MODELS` below: the
client's public names, which fields of an answer it cannot do without (every other field has a
default, so a partial answer still parses), and what a model has beyond the body (`etag`, from a
header; `Job.final`, from model_base.py). The limits (lengths, ranges, patterns) are the
service's to check: the client sends what it is given and reports the 422.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "docs" / "openapi.json"
MODULE = ROOT / "client" / "src" / "hippocampus_client" / "models.py"
SCHEMA_PREFIX = "#/components/schemas/"
INDENT = "    "
WIDTH = 110  # ruff's line length (pyproject.toml)


@dataclass(frozen=True)
class ClientField:
    """A field the client adds to a model: not in the body, so not in the document."""

    name: str
    annotation: str
    default: str
    comment: str


@dataclass(frozen=True)
class ClientModel:
    name: str  # the public name (`from hippocampus_client import ...`)
    schema: str  # its schema in docs/openapi.json
    doc: str
    requires: tuple[str, ...] = ()  # answers: the fields without which the answer is malformed
    request: bool = False  # sent, not read: every field optional, None meaning "not sent"
    mixins: tuple[str, ...] = ()  # from model_base.py
    client_fields: tuple[ClientField, ...] = ()


# Dependencies first: a model is declared after the models its fields name.
CLIENT_MODELS = (
    ClientModel("Fact", "Fact", "One fact of a user's memory.", requires=("id", "text")),
    ClientModel(
        "Memory",
        "MemoryBody",
        "`GET …/memory`: the summary (`memory`, None before a first version) and the facts.",
        requires=("tenant_id", "user_id"),
        client_fields=(
            ClientField(
                "etag",
                "str | None",
                "None",
                "The ETag header of the answer (HTTP only): `If-Match` for `put`.",
            ),
        ),
    ),
    ClientModel(
        "MemoryScopes",
        "MemoryScopes",
        "The two scopes an agent reads of a user's memory: `shared`, the user's own (what every agent "
        "and the user's routes see), and `agent`, the agent's private one (with its `agent_id`).",
        requires=("shared", "agent"),
    ),
    ClientModel(
        "AgentMemory",
        "AgentMemoryBody",
        "`GET …/agents/{agent_id}/memory`: an agent's view of a user's memory, both scopes "
        '(docs/api.md "Agent scopes").',
        requires=("tenant_id", "user_id", "agent_id", "scopes"),
        client_fields=(
            ClientField(
                "etag",
                "str | None",
                "None",
                "The ETag header of the answer (HTTP only), which covers both scopes.",
            ),
        ),
    ),
    ClientModel("JobError", "JobError", "Why a job failed.", requires=("code",)),
    ClientModel(
        "Job",
        "Job",
        'One ingested item on its way to the memory (docs/api.md "Jobs"); `final` once it is done.',
        requires=("job_id", "status"),
        mixins=("SettlesWhenFinal",),
    ),
    ClientModel(
        "MemoryVersion", "HistoryVersion", "One entry of `GET …/memory/history`.", requires=("version",)
    ),
    ClientModel(
        "Episode", "Episode", 'One condensed turn (docs/api.md "Episodes").', requires=("id", "text")
    ),
    ClientModel(
        "MemoryRecord",
        "MemoryRecord",
        'One dated statement about the user (docs/api.md "Records"); `valid_to`, `invalidated_at` and '
        "`superseded_by` are set once a newer statement replaced it.",
        requires=("id", "text"),
    ),
    ClientModel(
        "QueryResult", "QueryResult", "One ranked fact, record or episode.", requires=("type", "id", "text")
    ),
    ClientModel("Retrieval", "Retrieval", "How the results were found: the embeddings, or words only."),
    ClientModel(
        "QueryAnswer",
        "QueryResponse",
        "`POST …/memory/query`: ranked facts and episodes, and the summary unless excluded.",
    ),
    ClientModel("ContextSource", "ContextSource", "What a context block was built from.", requires=("type",)),
    ClientModel(
        "Context",
        "ContextResponse",
        "`POST …/memory/context`: the block to prepend to a prompt, at most `max_words` words.",
        requires=("context",),
    ),
    ClientModel(
        "Export",
        "ExportDocument",
        "`GET …/memory/export`, every page merged into one document (`next_cursor` is then None).",
        requires=("tenant_id", "user_id"),
    ),
    ClientModel("DynamoDbErased", "DynamoDbErased", "Items of the memory table a delete erased, by kind."),
    ClientModel("S3Erased", "S3Erased", "Objects of the archive bucket a delete erased."),
    ClientModel("QueueErased", "QueueErased", "Queued items a delete caught: their messages change nothing."),
    ClientModel("VectorsErased", "VectorsErased", "Embeddings erased with the items they were stored on."),
    ClientModel(
        "ErasedCounts",
        "ErasedCounts",
        "What a delete erased, per store, in counts.",
        requires=("dynamodb", "s3", "queue", "vectors"),
    ),
    ClientModel(
        "DeletionReceipt",
        "DeletionReceipt",
        "What a delete erased (the user, a fact, a record or an episode), in counts, with no content "
        '(docs/api.md "Deletion receipts").',
        requires=("receipt_id", "scope", "erased"),
    ),
    ClientModel(
        "TenantUsage",
        "TenantUsage",
        "`GET /v1/tenants/{tenant_id}/usage`: the tenant's LLM calls and tokens of the UTC day against its "
        'daily token budget (docs/api.md "Usage"); `budget` and `remaining` are None without a budget.',
        # `budget` and `remaining` too: read as None, a missing one would say "no budget".
        requires=("tenant_id", "day", "tokens", "budget", "remaining"),
    ),
    ClientModel("Pair", "ConversationPair", "One user turn and the assistant's answer.", request=True),
    ClientModel(
        "Item",
        "IngestItem",
        'One item to ingest (docs/api.md "Ingest"); exactly one of `text` and `user_assistant_pairs`. '
        "A field left None is not sent (the service's default applies); an unknown field is sent as "
        "given, and the service refuses what it does not know.",
        request=True,
    ),
)


class SchemaError(ValueError):
    """The document has a shape this generator does not translate (say so rather than guess)."""


def render(document: dict[str, Any]) -> str:
    """The source of models.py for `document` (docs/openapi.json), formatted as ruff would."""
    schemas = document["components"]["schemas"]
    names = {model.schema: model.name for model in CLIENT_MODELS}
    chunks: list[str] = []
    aliases: dict[str, str] = {}  # the Literals too long for their field's line, by the name given them
    for model in CLIENT_MODELS:
        before = set(aliases)
        source = _render_class(model, schemas[model.schema], names, aliases)
        chunks += [_render_alias(name, aliases[name]) for name in aliases if name not in before]
        chunks.append(source)
    mixins = sorted({mixin for model in CLIENT_MODELS for mixin in model.mixins})
    public = sorted([*(model.name for model in CLIENT_MODELS), *aliases])
    header = [
        '"""The API\'s bodies as the client reads and sends them: generated from docs/openapi.json.',
        "",
        'Do not edit: client/scripts/generate_models.py writes this file (client/README.md, "Models"),',
        "and tests/client/test_client_models.py fails while it differs from what the document gives.",
        "Timestamps stay ISO 8601 strings, as sent.",
        '"""',
        "",
        "from typing import Any, Literal",
        "",
        "from pydantic import Field",
        "",
        f"from .model_base import {', '.join(['FINAL_STATUSES', 'ApiModel', *mixins])}",
        "",
        "__all__ = [",
        *[f'    "{name}",' for name in ["FINAL_STATUSES", *public]],
        "]",
    ]
    return "\n".join(header) + "\n" + "".join(f"\n\n{source}" for source in chunks)


def _render_class(
    model: ClientModel, schema: dict[str, Any], names: dict[str, str], aliases: dict[str, str]
) -> str:
    properties: dict[str, Any] = schema.get("properties", {})
    sent = [name for name in schema.get("required", []) if name in properties]
    unknown = set(model.requires) - set(sent)
    if unknown:
        raise SchemaError(f"{model.name} requires {sorted(unknown)}, which {model.schema} does not require")
    # The document's `required` keeps the service's field order; the rest follow by name.
    order = sent + sorted(set(properties) - set(sent))
    lines = [f"class {model.name}({', '.join([*model.mixins, 'ApiModel'])}):"]
    lines += _docstring(model, sent)
    lines.append("")
    lines += [_render_field(model, name, properties[name], names, aliases) for name in order]
    for extra in model.client_fields:
        lines += [f"{INDENT}# {extra.comment}", f"{INDENT}{extra.name}: {extra.annotation} = {extra.default}"]
    return "\n".join(lines) + "\n"


def _docstring(model: ClientModel, sent: list[str]) -> list[str]:
    text = model.doc
    if not model.request and sent:
        text += " Always in the answer: " + ", ".join(f"`{name}`" for name in sent) + "."
    wrapped = textwrap.wrap(text, WIDTH - len(INDENT) - 3, break_on_hyphens=False)
    if len(wrapped) == 1:
        return [f'{INDENT}"""{wrapped[0]}"""']
    body = [f"{INDENT}{line}" for line in wrapped[1:]]
    return [f'{INDENT}"""{wrapped[0]}', *body[:-1], f'{body[-1]}"""']


def _render_field(
    model: ClientModel, name: str, schema: dict[str, Any], names: dict[str, str], aliases: dict[str, str]
) -> str:
    """The field's line; a `Literal` that would make it longer than ruff's line is named at module
    level (`MemoryRecord.category` is a `MemoryRecordCategory`), which keeps the line whole."""
    line = _field_line(model, name, schema, python_type(schema, names))
    if len(line) <= WIDTH:
        return line
    literal = LITERAL.search(line)
    if literal is None:
        raise SchemaError(f"{model.name}.{name}: no way to fit its line in {WIDTH} characters")
    alias = model.name + "".join(part.capitalize() for part in name.split("_"))
    aliases[alias] = literal[0]
    line = line.replace(literal[0], alias, 1)
    if len(line) > WIDTH:
        raise SchemaError(f"{model.name}.{name}: no way to fit its line in {WIDTH} characters")
    return line


def _field_line(model: ClientModel, name: str, schema: dict[str, Any], annotation: str) -> str:
    if name in model.requires:
        return f"{INDENT}{name}: {annotation}"
    nullable = annotation.endswith(" | None")
    if model.request:
        default = "None"  # not sent: the service applies its own default
    elif "default" in schema:
        default = python_literal(schema["default"])
    elif annotation.startswith("list["):
        default = "Field(default_factory=list)"
    elif annotation.startswith("dict["):
        default = "Field(default_factory=dict)"
    elif annotation in ZERO:
        default = ZERO[annotation]
    else:
        default = "None"
    if default == "None" and not nullable:
        annotation += " | None"
    return f"{INDENT}{name}: {annotation} = {default}"


# `Literal["a", "b"]`: the values are JSON strings (`python_literal`), which may hold a `]`.
LITERAL = re.compile(r'Literal\[(?:"(?:[^"\\]|\\.)*"|[^\]"])*\]')


def _render_alias(name: str, literal: str) -> str:
    """`name = Literal[...]`, wrapped as ruff wraps one pair of brackets: the values on one line
    of their own when they fit there, else one a line with a trailing comma."""
    line = f"{name} = {literal}"
    if len(line) <= WIDTH:
        return line + "\n"
    values = literal.removeprefix("Literal[").removesuffix("]")
    if len(INDENT + values) <= WIDTH:
        return f"{name} = Literal[\n{INDENT}{values}\n]\n"
    each = [f"{INDENT}{json.dumps(value)}," for value in json.loads(f"[{values}]")]
    return "\n".join([f"{name} = Literal[", *each, "]"]) + "\n"


# A number the answer leaves out reads as zero, so `f"{result.score:.3f}"` never meets a None.
ZERO = {"int": "0", "float": "0.0", "bool": "False"}
SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


def python_literal(value: Any) -> str:
    """A JSON value as Python source, quoted as ruff formats it."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def python_type(schema: dict[str, Any], names: dict[str, str]) -> str:
    """The annotation of a JSON Schema, as the service's pydantic models produce them."""
    if "$ref" in schema:
        target = schema["$ref"].removeprefix(SCHEMA_PREFIX)
        if target not in names:
            raise SchemaError(f"{target} has no client model (add it to CLIENT_MODELS)")
        return names[target]
    if "anyOf" in schema:
        options = [python_type(option, names) for option in schema["anyOf"] if option != {"type": "null"}]
        nullable = len(options) < len(schema["anyOf"])
        return " | ".join(options + ["None"] * nullable)
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if values is not None:
        return f"Literal[{', '.join(json.dumps(value) for value in values)}]"
    kind = schema.get("type")
    if kind == "array":
        return f"list[{python_type(schema['items'], names)}]"
    if kind == "object" and "properties" not in schema and schema.get("additionalProperties", True) is True:
        return "dict[str, Any]"
    if kind in SCALARS:
        return SCALARS[kind]
    raise SchemaError(f"no translation for {json.dumps(schema, sort_keys=True)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 when models.py is stale")
    check = parser.parse_args(argv).check
    source = render(json.loads(DOCUMENT.read_text(encoding="utf-8")))
    if check:
        stale = MODULE.read_text(encoding="utf-8") != source
        print(f"{MODULE.relative_to(ROOT)} is {'stale' if stale else 'up to date'}")
        return int(stale)
    MODULE.write_text(source, encoding="utf-8")
    print(f"wrote {MODULE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
