"""The deployment config model: defaults, CLI overrides, and errors that name the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hippocampus.contracts.names import default_embedding_model, default_model
from infra.config import (
    TITAN_V2_DIMENSIONS,
    ConfigError,
    DeploymentConfig,
    config_from_cdk_json,
    load_config,
    read_cdk_json_context,
)
from infra.specs import FUNCTION_NAMES, ResourceNames, function_environments

REPO = Path(__file__).resolve().parents[2]


def ctx(**values: object) -> dict[str, object]:
    return {"hippocampus": values}


def error_of(context: dict[str, object]) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(context)
    return str(caught.value)


def test_cdk_json_is_valid_and_names_every_key() -> None:
    """cdk.json is the documented place for the settings: it lists all of them, and they load."""
    config_from_cdk_json()
    assert set(read_cdk_json_context()["hippocampus"]) == set(DeploymentConfig.model_fields)


def test_config_and_build_tools_do_not_import_aws_cdk() -> None:
    """The local stack imports infra.config and infra.specs, the benchmark tools.assets: none pays for jsii."""
    code = (
        "import sys, infra.config, infra.specs, tools.assets, tools.synth_summary; "
        "assert 'aws_cdk' not in sys.modules and 'jsii' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_function_environments_from_plain_names() -> None:
    """What each function is told, without CDK: the local stack can give each function exactly this."""
    resources = ResourceNames(table="t", bucket="b", queue_url="https://q", dlq_url="https://dlq")
    config = load_config(ctx(llm_provider="openai", memory_ttl_days=7, tracing=False))
    environments = function_environments(config, resources)
    assert set(environments) == set(FUNCTION_NAMES)
    for variables in environments.values():
        assert variables["MEMORY_TRACING"] == "off" and variables["MEMORY_TTL_DAYS"] == "7"
    # The events function reads the table's stream (its event source), not the table.
    assert [
        name for name, variables in environments.items() if variables.get("MEMORY_TABLE_NAME") != "t"
    ] == ["events"]
    # recall reads one partition of the table and the stored copies of episodes (recall/); events
    # nothing of the archive.
    assert [name for name, variables in environments.items() if "MEMORY_BUCKET_NAME" not in variables] == [
        "events",
    ]
    assert "MEMORY_QUEUE_URL" not in environments["get_memory"]
    assert environments["ingest"]["MEMORY_QUEUE_URL"] == "https://q"
    condenser = environments["condenser"]
    assert condenser["MEMORY_LLM_PROVIDER"] == "openai"
    assert condenser["MEMORY_LLM_API_KEY_SECRET"] == "hippocampus/dev/llm-api-key"
    # The redrive sends dead letters back to the ingest queue (docs/operations.md "The dead-letter queue").
    assert (condenser["MEMORY_QUEUE_URL"], condenser["MEMORY_DLQ_URL"]) == ("https://q", "https://dlq")


def test_openai_endpoint_and_named_secret_reach_the_condenser_only() -> None:
    resources = ResourceNames(table="t", bucket="b", queue_url="https://q", dlq_url="https://dlq")
    config = load_config(
        ctx(llm_provider="openai", llm_base_url="https://llm.example.com/v1", llm_secret_name="shared/openai")
    )
    environments = function_environments(config, resources)
    assert environments["condenser"]["OPENAI_BASE_URL"] == "https://llm.example.com/v1"
    assert environments["condenser"]["MEMORY_LLM_API_KEY_SECRET"] == "shared/openai"
    assert environments["condenser"]["MEMORY_LLM_MODEL"] == default_model("openai")
    for name in ("get_memory", "ingest"):
        assert not {"OPENAI_BASE_URL", "MEMORY_LLM_API_KEY_SECRET"} & environments[name].keys()


EMBEDDING_VARIABLES = ("MEMORY_EMBEDDING_PROVIDER", "MEMORY_EMBEDDING_MODEL", "MEMORY_EMBEDDING_DIMENSIONS")


@pytest.mark.parametrize(
    ("settings", "provider", "model"),
    [
        ({}, "offline", default_embedding_model("offline")),  # follows llm_provider
        ({"llm_provider": "openai"}, "openai", default_embedding_model("openai")),
        ({"llm_provider": "bedrock"}, "bedrock", default_embedding_model("bedrock")),
        ({"llm_provider": "bedrock", "embedding_provider": "none"}, "none", None),
        ({"embedding_provider": "hashed"}, "hashed", default_embedding_model("hashed")),
        ({"embedding_provider": "openai", "embedding_model": "text-embedding-3-large"}, "openai", None),
    ],
)
def test_condenser_and_recall_are_told_the_same_embeddings(
    settings: dict[str, object], provider: str, model: str | None
) -> None:
    """Documents (condenser) and queries (recall) must be embedded alike, or vectors never match."""
    dimensions = 128 if provider == "offline" else 512  # a size each provider's model makes
    config = load_config(ctx(embedding_dimensions=dimensions, **settings))
    environments = function_environments(config, ResourceNames("t", "b", "q", "d"))
    condenser, recall = environments["condenser"], environments["recall"]
    assert recall["MEMORY_EMBEDDING_PROVIDER"] == provider
    assert recall.get("MEMORY_EMBEDDING_MODEL") == (model or settings.get("embedding_model"))
    assert recall["MEMORY_EMBEDDING_DIMENSIONS"] == str(dimensions)
    assert {name: condenser.get(name) for name in EMBEDDING_VARIABLES} == {
        name: recall.get(name) for name in EMBEDDING_VARIABLES
    }
    # recall's copy of a user's episodes keeps what the condenser's trim leaves.
    assert condenser["MEMORY_MAX_EPISODES"] == recall["MEMORY_MAX_EPISODES"] == "2000"
    for name in ("get_memory", "ingest"):
        assert not [v for v in environments[name] if v.startswith("MEMORY_EMBEDDING_")], name


def test_openai_embeddings_share_the_llms_endpoint_and_secret() -> None:
    resources = ResourceNames("t", "b", "q", "d")
    bedrock_llm = load_config(ctx(llm_provider="bedrock", embedding_provider="openai"))
    assert bedrock_llm.resolved_llm_secret_name == "hippocampus/dev/llm-api-key"  # the embeddings need it
    recall = function_environments(bedrock_llm, resources)["recall"]
    assert recall["MEMORY_LLM_API_KEY_SECRET"] == "hippocampus/dev/llm-api-key"
    # llm_base_url and llm_secret_name apply whenever either calls OpenAI.
    config = load_config(
        ctx(embedding_provider="openai", llm_base_url="https://llm.example.com/v1", llm_secret_name="s/k")
    )
    environments = function_environments(config, resources)
    for name in ("condenser", "recall"):
        assert environments[name]["OPENAI_BASE_URL"] == "https://llm.example.com/v1", name
        assert environments[name]["MEMORY_LLM_API_KEY_SECRET"] == "s/k", name
    assert environments["condenser"]["MEMORY_LLM_PROVIDER"] == "offline"
    # An openai LLM with Bedrock embeddings: recall gets neither the endpoint nor the key.
    mixed = load_config(ctx(llm_provider="openai", embedding_provider="bedrock", llm_base_url="https://x.io"))
    recall = function_environments(mixed, resources)["recall"]
    assert not {"OPENAI_BASE_URL", "MEMORY_LLM_API_KEY_SECRET"} & recall.keys()


@pytest.mark.parametrize("dimensions", TITAN_V2_DIMENSIONS)
def test_bedrock_embeddings_take_the_sizes_titan_v2_offers(dimensions: int) -> None:
    assert load_config(ctx(llm_provider="bedrock", embedding_dimensions=dimensions)).embedding_dimensions == (
        dimensions
    )


def test_other_providers_take_any_size_in_range() -> None:
    for provider in ("openai", "hashed", "none"):
        assert (
            load_config(ctx(embedding_provider=provider, embedding_dimensions=384)).embedding_dimensions
            == 384
        )


def test_no_context_gives_defaults() -> None:
    config = load_config({})
    assert config.stage == "dev" and config.architecture == "arm64" and config.tracing is True
    assert config.snapstart is False  # SnapStart is billed: a deployment opts in
    assert config.resolved_llm_secret_name is None  # offline


@pytest.mark.parametrize(
    ("context", "key", "fragment"),
    [
        (ctx(max_word=80), "hippocampus.max_word", "Extra inputs are not permitted"),
        (ctx(max_words=2), "hippocampus.max_words", "greater than or equal to 5"),
        (ctx(max_words="many"), "hippocampus.max_words", "valid integer"),
        (ctx(stage="Prod!"), "hippocampus.stage", "pattern"),
        (ctx(raw_retention_days=0), "hippocampus.raw_retention_days", "greater than or equal to 1"),
        (ctx(memory_ttl_days=-1), "hippocampus.memory_ttl_days", "greater than or equal to 1"),
        (ctx(log_retention_days=10), "hippocampus.log_retention_days", "must be one of"),
        (ctx(architecture="arm"), "hippocampus.architecture", "'arm64' or 'x86_64'"),
        (ctx(llm_provider="gpt"), "hippocampus.llm_provider", "'openai', 'bedrock' or 'offline'"),
        (ctx(llm_base_url="https://x.example/v1"), "hippocampus.llm_base_url", "only applies"),
        (
            ctx(llm_provider="bedrock", llm_secret_name="k"),  # bedrock embeddings need no key either
            "hippocampus.llm_secret_name",
            "only applies when llm_provider or embedding_provider is openai",
        ),
        (ctx(llm_provider="openai", llm_base_url="http://x"), "hippocampus.llm_base_url", "pattern"),
        (ctx(llm_secret_name="k"), "hippocampus.llm_secret_name", "only applies when llm_provider"),
        (ctx(llm_timeout_s=45), "hippocampus.llm_timeout_s", "must fit in the condenser timeout"),
        (ctx(raw_retention_days=7), "hippocampus.raw_retention_days", "queue plus DLQ retention"),
        (ctx(alarm_email="ops"), "hippocampus.alarm_email", "pattern"),
        (ctx(tracing="sometimes"), "hippocampus.tracing", "valid boolean"),
        (ctx(snapstart="yes please"), "hippocampus.snapstart", "valid boolean"),
        (
            ctx(llm_provider="bedrock", embedding_dimensions=384),  # bedrock embeddings follow the LLM
            "hippocampus.embedding_dimensions",
            "must be one of 256, 512, 1024 with embedding_provider bedrock",
        ),
        (
            ctx(embedding_provider="bedrock", embedding_dimensions=1536),
            "hippocampus.embedding_dimensions",
            "must be one of 256, 512, 1024",
        ),
        (
            ctx(embedding_dimensions=512),  # offline embeddings follow the offline LLM
            "hippocampus.embedding_dimensions",
            "must be one of 64, 128, 256 with embedding_provider offline",
        ),
        (ctx(embedding_dimensions=32), "hippocampus.embedding_dimensions", "greater than or equal to 64"),
        (ctx(embedding_dimensions=3072), "hippocampus.embedding_dimensions", "less than or equal to 1536"),
        (ctx(embedding_provider="vectors"), "hippocampus.embedding_provider", "'hashed' or 'none'"),
        (ctx(embedding_model="m"), "hippocampus.embedding_model", "only applies when embedding_provider"),
        (
            ctx(llm_provider="openai", embedding_provider="none", embedding_model="m"),
            "hippocampus.embedding_model",
            "only applies when embedding_provider is openai or bedrock",
        ),
        (ctx(max_episodes=0), "hippocampus.max_episodes", "greater than or equal to 1"),
        (ctx(pii="redact"), "hippocampus.pii", "'off' or 'mask'"),
        (ctx(pii_detector="comprehend"), "hippocampus.pii_detector", "only applies when pii is mask"),
        (ctx(pii="mask", pii_detector="regex"), "hippocampus.pii_detector", "'patterns' or 'comprehend'"),
        ({"hippocampus": ["stage"]}, '"hippocampus"', "must be an object"),
    ],
)
def test_errors_name_the_key(context: dict[str, object], key: str, fragment: str) -> None:
    message = error_of(context)
    assert key in message and fragment in message


def test_all_problems_are_reported_at_once() -> None:
    message = error_of(ctx(max_words=1, history_retention_days=0))
    assert "hippocampus.max_words" in message and "hippocampus.history_retention_days" in message


def test_command_line_overrides_win_and_are_parsed() -> None:
    """`cdk deploy -c hippocampus.max_words=80` arrives as strings next to the cdk.json object."""
    config = load_config(
        {
            "hippocampus": {"stage": "dev", "max_words": 50},
            "hippocampus.stage": "prod",
            "hippocampus.max_words": "80",
            "hippocampus.tracing": "false",
            "hippocampus.memory_ttl_days": "null",
            "hippocampus.alarm_email": "ops@example.com",
            "hippocampus.snapstart": "true",
        }
    )
    assert (config.stage, config.max_words, config.tracing) == ("prod", 80, False)
    assert config.snapstart is True
    assert config.memory_ttl_days is None and config.alarm_email == "ops@example.com"
    assert "hippocampus.max_words" in error_of({"hippocampus.max_words": "0"})


def test_openai_secret_defaults_to_a_stage_name() -> None:
    assert load_config(ctx(llm_provider="openai", stage="prod")).resolved_llm_secret_name == (
        "hippocampus/prod/llm-api-key"
    )
    named = load_config(ctx(llm_provider="openai", llm_secret_name="shared/openai"))
    assert named.resolved_llm_secret_name == "shared/openai"
    assert load_config(ctx(llm_provider="bedrock", llm_model="m")).resolved_llm_secret_name is None


def test_invalid_cdk_json_fails_synth_with_the_key(tmp_path: Path) -> None:
    """app.py exits with the message, not a traceback."""
    script = (
        "import sys; sys.argv=['app.py']\n"
        "import infra.app as a, infra.config as c\n"
        "a.read_cdk_json_context = lambda *_: {'hippocampus': {'max_words': 1}}\n"
        "a.main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False, timeout=120
    )
    assert result.returncode != 0
    assert "hippocampus.max_words" in result.stderr and "Traceback" not in result.stderr
