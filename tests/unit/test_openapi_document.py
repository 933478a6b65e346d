"""The OpenAPI document is one a generator can use (docs/api.md): readable operation ids, a success
with a schema and the error envelope for each status of every operation, the ETag header, SigV4,
no unused schemas; `docs/openapi.json` is the served document; a generated client works."""

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate

from hippocampus.api import openapi
from hippocampus.api.entry import api_function
from hippocampus.contracts import routes
from local_stack.apigateway import HttpRequest, build_event
from tests.support.fakes import Ports
from tests.support.lambda_harness import Context
from tools.openapi import render

ROOT = Path(__file__).resolve().parents[2]
CHECKED_IN = ROOT / "docs" / "openapi.json"
SCHEMA_PREFIX = "#/components/schemas/"

OPERATIONS = {
    ("GET", routes.HEALTH_PATH): ("getHealth", 200),
    ("GET", routes.MEMORY_PATH): ("getMemory", 200),
    ("POST", routes.MEMORY_PATH): ("ingestMemory", 202),
    ("PUT", routes.MEMORY_PATH): ("putMemory", 200),
    ("DELETE", routes.MEMORY_PATH): ("deleteMemory", 204),
    ("DELETE", routes.FACT_PATH): ("deleteFact", 204),
    ("GET", routes.HISTORY_PATH): ("getHistory", 200),
    ("GET", routes.EXPORT_PATH): ("exportMemory", 200),
    ("GET", routes.JOB_PATH): ("getJob", 200),
    ("GET", routes.FACTS_PATH): ("listFacts", 200),
    ("GET", routes.EPISODES_PATH): ("listEpisodes", 200),
    ("GET", routes.RECORDS_PATH): ("listRecords", 200),
    ("GET", routes.JOBS_PATH): ("listJobs", 200),
    ("GET", routes.DELETION_PATH): ("getDeletion", 200),
    ("GET", routes.USERS_PATH): ("listUsers", 200),
    ("GET", routes.USAGE_PATH): ("getUsage", 200),
    ("DELETE", routes.RECORD_PATH): ("deleteRecord", 204),
    ("DELETE", routes.EPISODE_PATH): ("forgetEpisode", 202),
    ("POST", routes.QUERY_PATH): ("queryMemory", 200),
    ("POST", routes.CONTEXT_PATH): ("getContext", 200),
}
# docs/api.md "Agent scopes": the same routes under `…/agents/{agent_id}/`, "Agent" in each id.
_AGENT_PATHS = {
    path: routes.agent_path(path)
    for path in (
        routes.MEMORY_PATH,
        routes.FACT_PATH,
        routes.HISTORY_PATH,
        routes.EXPORT_PATH,
        routes.FACTS_PATH,
        routes.EPISODES_PATH,
        routes.RECORDS_PATH,
        routes.JOBS_PATH,
        routes.DELETION_PATH,
        routes.RECORD_PATH,
        routes.EPISODE_PATH,
        routes.QUERY_PATH,
        routes.CONTEXT_PATH,
    )
}
_AGENT_IDS = {
    "getMemory": "getAgentMemory",
    "ingestMemory": "ingestAgentMemory",
    "putMemory": "putAgentMemory",
    "deleteMemory": "deleteAgentMemory",
    "deleteFact": "deleteAgentFact",
    "getHistory": "getAgentHistory",
    "exportMemory": "exportAgentMemory",
    "listFacts": "listAgentFacts",
    "listEpisodes": "listAgentEpisodes",
    "listRecords": "listAgentRecords",
    "listJobs": "listAgentJobs",
    "getDeletion": "getAgentDeletion",
    "deleteRecord": "deleteAgentRecord",
    "forgetEpisode": "forgetAgentEpisode",
    "queryMemory": "queryAgentMemory",
    "getContext": "getAgentContext",
}
OPERATIONS[("GET", routes.AGENT_JOB_PATH)] = ("getAgentJob", 200)
OPERATIONS |= {
    (method, _AGENT_PATHS[path]): (_AGENT_IDS[operation_id], status)
    for (method, path), (operation_id, status) in list(OPERATIONS.items())
    if path in _AGENT_PATHS
}
# docs/api.md "Errors": what any request may meet, before routing or at API Gateway.
EVERY_OPERATION_ERRORS = {400, 403, 404, 413, 415, 422, 429, 500, 502, 504}


