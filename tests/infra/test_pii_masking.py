"""PII masking in the deployment (`pii`, `pii_detector`): what each function is told, the layers of
the pattern detector, and Comprehend's one action.

Three stacks, each synthesized once per process (`synthesize_once`): the default (`default_synth`,
masking off), `pii: mask` (the pattern detector) and `pii: mask, pii_detector: comprehend`.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from typing import Any, get_args

import pytest
from aws_cdk.assertions import Match

from hippocampus.contracts.names import EmbeddingProviderName, LlmProviderName
from infra import specs
from infra.config import load_config
from infra.specs import FUNCTION_SPECS, MAX_LAYERS, ResourceNames, function_environments
from tests.infra.helpers import (
    FUNCTIONS,
    Synth,
    acknowledgments,
    as_list,
    assert_acknowledgments_used_and_explained,
    assert_cfn_lint_clean,
    assert_nag_clean,
    cli_context,
    granted,
    statements,
    synthesize_once,
)
from tools import assets

MASKING = ("ingest", "condenser", "recall")  # get_memory never masks
PII_VARIABLES = ("MEMORY_PII", "MEMORY_PII_DETECTOR")
DETECT = "comprehend:DetectPiiEntities"
# The pattern detector's top-level packages, as its layer holds them.
DETECTOR_PACKAGES = {"phonenumbers", "stdnum"}


@pytest.fixture(scope="module")
def patterns(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    result = synthesize_once(tmp_path_factory, cli_context(pii="mask"))
    assert result.error is None, result.error
    return result


@pytest.fixture(scope="module")
def comprehend(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    result = synthesize_once(tmp_path_factory, cli_context(pii="mask", pii_detector="comprehend"))
    assert result.error is None, result.error
    return result


def layer_names(synth: Synth, name: str) -> set[str]:
    """A function's layers, by the name after the stage prefix (`deps`, `pii`, ...)."""
    prefix = synth.stack.config.name_prefix + "-"
    return {
        synth.props(layer["Ref"])["LayerName"].removeprefix(prefix)
        for layer in synth.function(name)["Layers"]
    }


def deployed_layers(synth: Synth) -> set[str]:
    prefix = synth.stack.config.name_prefix + "-"
    found = synth.template.find_resources("AWS::Lambda::LayerVersion").values()
    return {resource["Properties"]["LayerName"].removeprefix(prefix) for resource in found}


def packages(synth: Synth, name: str) -> set[str]:
    return {p.name for d in synth.layer_dirs(name) for p in (d / "python").iterdir()}


def comprehend_statements(synth: Synth) -> list[dict[str, Any]]:
    return [s for s in statements(synth) if [a for a in as_list(s["Action"]) if a.startswith("comprehend:")]]


# ----------------------------------------------------------------------------- without CDK


def test_only_the_masking_functions_are_told_and_only_when_masking_is_on() -> None:
    resources = ResourceNames("t", "b", "q", "d")
    off = function_environments(load_config({}), resources)
    assert not [(name, v) for name, env in off.items() for v in env if v.startswith("MEMORY_PII")]
    for detector in ("patterns", "comprehend"):
        config = load_config({"hippocampus": {"pii": "mask", "pii_detector": detector}})
        environments = function_environments(config, resources)
        for name in MASKING:
            assert {v: environments[name][v] for v in PII_VARIABLES} == {
                "MEMORY_PII": "mask",
                "MEMORY_PII_DETECTOR": detector,
            }, name
        assert not [v for v in environments["get_memory"] if v.startswith("MEMORY_PII")]
    assert {spec.name for spec in FUNCTION_SPECS if spec.masks} == set(MASKING)


def test_no_function_gets_more_layers_than_lambda_allows() -> None:
    """Every combination of the settings that add layers: the condenser, which carries four before
    any of them, takes the offline model and the pattern detector as one merged layer."""
    settings = itertools.product(
        get_args(LlmProviderName), get_args(EmbeddingProviderName), (False, True), ("off", "patterns")
    )
    for llm, embeddings, tracing, pii in settings:
        values: dict[str, object] = {
            "llm_provider": llm,
            "embedding_provider": embeddings,
            "tracing": tracing,
        }
        if pii != "off":
            values |= {"pii": "mask", "pii_detector": pii}
        config = load_config({"hippocampus": values})
        for spec in FUNCTION_SPECS:
            layers = spec.layers_for(config)
            assert len(layers) <= MAX_LAYERS, (spec.name, values, layers)
            assert len(set(layers)) == len(layers), (spec.name, values, layers)
            detector = {"pii", "embeddings-pii"} & set(layers)
            assert bool(detector) == (spec.masks and pii == "patterns"), (spec.name, values, layers)


def test_merged_layers_are_built_from_the_parts_the_specs_name() -> None:
    assert {
        name: tuple(part.name for part in layer.parts) for name, layer in assets.MERGED_LAYERS.items()
    } == (specs.MERGED_LAYERS)
    for parts in specs.MERGED_LAYERS.values():
        assert set(parts) <= assets.REQUIREMENT_LAYERS.keys()


# ----------------------------------------------------------------------------- the default stack


