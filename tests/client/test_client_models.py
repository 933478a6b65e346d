"""The client's models are docs/openapi.json's bodies (client/README.md "Models"): the committed
module is what client/scripts/generate_models.py makes of the document, and, checked on their own,
the models have the document's field names, types, enums and no requirement the document lacks."""

import ast
import copy
import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import BaseModel

import hippocampus_client
from hippocampus_client import models

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "docs" / "openapi.json"
GENERATOR = ROOT / "client" / "scripts" / "generate_models.py"
Document = dict[str, Any]
Shape = frozenset[Any]


@cache
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_models", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def document() -> Document:
    loaded: Document = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    return loaded


def shape(schema: dict[str, Any], rename: Callable[[str], str]) -> Shape:
    """What a JSON Schema accepts, without titles, formats and limits (the service checks those):
    the alternatives, each a type, an enum, an array of a shape, or a model by its client name."""
    if "anyOf" in schema:
        return frozenset().union(*(shape(option, rename) for option in schema["anyOf"]))
    if "$ref" in schema:
        return frozenset({("model", rename(schema["$ref"].rsplit("/", 1)[-1]))})
    if "enum" in schema or "const" in schema:
        return frozenset({("enum", frozenset(schema.get("enum", [schema.get("const")])))})
    if schema.get("type") == "array":
        return frozenset({("array", shape(schema["items"], rename))})
    return frozenset({(schema.get("type"),)})


def describe(alternatives: Shape) -> str:
    """`string | null`, `enum[episode, fact]`, `array[model Fact]`: a shape for a person."""
    parts = []
    for kind, *rest in alternatives:
        if kind == "enum":
            parts.append(f"enum[{', '.join(sorted(map(str, rest[0])))}]")
        elif kind == "array":
            parts.append(f"array[{describe(rest[0])}]")
        else:
            parts.append(" ".join(map(str, [kind, *rest])))
    return " | ".join(sorted(parts))


def disagreements(model: type[BaseModel], schema: dict[str, Any], names: dict[str, str]) -> list[str]:
    """Where `model` (as pydantic describes it) and its schema in the document differ. The client
    may leave out a requirement (a partial answer still parses) and read a field as None when it
    does so, but it names the same fields, with the same types and enums, and requires nothing the
    document does not."""
    ours = model.model_json_schema(ref_template="{model}")
    client_only = {extra.name for extra in client_model(model.__name__).client_fields}
    our_fields = {name: field for name, field in ours["properties"].items() if name not in client_only}
    their_fields = schema.get("properties", {})
    our_required, their_required = set(ours.get("required", [])), set(schema.get("required", []))
    problems = [
        f"{model.__name__}.{name}: only in {'the document' if name in their_fields else 'the client'}"
        for name in sorted(set(our_fields) ^ set(their_fields))
    ]
    problems += [
        f"{model.__name__}.{name}: required by the client, not by the document"
        for name in sorted(our_required - their_required)
    ]
    for name in sorted(set(our_fields) & set(their_fields)):
        theirs = shape(their_fields[name], lambda ref: names.get(ref, f"unmapped {ref}"))
        mine = shape(our_fields[name], lambda ref: ref)
        absent_as_none = theirs | {("null",)}
        if mine != theirs and (name in our_required or mine != absent_as_none):
            problems.append(
                f"{model.__name__}.{name}: the client reads {describe(mine)}, the document says {describe(theirs)}"
            )
    return problems


def client_model(name: str) -> Any:
    return next(entry for entry in generator().CLIENT_MODELS if entry.name == name)


def every_disagreement(doc: Document) -> list[str]:
    names = {entry.schema: entry.name for entry in generator().CLIENT_MODELS}
    schemas = doc["components"]["schemas"]
    return [
        problem
        for entry in generator().CLIENT_MODELS
        for problem in disagreements(getattr(models, entry.name), schemas[entry.schema], names)
    ]


def test_the_committed_models_are_what_the_document_generates() -> None:
    committed = (ROOT / "client" / "src" / "hippocampus_client" / "models.py").read_text(encoding="utf-8")
    assert generator().render(document()) == committed, "run client/scripts/generate_models.py"


def test_the_client_models_have_the_shapes_of_the_document() -> None:
    assert every_disagreement(document()) == []


def test_every_model_the_client_exports_is_generated_from_the_document() -> None:
    exported = {
        name
        for name in hippocampus_client.__all__
        if isinstance(value := getattr(hippocampus_client, name), type)
        and issubclass(value, BaseModel)
        and value.__module__ == models.__name__
    }
    assert exported == {entry.name for entry in generator().CLIENT_MODELS}


def schema_of(doc: Document, name: str) -> dict[str, Any]:
    found: dict[str, Any] = doc["components"]["schemas"][name]
    return found


def rename_field(doc: Document) -> None:
    fact = schema_of(doc, "Fact")
    fact["properties"]["body"] = fact["properties"].pop("text")
    fact["required"] = ["body" if name == "text" else name for name in fact["required"]]


