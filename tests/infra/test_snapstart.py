"""SnapStart for the read functions (`hippocampus.snapstart`): published versions behind a `live`
alias that the API calls, only for get_memory and recall, and nothing of it when off; the
handlers' before-snapshot priming and after-restore reseeding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match

from tests.infra.helpers import (
    Synth,
    assert_acknowledgments_used_and_explained,
    assert_cfn_lint_clean,
    assert_nag_clean,
    context_with,
    synthesize_once,
)

ROOT = Path(__file__).resolve().parents[2]
READ_FUNCTIONS = ("get_memory", "recall")
OTHER_FUNCTIONS = ("ingest", "condenser")


@pytest.fixture(scope="module")
def snapstart(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize_once(tmp_path_factory, context_with(snapstart=True))


def _aliases(synth: Synth) -> Mapping[str, Mapping[str, Any]]:
    return synth.template.find_resources("AWS::Lambda::Alias")


def _alias_of(synth: Synth, name: str) -> str:
    function_id = synth.function_id(name)
    found = [
        logical_id
        for logical_id, alias in _aliases(synth).items()
        if alias["Properties"]["FunctionName"] == {"Ref": function_id}
    ]
    assert len(found) == 1, found
    return found[0]


def _integration_targets(synth: Synth) -> list[str]:
    """What each API method's Lambda proxy integration invokes, as template text."""
    methods = synth.template.find_resources("AWS::ApiGateway::Method")
    return [json.dumps(method["Properties"]["Integration"]["Uri"]) for method in methods.values()]


