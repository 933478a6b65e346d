"""A deployment that changes every default it can: stage prod, Bedrock through an inference profile,
x86_64, no tracing, destroy on delete, memory TTL, alarm e-mail, concurrency cap, retention,
throttling, and the account's API Gateway logging role left to the account; plus a service role granted one tenant (`HippocampusStack.grant_tenant_access`)."""

from __future__ import annotations

import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match

from hippocampus.contracts.names import default_embedding_model
from infra.stack import HippocampusStack
from tests.infra.helpers import (
    FUNCTIONS,
    Synth,
    as_list,
    assert_acknowledgments_used_and_explained,
    assert_cfn_lint_clean,
    assert_nag_clean,
    context_with,
    granted,
    statements,
    synthesize,
)

MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
EMBEDDING_MODEL = str(default_embedding_model("bedrock"))


def grant_acme(stack: HippocampusStack) -> None:
    service = iam.Role(stack, "TenantService", assumed_by=iam.AccountRootPrincipal())
    stack.grant_tenant_access(service, "acme")


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    context = context_with(
        stage="prod",
        llm_provider="bedrock",
        llm_model=MODEL,
        architecture="x86_64",
        tracing=False,
        removal_policy="destroy",
        memory_ttl_days=90,
        alarm_email="ops@example.com",
        condenser_max_concurrency=5,
        log_retention_days=90,
        throttling_rate_limit=20,
        throttling_burst_limit=40,
        create_api_gateway_cloudwatch_role=False,
    )
    return synthesize(tmp_path_factory.mktemp("cdk-nondefault"), context, customize=grant_acme)


def test_synth_passes_cdk_nag_and_cfn_lint(synth: Synth) -> None:
    assert_nag_clean(synth)
    assert_acknowledgments_used_and_explained(synth)
    assert_cfn_lint_clean(synth)


def test_the_account_api_gateway_logging_role_is_left_alone_when_asked(synth: Synth) -> None:
    synth.template.resource_count_is("AWS::ApiGateway::Account", 0)
    roles = synth.template.find_resources("AWS::IAM::Role")
    assert not any("CloudWatchRole" in logical_id for logical_id in roles)


def test_inference_profile_grant_is_scoped_to_the_profile_and_its_model(synth: Synth) -> None:
    assert granted(synth, synth.role_id("condenser"))["bedrock:InvokeModel"] == {
        "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/" + MODEL,
        # The profile routes to the same model in any region of its geography.
        "arn:${AWS::Partition}:bedrock:*::foundation-model/" + MODEL.removeprefix("us."),
        # The embeddings follow the LLM's provider: Titan V2 in the stack's region.
        "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/" + EMBEDDING_MODEL,
    }
    assert granted(synth, synth.role_id("recall"))["bedrock:InvokeModel"] == {
        "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/" + EMBEDDING_MODEL
    }
    synth.template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "FunctionName": "hippocampus-prod-condenser",
            "Environment": {"Variables": {"MEMORY_LLM_PROVIDER": "bedrock", "MEMORY_LLM_MODEL": MODEL}},
        },
    )


def test_functions_and_layers_are_x86_64_untraced_with_a_memory_ttl(synth: Synth) -> None:
    template = synth.template
    untraced = {
        "Architectures": ["x86_64"],
        "TracingConfig": Match.absent(),
        "Environment": {"Variables": {"MEMORY_TRACING": "off", "MEMORY_TTL_DAYS": "90"}},
    }
    for name in FUNCTIONS:
        template.has_resource_properties(
            "AWS::Lambda::Function",
            {"FunctionName": f"hippocampus-prod-{name.replace('_', '-')}", **untraced},
        )
    template.all_resources_properties("AWS::Lambda::LayerVersion", {"CompatibleArchitectures": ["x86_64"]})
    # Without tracing, no statement needs Resource "*" but the events role's dynamodb:ListStreams (which
    # supports no resource-level permissions; test_events_stack.py).
    star = [s for s in statements(synth) if s["Effect"] == "Allow" and "*" in as_list(s["Resource"])]
    assert [as_list(s["Action"]) for s in star] == [["dynamodb:ListStreams"]]


def test_x86_64_layer_has_x86_64_binaries(synth: Synth) -> None:
    dirs = synth.layer_dirs("get_memory")
    binaries = [p.name for d in dirs for p in (d / "python" / "pydantic_core").glob("*.so")]
    assert binaries and all("x86_64" in name for name in binaries)


def test_stage_prod_is_untraced_and_throttled_as_configured(synth: Synth) -> None:
    synth.template.has_resource_properties(
        "AWS::ApiGateway::Stage",
        {
            "StageName": "prod",
            "TracingEnabled": False,
            "MethodSettings": [Match.object_like({"ThrottlingRateLimit": 20, "ThrottlingBurstLimit": 40})],
        },
    )


def test_destroy_removes_the_data_with_the_stack(synth: Synth) -> None:
    template = synth.template
    for resource_type in ("AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::Logs::LogGroup"):
        deleted = template.find_resources(resource_type, {"DeletionPolicy": "Delete"})
        assert deleted.keys() == template.find_resources(resource_type).keys(), resource_type
    template.resource_properties_count_is("AWS::DynamoDB::Table", {"DeletionProtectionEnabled": True}, 0)
    template.resource_count_is("Custom::S3AutoDeleteObjects", 2)  # buckets are emptied first


def test_alarm_email_concurrency_cap_and_log_retention(synth: Synth) -> None:
    template = synth.template
    template.resource_count_is("AWS::SNS::Subscription", 1)
    template.has_resource_properties(
        "AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "ops@example.com"}
    )
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping", {"ScalingConfig": {"MaximumConcurrency": 5}}
    )
    template.all_resources_properties("AWS::Logs::LogGroup", {"RetentionInDays": 90})


def test_tenant_grant_is_scoped_to_one_tenant_of_this_stage(synth: Synth) -> None:
    (rest_api,) = synth.template.find_resources("AWS::ApiGateway::RestApi")
    (role,) = [
        key for key in synth.template.find_resources("AWS::IAM::Role") if key.startswith("TenantService")
    ]
    assert granted(synth, role) == {
        "execute-api:Invoke": {
            "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${" + rest_api + "}"
            "/prod/*/v1/tenants/acme/*"
        }
    }


@pytest.mark.parametrize("tenant_id", ["*", "acme/*", "", "-acme", "a" * 129, "acme tenant", "ac?me"])
def test_tenant_grant_rejects_anything_but_one_tenant_id(synth: Synth, tenant_id: str) -> None:
    with pytest.raises(ValueError, match="tenant_id"):
        synth.stack.api.tenant_arn(tenant_id)
