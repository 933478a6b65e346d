"""The local stack's principals (docs/operations.md "Principals"): a request naming a principal in
`X-Hippocampus-Principal` is checked against that principal's grants (the patterns of infra's
`grant_tenant_access` and `grant_agent_access`, hippocampus/contracts/access.py) before any function
runs, and refused as the deployed API's ACCESS_DENIED gateway response refuses it; with
`MEMORY_LOCAL_REQUIRE_PRINCIPAL` every request but health and the OpenAPI document must name one.

In-process: the HTTP server and API Gateway emulation in front of the real API functions on the
in-memory fakes, each invocation recorded.
"""

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from hippocampus.contracts.access import PRINCIPAL_HEADER
from local_stack.__main__ import AUTH_LINE, PRINCIPALS_AUTH_LINE, _require_principal
from local_stack.apigateway import ApiGateway
from local_stack.http_server import ApiServer
from local_stack.lambda_invoke import LambdaInvokeApi
from tests.support.fakes import Ports
from tests.support.lambda_harness import Context

ACME = "/v1/tenants/acme"
ALICE = f"{ACME}/users/alice"
PLANNER = f"{ALICE}/agents/planner"


@dataclass
class Stack:
    port: int
    invoked: list[str] = field(default_factory=list)  # the functions API Gateway invoked, in order

    def call(
        self, method: str, path: str, *principals: str, body: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        """One request naming `principals` (none, one, or several headers); the status and JSON body."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.putrequest(method, path)
            for principal in principals:
                connection.putheader(PRINCIPAL_HEADER, principal)
            payload = json.dumps(body).encode() if body is not None else b""
            if body is not None:
                connection.putheader("Content-Type", "application/json")
            connection.putheader("Content-Length", str(len(payload)))
            connection.endheaders(payload)
            response = connection.getresponse()
            raw = response.read()
            return response.status, json.loads(raw) if raw else {}
        finally:
            connection.close()

    def reaches_a_function(self, method: str, path: str, *principals: str, **kwargs: Any) -> int:
        """The status of a request the emulated IAM lets through: a function answered it, not a 403."""
        before = len(self.invoked)
        status, body = self.call(method, path, *principals, **kwargs)
        assert status != 403, body
        assert len(self.invoked) == before + 1, "the request reached no function"
        return status

    def refused(self, method: str, path: str, *principals: str, **kwargs: Any) -> str:
        """The message of a request refused as ACCESS_DENIED, before any function ran."""
        before = len(self.invoked)
        status, body = self.call(method, path, *principals, **kwargs)
        assert status == 403, body
        assert body["error"]["code"] == "access_denied" and body["error"]["status"] == 403, body
        assert set(body["error"]) == {"code", "message", "status", "details"}
        assert self.invoked[before:] == [], "a function ran for a refused request"
        return str(body["error"]["message"])


def serve(require_principal: bool) -> Iterator[Stack]:
    functions = Ports().api_functions()
    invoke_api = LambdaInvokeApi({}, "us-east-1")  # no function: an invocation is Lambda's 404
    stack = Stack(port=0)

    def invoke(function: str, event: dict[str, Any]) -> Any:
        stack.invoked.append(function)
        return functions[function](event, Context())

    server = ApiServer(
        ApiGateway(invoke, "local", require_principal=require_principal), "127.0.0.1", 0, invoke_api
    )
    server.start()
    stack.port = server.port
    try:
        yield stack
    finally:
        server.stop()
        invoke_api.stop()


@pytest.fixture(scope="module")
def local() -> Iterator[Stack]:
    """The default: a principal is checked when a request names one."""
    yield from serve(require_principal=False)


@pytest.fixture(scope="module")
def strict() -> Iterator[Stack]:
    """MEMORY_LOCAL_REQUIRE_PRINCIPAL=true: every request must name one."""
    yield from serve(require_principal=True)


def test_without_a_principal_any_tenant_is_served(local: Stack) -> None:
    assert local.reaches_a_function("GET", f"{ALICE}/memory") == 200
    assert local.reaches_a_function("GET", "/v1/tenants/globex/users") == 200


def test_a_tenant_principal_calls_every_route_of_its_tenant(local: Stack) -> None:
    assert local.reaches_a_function("GET", f"{ALICE}/memory", "tenant/acme") == 200
    assert local.reaches_a_function("GET", f"{ACME}/users", "tenant/acme") == 200
    assert local.reaches_a_function("DELETE", f"{ALICE}/memory", "tenant/acme") == 204
    assert local.reaches_a_function("GET", f"{PLANNER}/memory", "tenant/acme") != 403


def test_a_tenant_principal_is_refused_another_tenant(local: Stack) -> None:
    message = local.refused("GET", "/v1/tenants/globex/users/alice/memory", "tenant/acme")
    # IAM's wording, naming the principal, the resource refused and what the principal is granted.
    assert message == (
        "User: tenant/acme is not authorized to perform: execute-api:Invoke on resource: "
        "local/GET/v1/tenants/globex/users/alice/memory (its grants: local/*/v1/tenants/acme/*)"
    )
    local.refused("POST", "/v1/tenants/globex/users/alice/memory", "tenant/acme", body={"items": []})
    # A tenant id that only starts like the granted one is another tenant.
    local.refused("GET", "/v1/tenants/acme2/users", "tenant/acme")
    # The raw path is matched, as IAM matches it: an encoded id is not the granted literal.
    local.refused("GET", "/v1/tenants/%61cme/users", "tenant/acme")


def test_an_agent_principal_calls_its_own_routes(local: Stack) -> None:
    # The agent routes may not be served yet: what matters is that IAM lets them through.
    local.reaches_a_function("GET", f"{PLANNER}/memory", "tenant/acme/agent/planner")
    local.reaches_a_function(
        "GET", f"{ACME}/users/bob/agents/planner/memory/facts", "tenant/acme/agent/planner"
    )
    local.reaches_a_function(
        "POST", f"{PLANNER}/memory/query", "tenant/acme/agent/planner", body={"query": "candles"}
    )
    local.reaches_a_function("DELETE", f"{PLANNER}/memory", "tenant/acme/agent/planner")


def test_an_agent_principal_is_refused_other_agents_and_the_users_own_routes(local: Stack) -> None:
    agent = "tenant/acme/agent/planner"
    message = local.refused("GET", f"{ALICE}/agents/writer/memory", agent)
    assert "local/*/v1/tenants/acme/users/*/agents/planner/*" in message
    local.refused("POST", f"{ALICE}/agents/writer/memory/query", agent, body={"query": "candles"})
    # The user's shared memory is read through the agent's own routes only.
    local.refused("GET", f"{ALICE}/memory", agent)
    local.refused("POST", f"{ALICE}/memory", agent, body={"items": []})
    local.refused("DELETE", f"{ALICE}/memory", agent)
    local.refused("GET", f"{ACME}/users", agent)
    local.refused("GET", f"{ACME}/usage", agent)
    # The same agent id in another tenant is another principal.
    local.refused("GET", "/v1/tenants/globex/users/alice/agents/planner/memory", agent)
    # An agent id that only starts like the granted one is another agent.
    local.refused("GET", f"{ALICE}/agents/planner2/memory", agent)


@pytest.mark.parametrize(
    "principal",
    [
        "acme",
        "tenant/",
        "tenant/acme/",
        "tenant/acme/agent/",
        "tenant/acme/agents/planner",
        "user/acme",
        "tenant/acme/agent/planner/extra",
        "",
    ],
)
def test_a_malformed_principal_is_refused_naming_the_accepted_forms(local: Stack, principal: str) -> None:
    message = local.refused("GET", f"{ALICE}/memory", principal)
    assert message.startswith(f"{PRINCIPAL_HEADER} must be one header, tenant/<tenant_id> or ")
    assert "tenant/<tenant_id>/agent/<agent_id>" in message


def test_two_principals_are_refused(local: Stack) -> None:
    message = local.refused("GET", f"{ALICE}/memory", "tenant/acme", "tenant/acme")
    assert "must be one header" in message


def test_health_and_the_openapi_document_are_never_checked(local: Stack, strict: Stack) -> None:
    for stack in (local, strict):
        for principals in ((), ("tenant/globex",), ("tenant/acme/agent/planner",), ("nonsense",)):
            assert stack.reaches_a_function("GET", "/v1/health", *principals) == 200
            assert stack.reaches_a_function("GET", "/v1/openapi.json", *principals) == 200


def test_a_method_api_gateway_does_not_route_is_still_404(local: Stack) -> None:
    status, body = local.call("TRACE", f"{ALICE}/memory", "nonsense")
    assert (status, body["error"]["code"]) == (404, "not_found")


def test_required_principals_refuse_a_request_naming_none(strict: Stack) -> None:
    message = strict.refused("GET", f"{ALICE}/memory")
    assert PRINCIPAL_HEADER in message and "MEMORY_LOCAL_REQUIRE_PRINCIPAL" in message
    strict.refused("POST", f"{ALICE}/memory", body={"items": []})
    strict.refused("GET", f"{PLANNER}/memory")
    # Any other path too: every route of the deployed API is IAM's, the `{proxy+}` fallback included.
    strict.refused("GET", "/v1/nowhere")
    # A request naming a principal is checked as without the option.
    assert strict.reaches_a_function("GET", f"{ALICE}/memory", "tenant/acme") == 200
    strict.reaches_a_function("GET", f"{PLANNER}/memory", "tenant/acme/agent/planner")
    strict.refused("GET", f"{ALICE}/memory", "tenant/globex")


def test_the_memory_browser_page_is_not_the_apis(strict: Stack) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", strict.port, timeout=30)
    try:
        connection.request("GET", "/ui/")
        assert connection.getresponse().status == 200
    finally:
        connection.close()


def test_direct_invocation_is_not_execute_api(strict: Stack) -> None:
    """lambda:InvokeFunction, not execute-api:Invoke: the Invoke API answers (here, Lambda's 404 for a
    function it does not have), never ACCESS_DENIED."""
    before = len(strict.invoked)
    connection = http.client.HTTPConnection("127.0.0.1", strict.port, timeout=30)
    try:
        connection.request("POST", "/2015-03-31/functions/hippocampus-dev-get-memory/invocations", body=b"{}")
        response = connection.getresponse()
        response.read()
        assert response.status == 404
        assert response.getheader("x-amzn-ErrorType") == "ResourceNotFoundException"
    finally:
        connection.close()
    assert len(strict.invoked) == before  # API Gateway played no part


@pytest.mark.parametrize(
    ("raw", "required"),
    [("", False), ("  ", False), ("true", True), ("TRUE", True), ("1", True), ("false", False), ("0", False)],
)
def test_the_option_is_a_boolean(monkeypatch: pytest.MonkeyPatch, raw: str, required: bool) -> None:
    monkeypatch.setenv("MEMORY_LOCAL_REQUIRE_PRINCIPAL", raw)
    assert _require_principal() is required


def test_the_option_refuses_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_LOCAL_REQUIRE_PRINCIPAL", "always")
    with pytest.raises(SystemExit) as exited:
        _require_principal()
    assert str(exited.value.code) == "MEMORY_LOCAL_REQUIRE_PRINCIPAL must be true or false, got 'always'"


def test_the_banner_says_when_principals_are_required() -> None:
    assert "MEMORY_LOCAL_REQUIRE_PRINCIPAL" in PRINCIPALS_AUTH_LINE
    assert PRINCIPAL_HEADER in PRINCIPALS_AUTH_LINE
    assert "any tenant id is accepted" in AUTH_LINE and "any tenant id" not in PRINCIPALS_AUTH_LINE