def send(functions: dict[str, Any], request: HttpRequest) -> tuple[int, dict[str, str], bytes]:
    """`request` through the function API Gateway would route it to, as the local stack does."""
    function, event = build_event(request, "local")
    response = functions[function](event, Context())
    headers = dict(response.get("headers") or {})
    headers |= {key: ", ".join(values) for key, values in (response.get("multiValueHeaders") or {}).items()}
    return response["statusCode"], headers, (response.get("body") or "").encode()


def served_document() -> dict[str, Any]:
    # The get_memory function serves the document with this router (hippocampus.wiring).
    functions = {"get_memory": api_function([openapi.router], {})}
    status, _, body = send(functions, HttpRequest("GET", routes.OPENAPI_PATH, [], b"", "127.0.0.1"))
    assert status == 200
    document: dict[str, Any] = json.loads(body)
    return document


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return served_document()


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield method.upper(), path, operation


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def test_docs_openapi_json_is_the_served_document(document: dict[str, Any]) -> None:
    stale = "docs/openapi.json differs from GET /v1/openapi.json: run `make openapi` and commit it"
    assert CHECKED_IN.is_file(), stale
    assert json.loads(CHECKED_IN.read_text(encoding="utf-8")) == document, stale
    assert CHECKED_IN.read_text(encoding="utf-8") == render(document), stale  # as the tool writes it


def test_the_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_every_route_is_one_operation_with_a_readable_stable_id(document: dict[str, Any]) -> None:
    assert {(r.method, r.path) for r in routes.ROUTES if r.path != routes.OPENAPI_PATH} == set(OPERATIONS)
    found = {(method, path): operation["operationId"] for method, path, operation in operations(document)}
    assert found == {key: operation_id for key, (operation_id, _) in OPERATIONS.items()}


def test_each_operation_declares_its_success_with_a_schema(document: dict[str, Any]) -> None:
    for method, path, operation in operations(document):
        _, status = OPERATIONS[(method, path)]
        successes = {int(code) for code in operation["responses"] if int(code) < 400}
        with_304 = operation["operationId"] in {"getMemory", "getAgentMemory"}
        assert successes == ({200, 304} if with_304 else {status}), path
        response = operation["responses"][str(status)]
        if status == 204:
            assert "content" not in response, (method, path)
        else:
            schema = response["content"]["application/json"]["schema"]
            assert schema["$ref"].startswith(SCHEMA_PREFIX), (method, path, schema)  # a model, never null
    memory = document["paths"][routes.MEMORY_PATH]
    assert "content" not in memory["get"]["responses"]["304"]
    assert memory["post"]["responses"]["202"]["content"]["application/json"]["schema"] == {
        "$ref": SCHEMA_PREFIX + "JobsResponse"
    }


def test_the_etag_header_is_declared_where_the_memory_routes_set_it(document: dict[str, Any]) -> None:
    with_etag = {
        (method, path, code)
        for method, path, operation in operations(document)
        for code, response in operation["responses"].items()
        if "ETag" in response.get("headers", {})
    }
    assert with_etag == {
        ("GET", routes.MEMORY_PATH, "200"),
        ("GET", routes.MEMORY_PATH, "304"),
        ("PUT", routes.MEMORY_PATH, "200"),
        ("GET", routes.AGENT_MEMORY_PATH, "200"),
        ("GET", routes.AGENT_MEMORY_PATH, "304"),
        ("PUT", routes.AGENT_MEMORY_PATH, "200"),
    }


def test_every_error_status_has_the_envelope(document: dict[str, Any]) -> None:
    statuses: dict[str, set[int]] = {}
    for _, _, operation in operations(document):
        errors = {code: response for code, response in operation["responses"].items() if int(code) >= 400}
        for response in errors.values():
            assert response["content"] == {
                "application/json": {"schema": {"$ref": SCHEMA_PREFIX + "ErrorEnvelope"}}
            }
            assert response["description"].startswith("`"), response  # names the error codes
        statuses[operation["operationId"]] = {int(code) for code in errors}
    for operation_id, found in statuses.items():
        assert found >= EVERY_OPERATION_ERRORS, operation_id
        assert 405 not in found  # another method's answer, never this operation's
        # Every route but health reads or writes a store.
        assert (503 in found) == (operation_id != "getHealth"), operation_id
        with_conflicts = {"ingestMemory", "putMemory", "forgetEpisode"}
        with_conflicts |= {_AGENT_IDS[conflicting] for conflicting in with_conflicts}
        assert (409 in found) == (operation_id in with_conflicts), operation_id
    error_body = document["components"]["schemas"]["ErrorBody"]
    assert set(error_body["properties"]) == {"code", "message", "status", "details"}


