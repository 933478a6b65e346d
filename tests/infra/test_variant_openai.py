"""The openai provider (secret by name, custom endpoint) and a service granted one tenant."""

from __future__ import annotations

import pytest
from aws_cdk import aws_iam as iam

from infra.stack import HippocampusStack
from tests.infra.helpers import (
    Synth,
    as_list,
    assert_acknowledgments_used_and_explained,
    assert_cfn_lint_clean,
    assert_nag_clean,
    context_with,
    render,
    statements,
    synthesize,
)

SECRET = "hippocampus/staging/llm-api-key"


def customize(stack: HippocampusStack) -> None:
    service = iam.Role(stack, "TenantService", assumed_by=iam.AccountRootPrincipal())
    stack.grant_tenant_access(service, "acme")


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    context = context_with(stage="staging", llm_provider="openai", llm_base_url="https://llm.example.com/v1")
    return synthesize(tmp_path_factory.mktemp("cdk-openai"), context, customize=customize)


def test_nag_clean_and_acknowledgments_used(synth: Synth) -> None:
    assert_nag_clean(synth)
    assert_acknowledgments_used_and_explained(synth)


def test_cfn_lint(synth: Synth) -> None:
    assert_cfn_lint_clean(synth)


def test_condenser_reads_the_secret_by_name(synth: Synth) -> None:
    variables = synth.props(synth.function_id("condenser"))["Environment"]["Variables"]
    assert variables["MEMORY_LLM_PROVIDER"] == "openai"
    assert variables["MEMORY_LLM_API_KEY_SECRET"] == SECRET
    assert variables["OPENAI_BASE_URL"] == "https://llm.example.com/v1"
    assert "OPENAI_API_KEY" not in variables  # never a plain key in the environment
    assert synth.template["Outputs"]["LlmSecretName"]["Value"] == SECRET


def test_only_the_condenser_may_read_the_secret(synth: Synth) -> None:
    condenser_role = synth.props(synth.function_id("condenser"))["Role"]["Fn::GetAtt"][0]
    readers = []
    for logical_id, statement in statements(synth):
        if "secretsmanager:GetSecretValue" in as_list(statement["Action"]):
            readers.append(synth.props(logical_id)["Roles"])
            (resource,) = as_list(statement["Resource"])
            assert render(resource).endswith(f":secret:{SECRET}-??????")
    assert readers == [[{"Ref": condenser_role}]]
    assert not [
        s for _, s in statements(synth) if any(str(a).startswith("bedrock:") for a in as_list(s["Action"]))
    ]


def test_tenant_grant_is_scoped_to_one_tenant(synth: Synth) -> None:
    (api_id,) = synth.of_type("AWS::ApiGateway::RestApi")
    (service_policy,) = [
        p["Properties"]
        for p in synth.of_type("AWS::IAM::Policy").values()
        if any("TenantService" in r["Ref"] for r in p["Properties"]["Roles"])
    ]
    (statement,) = service_policy["PolicyDocument"]["Statement"]
    assert statement["Action"] == "execute-api:Invoke" and statement["Effect"] == "Allow"
    assert render(statement["Resource"]) == (
        "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${" + api_id + "}"
        "/staging/*/v1/tenants/acme/*"
    )


@pytest.mark.parametrize("tenant_id", ["*", "acme/*", "", "-acme", "a" * 129, "acme tenant", "ac?me"])
def test_tenant_grant_rejects_non_identifiers(synth: Synth, tenant_id: str) -> None:
    with pytest.raises(ValueError, match="tenant_id"):
        synth.stack.api.tenant_arn(tenant_id)
