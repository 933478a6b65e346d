"""Choosing the LLM is one override: `-c hippocampus.llm_provider=<provider>` alone gives a working stack.

Each provider is synthesized once, from cdk.json plus that single override (as the CDK CLI passes
it): the condenser is told the provider and its default model, and gets exactly the access that
provider needs: Bedrock by IAM alone (no secret), openai through the secret
`hippocampus/<stage>/llm-api-key`. The embeddings follow the LLM's provider, so the condenser also
gets the embedding model, and recall that model alone (test_recall.py); no other role gets either.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from aws_cdk.assertions import Match

from hippocampus.contracts.names import default_embedding_model, default_model
from tests.infra.helpers import (
    Synth,
    as_list,
    assert_acknowledgments_used_and_explained,
    assert_cfn_lint_clean,
    assert_nag_clean,
    cli_context,
    granted,
    render,
    statements,
    synthesize_once,
)


@dataclass(frozen=True)
class Provider:
    name: str
    # The condenser's grant that this provider needs: action → the resources it applies to.
    grant: dict[str, set[str]]
    # Actions no role of the stack may have with this provider.
    never: tuple[str, ...]
    secret: str | None


SECRET_ARN = "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:"
FOUNDATION_MODEL = "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/"
PROVIDERS = {
    "bedrock": Provider(
        "bedrock",
        # The chat model, and the embedding model of the facts and episodes it indexes.
        grant={
            "bedrock:InvokeModel": {
                FOUNDATION_MODEL + str(default_model("bedrock")),
                FOUNDATION_MODEL + str(default_embedding_model("bedrock")),
            }
        },
        never=("secretsmanager:",),
        secret=None,
    ),
    "openai": Provider(
        "openai",
        # One key for the chat model and the embeddings.
        grant={"secretsmanager:GetSecretValue": {SECRET_ARN + "hippocampus/dev/llm-api-key-??????"}},
        never=("bedrock:",),
        secret="hippocampus/dev/llm-api-key",
    ),
}


@pytest.fixture(scope="module", params=list(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> Provider:
    return PROVIDERS[request.param]


@pytest.fixture(scope="module")
def synth(provider: Provider, tmp_path_factory: pytest.TempPathFactory) -> Synth:
    # The same stack as test_recall.py's for this provider: synthesized once per process.
    return synthesize_once(tmp_path_factory, cli_context(llm_provider=provider.name))


def test_synth_passes_cdk_nag_and_cfn_lint(synth: Synth) -> None:
    assert_nag_clean(synth)
    assert_acknowledgments_used_and_explained(synth)
    assert_cfn_lint_clean(synth)


def test_condenser_is_told_the_provider_and_its_default_model(synth: Synth, provider: Provider) -> None:
    synth.template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "FunctionName": "hippocampus-dev-condenser",
            "Environment": {
                "Variables": {
                    "MEMORY_LLM_PROVIDER": provider.name,
                    "MEMORY_LLM_MODEL": default_model(provider.name),
                    "MEMORY_EMBEDDING_PROVIDER": provider.name,  # follows the LLM's
                    "MEMORY_EMBEDDING_MODEL": default_embedding_model(provider.name),
                    # The secret's name, never a key: the condenser reads it at cold start.
                    "MEMORY_LLM_API_KEY_SECRET": provider.secret or Match.absent(),
                    "OPENAI_API_KEY": Match.absent(),
                    "OPENAI_BASE_URL": Match.absent(),  # the provider's own endpoint
                }
            },
        },
    )


def test_condenser_gets_exactly_the_access_its_provider_needs(synth: Synth, provider: Provider) -> None:
    grants = granted(synth, synth.role_id("condenser"))
    for action, resources in provider.grant.items():
        assert grants[action] == resources, action
    # Exactly what the provider's own SDK calls: no DescribeSecret, no streaming.
    assert {a for a in grants if a.startswith(("secretsmanager:", "bedrock:"))} == provider.grant.keys()


def test_no_other_role_gets_llm_access(synth: Synth, provider: Provider) -> None:
    llm_actions = {action.split(":")[0] + ":" for action in provider.grant}
    for name in ("get_memory", "ingest"):  # recall gets the embedding model only: test_recall.py
        grants = granted(synth, synth.role_id(name))
        assert not [a for a in grants if a.startswith(tuple(llm_actions))], name
    # Nor is anything granted for the other provider (no secret for Bedrock, no Bedrock for openai).
    for statement in statements(synth):
        assert not [a for a in as_list(statement["Action"]) if a.startswith(provider.never)], statement


def test_secret_is_referenced_by_name_never_created(synth: Synth, provider: Provider) -> None:
    synth.template.resource_count_is("AWS::SecretsManager::Secret", 0)
    outputs = synth.template.find_outputs("LlmSecretName")
    shown = {key: render(output["Value"]) for key, output in outputs.items()}
    assert shown == ({"LlmSecretName": provider.secret} if provider.secret else {})