def test_sigv4_is_the_one_security_scheme_applied_to_every_operation(document: dict[str, Any]) -> None:
    assert document["security"] == [{"sigv4": []}]
    assert document["components"]["securitySchemes"] == {
        "sigv4": {
            "type": "apiKey",
            "name": "Authorization",
            "in": "header",
            "description": 'AWS Signature Version 4 for the service `execute-api` (docs/api.md "Authentication")',
            "x-amazon-apigateway-authtype": "awsSigv4",
        }
    }
    assert all("security" not in operation for _, _, operation in operations(document))


def test_every_reference_resolves_and_every_schema_is_used(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert all(ref.startswith(SCHEMA_PREFIX) for ref in refs(document))
    assert {ref.removeprefix(SCHEMA_PREFIX) for ref in refs(document)} - set(schemas) == set()
    reached: set[str] = set()
    pending = {ref.removeprefix(SCHEMA_PREFIX) for ref in refs(document["paths"])}
    while pending:
        name = pending.pop()
        reached.add(name)
        pending |= {ref.removeprefix(SCHEMA_PREFIX) for ref in refs(schemas[name])} - reached
    assert set(schemas) == reached
    assert not {"HTTPValidationError", "ValidationError"} & set(schemas)  # Powertools' own, unused here


@pytest.fixture(scope="module")
def generated_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The package openapi-python-client generates from docs/openapi.json (under a second)."""
    work = tmp_path_factory.mktemp("generated")
    config = work / "config.yaml"
    config.write_text("post_hooks: []\n")  # no formatter run: only the generated code counts
    package = "hippocampus_generated_client"
    command = [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(CHECKED_IN)]
    command += ["--output-path", str(work / package), "--meta", "none", "--config", str(config)]
    result = subprocess.run([*command, "--fail-on-warning"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    sys.path.insert(0, str(work))
    try:
        yield importlib.import_module(package)
    finally:
        sys.path.remove(str(work))
        for name in [name for name in sys.modules if name.split(".")[0] == package]:
            del sys.modules[name]


def test_a_generated_client_calls_the_real_handlers(generated_client: ModuleType) -> None:
    package = generated_client.__name__
    memory = importlib.import_module(f"{package}.api.memory")
    models = importlib.import_module(f"{package}.models")
    functions = Ports().api_functions()

    def through_the_api(request: httpx.Request) -> httpx.Response:
        target, headers = request.url.raw_path.decode(), list(request.headers.items())
        status, headers, body = send(
            functions, HttpRequest(request.method, target, headers, request.content, "::1")
        )
        return httpx.Response(status, headers=headers, content=body)

    client = generated_client.Client(
        base_url="http://local.test", httpx_args={"transport": httpx.MockTransport(through_the_api)}
    )
    get_memory = importlib.import_module(f"{package}.api.memory.get_memory")
    empty = get_memory.sync_detailed("acme", "alice", client=client)
    assert empty.status_code == 200 and empty.headers["etag"] == '"0"'
    assert isinstance(empty.parsed, models.MemoryBody) and empty.parsed.version == 0

    fact = models.IngestItem.from_dict({"id": "pay", "text": "Pays through Stripe.", "infer": False})
    ingest = importlib.import_module(f"{memory.__name__}.ingest_memory")
    accepted = ingest.sync_detailed("acme", "alice", client=client, body=models.IngestRequest(items=[fact]))
    assert accepted.status_code == 202
    assert [job.status.value for job in accepted.parsed.jobs] == ["completed"]

    changed = get_memory.sync_detailed("acme", "alice", client=client, if_none_match='"0"')
    assert changed.status_code == 200 and changed.parsed.facts[0].id == "pay"  # a new fact, a new ETag
    etag = changed.headers["etag"]
    not_modified = get_memory.sync_detailed("acme", "alice", client=client, if_none_match=etag)
    assert not_modified.status_code == 304 and not_modified.parsed is None

    delete_fact = importlib.import_module(f"{memory.__name__}.delete_fact")
    assert delete_fact.sync_detailed("acme", "alice", "pay", client=client).status_code == 204
    missing = delete_fact.sync_detailed("acme", "alice", "pay", client=client)
    assert isinstance(missing.parsed, models.ErrorEnvelope)
    assert (missing.status_code, missing.parsed.error.code) == (404, "not_found")