def test_snapstart_is_on_for_the_read_functions_only(snapstart: Synth) -> None:
    for name in READ_FUNCTIONS:
        assert snapstart.function(name)["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    for name in OTHER_FUNCTIONS:
        assert "SnapStart" not in snapstart.function(name)


def test_each_read_function_publishes_a_version_behind_a_live_alias(snapstart: Synth) -> None:
    versions = snapstart.template.find_resources("AWS::Lambda::Version")
    assert len(versions) == len(READ_FUNCTIONS)
    for name in READ_FUNCTIONS:
        alias = snapstart.props(_alias_of(snapstart, name))
        assert alias["Name"] == "live"
        version_id = alias["FunctionVersion"]["Fn::GetAtt"][0]
        assert versions[version_id]["Properties"]["FunctionName"] == {"Ref": snapstart.function_id(name)}
        # A replaced version goes: a kept one would keep its snapshot's cache billed.
        assert versions[version_id]["DeletionPolicy"] == "Delete"
    assert len(_aliases(snapstart)) == len(READ_FUNCTIONS)


def test_the_api_invokes_the_aliases_of_the_read_functions(snapstart: Synth) -> None:
    targets = _integration_targets(snapstart)
    for name in READ_FUNCTIONS:
        alias_id, function_id = _alias_of(snapstart, name), snapstart.function_id(name)
        assert any(alias_id in target for target in targets), name
        assert not any(f'"{function_id}"' in target for target in targets), name
        # API Gateway may invoke the alias (the permission names it, not the unpublished function).
        snapstart.template.has_resource_properties(
            "AWS::Lambda::Permission",
            {"FunctionName": {"Ref": alias_id}, "Principal": "apigateway.amazonaws.com"},
        )
    ingest_id = snapstart.function_id("ingest")
    assert any(f'"{ingest_id}"' in target for target in targets)


def test_direct_invokers_are_given_the_aliases_of_the_read_functions(snapstart: Synth) -> None:
    """The stack's outputs name what to invoke: `$LATEST` has no snapshot."""
    outputs = snapstart.template.to_json()["Outputs"]
    for name, output in (("get_memory", "GetMemory"), ("recall", "Recall")):
        alias_id = _alias_of(snapstart, name)
        assert alias_id in json.dumps(outputs[f"{output}FunctionName"]["Value"]), name
        assert alias_id in json.dumps(outputs[f"{output}FunctionArn"]["Value"]), name


def test_snapstart_passes_cdk_nag_and_cfn_lint(snapstart: Synth) -> None:
    assert_nag_clean(snapstart)
    assert_acknowledgments_used_and_explained(snapstart)
    assert_cfn_lint_clean(snapstart)


def test_without_snapstart_no_version_no_alias_and_the_api_invokes_the_functions(
    default_synth: Synth,
) -> None:
    for name in (*READ_FUNCTIONS, *OTHER_FUNCTIONS):
        assert "SnapStart" not in default_synth.function(name)
    default_synth.template.resource_count_is("AWS::Lambda::Version", 0)
    default_synth.template.resource_count_is("AWS::Lambda::Alias", 0)
    targets = _integration_targets(default_synth)
    for name in READ_FUNCTIONS:
        assert any(f'"{default_synth.function_id(name)}"' in target for target in targets), name
    default_synth.template.has_resource_properties(
        "AWS::Lambda::Permission",
        {"FunctionName": Match.object_like({"Fn::GetAtt": [default_synth.function_id("get_memory"), "Arn"]})},
    )


# The Lambda runtime's snapshot_restore_py, as far as a handler uses it: the hooks it registers.
_FAKE_RUNTIME_HOOKS = """
import sys, types
hooks, restore_hooks = [], []
module = types.ModuleType("snapshot_restore_py")
module.register_before_snapshot = lambda function, *args, **kwargs: hooks.append(function) or function
module.register_after_restore = lambda function, *args, **kwargs: restore_hooks.append(function) or function
sys.modules["snapshot_restore_py"] = module
"""


@pytest.mark.parametrize(
    ("function", "services", "model"),
    # recall's S3 client reads the users' stored copies of episodes.
    [("get_memory", ["dynamodb", "s3"], False), ("recall", ["dynamodb", "s3"], True)],
)
def test_the_handler_primes_its_clients_before_the_snapshot_without_a_request(
    function: str, services: list[str], model: bool
) -> None:
    script = f"""{_FAKE_RUNTIME_HOOKS}
import importlib.util, json
import boto3.session
created = []
client = boto3.session.Session.client
def recording(self, service, *args, **kwargs):
    created.append(service)
    return client(self, service, *args, **kwargs)
boto3.session.Session.client = recording
spec = importlib.util.spec_from_file_location("handler", {str(ROOT / "functions" / function / "handler.py")!r})
handler = importlib.util.module_from_spec(spec); spec.loader.exec_module(handler)
before = list(created)
model_before = "tokenizers" in sys.modules  # the offline model's tokenizer: imported when it loads
resolver = "aws_lambda_powertools.event_handler.api_gateway"
resolver_before = resolver in sys.modules
for hook in hooks:
    hook()  # a request would fail: nothing listens at the endpoint
import random
random.seed(7); snapshot_state = random.getstate()
for hook in restore_hooks:
    hook()  # each restored environment reseeds: no two share the snapshot's random sequence
print(json.dumps({{"before": before, "primed": created[len(before):],
                  "model": model_before is False and "tokenizers" in sys.modules,
                  "resolver": resolver in sys.modules, "resolver_at_import": resolver_before,
                  "reseeded": len(restore_hooks) == 1 and random.getstate() != snapshot_state}}))
"""
    environment = {
        **os.environ,  # noqa: TID251
        "MEMORY_TABLE_NAME": "t",
        "MEMORY_BUCKET_NAME": "b",
        "MEMORY_EMBEDDING_PROVIDER": "offline",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=environment, capture_output=True, text=True, check=True
    )
    # The offline model loaded too where the function embeds queries (recall): nothing is sent.
    # get_memory's resolver, which its fast lane leaves for later, is built before the snapshot.
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "before": [],
        "primed": services,
        "model": model,
        "resolver": True,
        "resolver_at_import": function == "recall",
        "reseeded": True,
    }
