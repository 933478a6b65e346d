"""Infra tests: CDK synth assertions, cdk-nag, cfn-lint, layer builds (helpers in helpers.py)."""

import os
from pathlib import Path

import pytest

# Before aws_cdk is imported anywhere: jsii's Node 20 end-of-life warning is noise (DESIGN §7).
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # noqa: TID251


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.infra)