def test_by_default_nothing_masks_carries_the_detector_or_may_call_comprehend(default_synth: Synth) -> None:
    for name in FUNCTIONS:
        default_synth.template.has_resource_properties(
            "AWS::Lambda::Function",
            {
                "FunctionName": f"hippocampus-dev-{name.replace('_', '-')}",
                "Environment": {"Variables": dict.fromkeys(PII_VARIABLES, Match.absent())},
            },
        )
        assert not {"pii", "embeddings-pii"} & layer_names(default_synth, name), name
        assert not DETECTOR_PACKAGES & packages(default_synth, name), name
    # Neither layer is even deployed unused.
    assert deployed_layers(default_synth) == {"deps", "xray", "llm", "embeddings", "core"}
    assert comprehend_statements(default_synth) == []


# ----------------------------------------------------------------------------- pii: mask (patterns)


def test_patterns_the_masking_functions_are_told_and_carry_the_detector(patterns: Synth) -> None:
    for name in FUNCTIONS:
        masks = name in MASKING
        patterns.template.has_resource_properties(
            "AWS::Lambda::Function",
            {
                "FunctionName": f"hippocampus-dev-{name.replace('_', '-')}",
                "Environment": {
                    "Variables": {
                        "MEMORY_PII": "mask" if masks else Match.absent(),
                        "MEMORY_PII_DETECTOR": "patterns" if masks else Match.absent(),
                    }
                },
            },
        )
        assert (packages(patterns, name) >= DETECTOR_PACKAGES) == masks, name
    assert layer_names(patterns, "get_memory") == {"deps", "core"}
    assert layer_names(patterns, "ingest") == {"deps", "xray", "core", "pii"}
    # Six layers would be one over Lambda's limit: the offline model and the detector come as one.
    assert layer_names(patterns, "condenser") == {"deps", "xray", "llm", "core", "embeddings-pii"}
    assert layer_names(patterns, "recall") == {"deps", "core", "embeddings-pii"}
    assert deployed_layers(patterns) == {"deps", "xray", "llm", "core", "pii", "embeddings-pii"}


def test_patterns_layers_hold_the_model_and_the_detector_without_overlap(patterns: Synth) -> None:
    for name in ("condenser", "recall"):
        assert {"tokenizers", "wordllama"} | DETECTOR_PACKAGES <= packages(patterns, name), name
    for name in FUNCTIONS:
        tops = [{p.name for p in (d / "python").iterdir()} for d in patterns.layer_dirs(name)]
        assert sum(map(len, tops)) == len(set().union(*tops)), name  # one /opt/python: no package twice


def test_patterns_calls_nothing_and_passes_cdk_nag(patterns: Synth) -> None:
    assert comprehend_statements(patterns) == []
    assert_nag_clean(patterns)
    assert_acknowledgments_used_and_explained(patterns)


# ----------------------------------------------------------------------------- pii_detector: comprehend


def test_comprehend_the_masking_roles_may_detect_pii_and_nothing_more(comprehend: Synth) -> None:
    for name in FUNCTIONS:
        grants = granted(comprehend, comprehend.role_id(name))
        comprehend_grants = {
            action: resources for action, resources in grants.items() if "comprehend" in action
        }
        # DetectPiiEntities has no resource type (Service Authorization Reference): "*" is the only value.
        assert comprehend_grants == ({DETECT: {"*"}} if name in MASKING else {}), name
        comprehend.template.has_resource_properties(
            "AWS::Lambda::Function",
            {
                "FunctionName": f"hippocampus-dev-{name.replace('_', '-')}",
                "Environment": {
                    "Variables": {
                        "MEMORY_PII": "mask" if name in MASKING else Match.absent(),
                        "MEMORY_PII_DETECTOR": "comprehend" if name in MASKING else Match.absent(),
                    }
                },
            },
        )
        # Comprehend is called through boto3: no detector libraries.
        assert not {"pii", "embeddings-pii"} & layer_names(comprehend, name), name
    assert deployed_layers(comprehend) == {"deps", "xray", "llm", "embeddings", "core"}
    # One statement per masking role, alone in its policy, which its function waits for.
    for statement in comprehend_statements(comprehend):
        assert as_list(statement["Action"]) == [DETECT] and statement["Resource"] == "*", statement
    policies = comprehend.template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"PolicyName": Match.string_like_regexp("PiiDetectionPolicy")}}
    )
    assert len(policies) == len(MASKING)
    for name in MASKING:
        function = comprehend.template.to_json()["Resources"][comprehend.function_id(name)]
        assert [p for p in function["DependsOn"] if p in policies], name


def test_comprehend_passes_cdk_nag_and_cfn_lint(comprehend: Synth) -> None:
    assert_nag_clean(comprehend)
    assert_acknowledgments_used_and_explained(comprehend)
    assert_cfn_lint_clean(comprehend)


def test_comprehend_adds_one_reviewed_acknowledgment_per_masking_policy(
    comprehend: Synth, default_synth: Synth
) -> None:
    """The security review gate of test_compliance.py, for this variant: besides the default
    stack's acknowledgments, Resource '*' on each PiiDetectionPolicy, and nowhere else."""

    def rules(synth: Synth) -> Counter[str]:
        return Counter(re.sub(r"<[^>]+>", "<ref>", rule_id) for _, rule_id, _ in acknowledgments(synth))

    added = rules(comprehend) - rules(default_synth)
    assert added == {"AwsSolutions-IAM5[Resource::*]": len(MASKING)}
    paths = [path for path, _, reason in acknowledgments(comprehend) if "DetectPiiEntities" in reason]
    assert sorted(path.split("/")[-2:] for path in paths) == sorted(
        [name.replace("_", " ").title().replace(" ", ""), "PiiDetectionPolicy"] for name in MASKING
    )