def stop_requiring(doc: Document) -> None:
    schema_of(doc, "Fact")["required"].remove("id")


def retype(doc: Document) -> None:
    schema_of(doc, "MemoryBody")["properties"]["version"]["type"] = "string"


def add_status(doc: Document) -> None:
    schema_of(doc, "Job")["properties"]["status"]["enum"].append("cancelled")


def drop_source_type(doc: Document) -> None:
    schema_of(doc, "ContextSource")["properties"]["type"]["enum"].remove("episode")


def renest(doc: Document) -> None:
    schema_of(doc, "QueryResponse")["properties"]["results"]["items"]["$ref"] = "#/components/schemas/Fact"


def add_field(doc: Document) -> None:
    schema_of(doc, "Episode")["properties"]["score"] = {"title": "Score", "type": "number"}


def retype_request(doc: Document) -> None:
    schema_of(doc, "IngestItem")["properties"]["infer"] = {"type": "string"}


DRIFTS = {
    "a renamed field": (rename_field, "Fact.text"),
    "a requirement the document dropped": (stop_requiring, "Fact.id"),
    "another type": (retype, "Memory.version"),
    "an added enum value": (add_status, "Job.status"),
    "a removed enum value": (drop_source_type, "ContextSource.type"),
    "another nested model": (renest, "QueryAnswer.results"),
    "a new field": (add_field, "Episode.score"),
    "another type in a request": (retype_request, "Item.infer"),
}


@pytest.mark.parametrize(("mutate", "field"), DRIFTS.values(), ids=DRIFTS.keys())
def test_a_document_that_drifted_from_the_models_fails_both_checks(
    mutate: Callable[[Document], None], field: str
) -> None:
    drifted = copy.deepcopy(document())
    mutate(drifted)
    assert any(problem.startswith(f"{field}:") for problem in every_disagreement(drifted))
    committed = generator().render(document())
    try:
        regenerated = generator().render(drifted)
    except generator().SchemaError:
        return  # the generator refuses a requirement the document dropped: stale all the same
    assert regenerated != committed


UNKNOWN_SHAPES = {
    "a model the client lacks": ({"$ref": "#/components/schemas/ErrorBody"}, "ErrorBody has no client model"),
    "an inline object": ({"type": "object", "properties": {"a": {"type": "string"}}}, "no translation"),
}


@pytest.mark.parametrize(("field", "refusal"), UNKNOWN_SHAPES.values(), ids=UNKNOWN_SHAPES.keys())
def test_a_shape_the_generator_does_not_know_is_refused_not_guessed(
    field: dict[str, Any], refusal: str
) -> None:
    unknown = copy.deepcopy(document())
    schema_of(unknown, "Episode")["properties"]["job_id"] = field
    with pytest.raises(generator().SchemaError, match=refusal):
        generator().render(unknown)


def test_the_generated_models_are_python_3_11() -> None:
    # The client supports Python 3.11 (client/pyproject.toml); the suite runs a newer one.
    ast.parse(generator().render(document()), feature_version=(3, 11))


@pytest.mark.parametrize(
    ("options", "schema"), [("QueryOptions", "QueryRequest"), ("ItemOptions", "IngestItem")]
)
def test_the_request_options_have_the_shapes_of_the_document(options: str, schema: str) -> None:
    """`add(..., **ItemOptions)` and `query(..., **QueryOptions)` send fields of the document's bodies."""
    from pydantic import TypeAdapter

    from hippocampus_client import base

    ours = TypeAdapter(getattr(base, options)).json_schema()["properties"]
    theirs = document()["components"]["schemas"][schema]["properties"]
    assert set(ours) <= set(theirs), f"{options} has fields the document lacks"
    for name in ours:
        mine, documented = shape(ours[name], lambda ref: ref), shape(theirs[name], lambda ref: ref)
        assert mine | {("null",)} == documented | {("null",)}, (
            f"{options}.{name}: the client sends {describe(mine)}, the document says {describe(documented)}"
        )


def ruff_formatted(source: str) -> str | None:
    """`source` as `ruff format` writes it with the project's settings; None without ruff."""
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        return None
    done = subprocess.run(
        [str(ruff), "format", "--stdin-filename", str(ROOT / "client" / "models.py"), "-"],
        input=source, capture_output=True, text=True, cwd=ROOT, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout


def test_a_literal_too_long_for_its_line_is_named_and_wrapped_as_ruff_would() -> None:
    source = generator().render(document())
    assert "    category: MemoryRecordCategory | None = None\n" in source
    assert 'MemoryRecordCategory = Literal[\n    "identity", "location", "work",' in source
    longer = copy.deepcopy(document())
    schema_of(longer, "MemoryRecord")["properties"]["category"]["enum"] += ["health", "education"]
    wrapped = generator().render(longer)
    assert 'MemoryRecordCategory = Literal[\n    "identity",\n    "location",\n' in wrapped  # one a line
    for rendered in (source, wrapped):
        ast.parse(rendered, feature_version=(3, 11))
        formatted = ruff_formatted(rendered)
        assert formatted in (None, rendered)
