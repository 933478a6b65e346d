"""Agent scopes in the CDK app: the agent routes exist as API Gateway methods, and a principal granted
one agent (`HippocampusStack.grant_agent_access`) may call that agent's routes of any user of its
tenant and nothing else, as IAM matches its resource (`hippocampus.contracts.access.iam_matches`)."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match

from hippocampus.contracts.access import agent_grants, iam_matches, tenant_grants
from hippocampus.contracts.routes import AGENT_JOB_PATH, JOB_PATH, ROUTES, Route
from infra.stack import HippocampusStack
from tests.infra.helpers import (
    Synth,
    assert_acknowledgments_used_and_explained,
    assert_nag_clean,
    context_with,
    granted,
    render,
    resource_paths,
    synthesize,
)

TENANT, AGENT = "acme", "planner"
# A second agent whose id is a route word: `…/users/agents/memory/…` (user "agents") must not match it.
WORD_AGENT = "memory"
STAGE = "dev"
AGENT_ROUTES = [r for r in ROUTES if "{agent_id}" in r.path]
USER_ROUTES = [r for r in ROUTES if "{user_id}" in r.path and "{agent_id}" not in r.path]
# What a deployed stage puts in place of the template's references, to evaluate ARNs as IAM does.
CONCRETE = {
    "${AWS::Partition}": "aws",
    "${AWS::Region}": "eu-west-1",
    "${AWS::AccountId}": "123456789012",
}
API_ID = "abc123defg"


def grant_agents(stack: HippocampusStack) -> None:
    planner = iam.Role(stack, "PlannerService", assumed_by=iam.AccountRootPrincipal())
    stack.grant_agent_access(planner, TENANT, AGENT)
    word = iam.Role(stack, "WordAgentService", assumed_by=iam.AccountRootPrincipal())
    stack.grant_agent_access(word, TENANT, WORD_AGENT)


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk-agents"), context_with(), customize=grant_agents)


def role_id(synth: Synth, prefix: str) -> str:
    (role,) = [key for key in synth.template.find_resources("AWS::IAM::Role") if key.startswith(prefix)]
    return role


def rest_api_id(synth: Synth) -> str:
    (rest_api,) = synth.template.find_resources("AWS::ApiGateway::RestApi")
    return rest_api


def may_invoke(synth: Synth, role_prefix: str, method: str, path: str, **where: str) -> bool:
    """Whether IAM lets the role call `method path`: a request's execute-api ARN against each
    `execute-api:Invoke` resource of the role, as a deployed stage would hold it."""
    resources = granted(synth, role_id(synth, role_prefix))["execute-api:Invoke"]
    references = {**CONCRETE, "${" + rest_api_id(synth) + "}": API_ID}
    request = request_arn(method, path, **where)
    for resource in resources:
        for reference, value in references.items():
            resource = resource.replace(reference, value)
        assert "${" not in resource, resource
        if iam_matches(resource, request):
            return True
    return False


def request_arn(method: str, path: str, *, stage: str = STAGE, api_id: str = API_ID) -> str:
    """The resource IAM checks for a signed request (the execute-api ARN of `method path`)."""
    return f"arn:aws:execute-api:eu-west-1:123456789012:{api_id}/{stage}/{method}{path}"


def concrete(route: Route, **ids: str) -> str:
    values = {"tenant_id": TENANT, "user_id": "alice", "agent_id": AGENT} | ids
    path = route.path
    for name in ("tenant_id", "user_id", "agent_id", "job_id", "fact_id", "episode_id", "record_id"):
        path = path.replace("{" + name + "}", values.get(name, f"{name.removesuffix('_id')}-1"))
    return path.replace("{receipt_id}", "rcpt-1")


# ----------------------------------------------------------------------------- the template


def test_synth_with_agent_grants_passes_cdk_nag(synth: Synth) -> None:
    assert_nag_clean(synth)
    assert_acknowledgments_used_and_explained(synth)


def test_every_agent_route_is_an_api_gateway_method(synth: Synth) -> None:
    paths = resource_paths(synth)
    found = [
        (props["HttpMethod"], paths[props["ResourceId"]["Ref"]])
        for props in (
            m["Properties"] for m in synth.template.find_resources("AWS::ApiGateway::Method").values()
        )
        if "Ref" in props["ResourceId"]
    ]
    agent_methods = [(method, path) for method, path in found if "{agent_id}" in path and method != "ANY"]
    assert len(AGENT_ROUTES) == 17
    assert sorted(agent_methods) == sorted((r.method, r.path) for r in AGENT_ROUTES)  # one each
    assert {path for method, path in found if method == "ANY" and "{agent_id}" in path} == {
        r.path for r in AGENT_ROUTES
    }


def test_a_role_granted_one_agent_gets_one_statement_on_that_agent(synth: Synth) -> None:
    role = role_id(synth, "PlannerService")
    path = f"/{STAGE}/*/v1/tenants/{TENANT}/users/*/agents/{AGENT}/*"
    arn = [
        "arn:",
        {"Ref": "AWS::Partition"},
        ":execute-api:",
        {"Ref": "AWS::Region"},
        ":",
        {"Ref": "AWS::AccountId"},
        ":",
        {"Ref": rest_api_id(synth)},
        path,
    ]
    statement = {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": {"Fn::Join": ["", arn]}}
    synth.template.has_resource_properties(
        "AWS::IAM::Policy",
        {"PolicyDocument": {"Statement": [statement]}, "Roles": [{"Ref": role}]},
    )
    policies = synth.template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"Roles": Match.array_with([{"Ref": role}])}}
    )
    assert len(policies) == 1
    assert granted(synth, role) == {
        "execute-api:Invoke": {
            "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${"
            + rest_api_id(synth)
            + "}"
            + path
        }
    }


def test_the_grants_come_from_contracts_access(synth: Synth) -> None:
    """One rule for the CDK app and the local stack: one ARN per grant, of its method and path."""
    api, stack = synth.stack.api, synth.stack
    prefix = (
        "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${" + rest_api_id(synth) + "}"
    )
    for grants, arns in (
        (agent_grants(TENANT, AGENT), api.agent_arns(TENANT, AGENT)),
        (tenant_grants(TENANT), [api.tenant_arn(TENANT)]),
    ):
        assert [render(stack.resolve(arn)) for arn in arns] == [
            f"{prefix}/{STAGE}/{grant.method}{grant.path}" for grant in grants
        ]


# ----------------------------------------------------------------------------- what the grant allows


# Each agent route's method, and PATCH on each agent path (the ANY method, which answers 405).
OWN_AGENT_CALLS = [(r.method, r) for r in AGENT_ROUTES] + [
    ("PATCH", r) for r in {r.path: r for r in AGENT_ROUTES}.values()
]
OWN_AGENT = [
    pytest.param(method, concrete(route, user_id=user), id=f"{method} {route.path} {user}")
    for method, route in OWN_AGENT_CALLS
    for user in ("alice", "agents", "u.2@x:y")
]


@pytest.mark.parametrize(("method", "path"), OWN_AGENT)
def test_the_agent_may_call_its_routes_of_any_user(synth: Synth, method: str, path: str) -> None:
    assert may_invoke(synth, "PlannerService", method, path)


def test_the_agent_polls_a_job_at_its_own_route_not_the_tenants(synth: Synth) -> None:
    """A principal with only an agent grant reads a job of its scopes (or of the user's shared memory)
    at `…/agents/<agent>/memory/jobs/<job_id>`; the tenant-level `GET /v1/tenants/<t>/jobs/<job_id>`
    stays outside the grant."""
    own, tenant_level = Route("GET", AGENT_JOB_PATH, "get_memory"), Route("GET", JOB_PATH, "get_memory")
    assert own in AGENT_ROUTES and tenant_level in ROUTES
    assert may_invoke(synth, "PlannerService", "GET", concrete(own, job_id="job-7"))
    assert may_invoke(synth, "PlannerService", "GET", concrete(own, user_id="u.2@x:y", job_id="job-7"))
    assert not may_invoke(synth, "PlannerService", "GET", concrete(tenant_level, job_id="job-7"))
    assert not may_invoke(synth, "PlannerService", "GET", concrete(own, agent_id="scheduler", job_id="job-7"))
    assert not may_invoke(synth, "PlannerService", "GET", concrete(own, tenant_id="globex", job_id="job-7"))


DENIED = [
    *[
        pytest.param(r.method, concrete(r, agent_id=other), id=f"other agent {other} {r.method} {r.path}")
        for r in AGENT_ROUTES
        for other in ("scheduler", "planner2", "plan", "xplanner")
    ],
    *[pytest.param(r.method, concrete(r), id=f"shared {r.method} {r.path}") for r in USER_ROUTES],
    *[
        pytest.param(r.method, concrete(r, tenant_id="globex"), id=f"other tenant {r.method} {r.path}")
        for r in AGENT_ROUTES
    ],
    *[
        pytest.param(r.method, concrete(r, tenant_id="acme2"), id=f"prefixed tenant {r.method} {r.path}")
        for r in AGENT_ROUTES[:3]
    ],
    *[
        pytest.param(r.method, concrete(r), id=f"tenant route {r.method} {r.path}")
        for r in ROUTES
        if "{tenant_id}" not in r.path or "{user_id}" not in r.path
    ],
    pytest.param("GET", f"/v1/tenants/{TENANT}/jobs/job-1", id="jobs"),
    pytest.param("GET", f"/v1/tenants/{TENANT}/usage", id="usage"),
    pytest.param("GET", f"/v1/tenants/{TENANT}/users/alice/agents", id="agents list (no route)"),
    pytest.param("GET", f"/v1/tenants/{TENANT}/users/alice/agents/{AGENT}", id="agent prefix (no route)"),
]


@pytest.mark.parametrize(("method", "path"), DENIED)
def test_the_agent_may_call_nothing_else(synth: Synth, method: str, path: str) -> None:
    assert not may_invoke(synth, "PlannerService", method, path)


def test_the_grant_is_of_this_stage_and_api_only(synth: Synth) -> None:
    path = concrete(AGENT_ROUTES[0])
    assert may_invoke(synth, "PlannerService", "GET", path)
    assert not may_invoke(synth, "PlannerService", "GET", path, stage="prod")
    assert not may_invoke(synth, "PlannerService", "GET", path, api_id="other12345")


@pytest.mark.parametrize("route", USER_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_an_agent_named_like_a_route_word_gets_no_user_route(synth: Synth, route: Route) -> None:
    """Agent "memory" against user "agents": `…/users/agents/memory/…` holds `/agents/memory/` but
    not after a user segment, so the grant does not match it."""
    assert not may_invoke(synth, "WordAgentService", route.method, concrete(route, user_id="agents"))
    own = concrete(AGENT_ROUTES[0], user_id="agents", agent_id=WORD_AGENT)
    assert may_invoke(synth, "WordAgentService", AGENT_ROUTES[0].method, own)


# ----------------------------------------------------------------------------- what the grant refuses


BAD_IDS = ["*", "planner/*", "", "-planner", "a" * 129, "planner agent", "pl?nner", "planner\n"]


@pytest.mark.parametrize("agent_id", BAD_IDS)
def test_agent_grant_rejects_anything_but_one_agent_id(synth: Synth, agent_id: str) -> None:
    with pytest.raises(ValueError, match=r"^agent_id"):
        synth.stack.api.agent_arns(TENANT, agent_id)


@pytest.mark.parametrize("tenant_id", BAD_IDS)
def test_agent_grant_rejects_anything_but_one_tenant_id(synth: Synth, tenant_id: str) -> None:
    with pytest.raises(ValueError, match=r"^tenant_id"):
        synth.stack.api.agent_arns(tenant_id, AGENT)


def test_agent_grant_rejects_tokens(synth: Synth) -> None:
    stack = synth.stack
    role = iam.Role(stack, "TokenService", assumed_by=iam.AccountRootPrincipal())
    with pytest.raises(ValueError, match=r"^agent_id"):
        stack.grant_agent_access(role, TENANT, cdk.Fn.join("", ["plan", "ner"]))
    with pytest.raises(ValueError, match=r"^agent_id"):
        stack.grant_agent_access(role, TENANT, cdk.Aws.ACCOUNT_ID)
    with pytest.raises(ValueError, match=r"^tenant_id"):
        stack.grant_agent_access(role, cdk.Aws.REGION, AGENT)
    assert role.node.try_find_child("DefaultPolicy") is None  # nothing granted
