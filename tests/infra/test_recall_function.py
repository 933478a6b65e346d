"""The recall function (query and context routes) for each embedding provider, and the condenser's
embeddings: the environment, the layers, and exactly the access each provider needs.

Each variant is synthesized once per process (`synthesize_once`): offline is the default stack,
openai and bedrock the stacks of test_llm_choice.py (the embeddings follow the LLM's provider),
and "mixed" an openai LLM with Bedrock embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from aws_cdk.assertions import Match

from hippocampus.contracts.names import default_embedding_model, default_model
from tests.infra.helpers import (
    Synth,
    archive,
    assert_acknowledgments_used_and_explained,
    assert_cfn_lint_clean,
    assert_nag_clean,
    cli_context,
    granted,
    synthesize_once,
)

SECRET = "hippocampus/dev/llm-api-key"
SECRET_ARN = (
    f"arn:${{AWS::Partition}}:secretsmanager:${{AWS::Region}}:${{AWS::AccountId}}:secret:{SECRET}-??????"
)
FOUNDATION_MODEL = "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/"
TITAN = FOUNDATION_MODEL + str(default_embedding_model("bedrock"))
MODEL_ACTIONS = ("secretsmanager:", "bedrock:")


@dataclass(frozen=True)
class Variant:
    name: str
    overrides: dict[str, str]  # `-c hippocampus.<key>=<value>`
    embedding: str
    # The model access of each role, beyond reading the table (recall) or its storage (condenser).
    recall: dict[str, set[str]] = field(default_factory=dict)
    condenser: dict[str, set[str]] = field(default_factory=dict)
    dimensions: str = "256"


VARIANTS = {
    variant.name: variant
    for variant in (
        Variant("offline", {}, "offline"),  # no network: neither a secret nor Bedrock
        Variant(
            "openai",
            {"llm_provider": "openai"},
            "openai",
            recall={"secretsmanager:GetSecretValue": {SECRET_ARN}},
            condenser={"secretsmanager:GetSecretValue": {SECRET_ARN}},  # one key for chat and embeddings
        ),
        Variant(
            "bedrock",
            {"llm_provider": "bedrock"},
            "bedrock",
            recall={"bedrock:InvokeModel": {TITAN}},
            condenser={"bedrock:InvokeModel": {FOUNDATION_MODEL + str(default_model("bedrock")), TITAN}},
        ),
        Variant(
            "mixed",
            {"llm_provider": "openai", "embedding_provider": "bedrock", "embedding_dimensions": "1024"},
            "bedrock",
            recall={"bedrock:InvokeModel": {TITAN}},  # the LLM's key is none of its business
            condenser={"secretsmanager:GetSecretValue": {SECRET_ARN}, "bedrock:InvokeModel": {TITAN}},
            dimensions="1024",
        ),
    )
}


@pytest.fixture(scope="module", params=list(VARIANTS))
def variant(request: pytest.FixtureRequest) -> Variant:
    return VARIANTS[request.param]


@pytest.fixture(scope="module")
def synth(variant: Variant, tmp_path_factory: pytest.TempPathFactory) -> Synth:
    result = synthesize_once(tmp_path_factory, cli_context(**variant.overrides))
    assert result.error is None, result.error
    return result


def test_synth_passes_cdk_nag_and_cfn_lint(synth: Synth, variant: Variant) -> None:
    assert_nag_clean(synth)
    assert_acknowledgments_used_and_explained(synth)
    if variant.name == "mixed":  # the others are linted by test_compliance.py and test_llm_choice.py
        assert_cfn_lint_clean(synth)


def test_recall_has_the_read_paths_size_and_the_embedding_settings(synth: Synth, variant: Variant) -> None:
    openai = variant.embedding == "openai"
    synth.template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "FunctionName": "hippocampus-dev-recall",
            "MemorySize": 1024,
            "Timeout": 10,
            "Environment": {
                "Variables": {
                    "MEMORY_TABLE_NAME": {"Ref": table_id(synth)},
                    "MEMORY_EMBEDDING_PROVIDER": variant.embedding,
                    "MEMORY_EMBEDDING_MODEL": default_embedding_model(variant.embedding),
                    "MEMORY_EMBEDDING_DIMENSIONS": variant.dimensions,
                    "MEMORY_TRACING": "xray",
                    "POWERTOOLS_SERVICE_NAME": "hippocampus",
                    # The secret's name with openai embeddings (the LLM's), never a key.
                    "MEMORY_LLM_API_KEY_SECRET": SECRET if openai else Match.absent(),
                    "OPENAI_API_KEY": Match.absent(),
                    "MEMORY_LLM_PROVIDER": Match.absent(),  # it calls no LLM
                    # The stored copies of users' episodes (recall/), checked against the cap.
                    "MEMORY_BUCKET_NAME": {"Ref": Match.string_like_regexp("ArchiveBucket")},
                    "MEMORY_MAX_EPISODES": "2000",
                    "MEMORY_QUEUE_URL": Match.absent(),
                }
            },
        },
    )


def test_recall_may_read_the_table_and_call_the_embedding_model_and_nothing_else(
    synth: Synth, variant: Variant
) -> None:
    log_group = "${" + synth.function("recall")["LoggingConfig"]["LogGroup"]["Ref"] + ".Arn}"
    table = "${" + table_id(synth) + ".Arn}"  # the table itself: it has no index
    bucket = archive(synth)
    assert granted(synth, synth.role_id("recall")) == {
        "logs:CreateLogStream": {log_group},
        "logs:PutLogEvents": {log_group},
        "xray:PutTelemetryRecords": {"*"},  # Lambda active tracing
        "xray:PutTraceSegments": {"*"},
        # One user's partition: no Scan, no BatchGetItem, no write; no SQS.
        "dynamodb:GetItem": {table},
        "dynamodb:Query": {table},
        # The stored copy of the user's episodes, read only (a missing one is 404, not 403).
        "s3:GetObject": {f"{bucket}/recall/*"},
        "s3:ListBucket": {bucket + ' if {"StringLike": {"s3:prefix": ["recall/*"]}}'},
        **variant.recall,
    }


def test_recall_carries_the_openai_sdk_only_for_openai_embeddings(synth: Synth, variant: Variant) -> None:
    packages = {p.name for d in synth.layer_dirs("recall") for p in (d / "python").iterdir()}
    assert {"hippocampus", "aws_lambda_powertools", "pydantic"} <= packages
    assert ("openai" in packages) == (variant.embedding == "openai")
    assert "aws_xray_sdk" not in packages  # like get_memory, it never loads the X-Ray SDK


def test_condenser_embeds_with_the_same_settings_and_may_call_the_model(
    synth: Synth, variant: Variant
) -> None:
    recall = synth.environment("recall")
    condenser = synth.environment("condenser")
    for name in ("MEMORY_EMBEDDING_PROVIDER", "MEMORY_EMBEDDING_MODEL", "MEMORY_EMBEDDING_DIMENSIONS"):
        assert condenser[name] == recall[name], name
    assert condenser["MEMORY_MAX_EPISODES"] == str(synth.stack.config.max_episodes)
    grants = granted(synth, synth.role_id("condenser"))
    assert {action: grants[action] for action in grants if action.startswith(MODEL_ACTIONS)} == (
        variant.condenser
    )


def test_no_other_role_may_call_a_model(synth: Synth) -> None:
    for name in ("get_memory", "ingest"):
        assert not [a for a in granted(synth, synth.role_id(name)) if a.startswith(MODEL_ACTIONS)], name


def table_id(synth: Synth) -> str:
    (table,) = synth.template.find_resources("AWS::DynamoDB::Table")
    return table
