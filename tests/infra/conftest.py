"""Infra tests: CDK synth assertions, cdk-nag, cfn-lint, layer builds (helpers in helpers.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# Before aws_cdk is imported anywhere: jsii's Node 20 end-of-life warning is noise.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # noqa: TID251

if TYPE_CHECKING:
    from tests.infra.helpers import Synth


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.infra)


@pytest.fixture(scope="session")
def default_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The stack with the model's default settings (not whatever cdk.json says today), synthesized once.

    Shared by the modules that check one part of it (storage, functions, API, monitoring).
    """
    from tests.infra.helpers import context_with, synthesize_once  # aws_cdk only for the tests that synth

    result = synthesize_once(tmp_path_factory, context_with())
    assert result.error is None, result.error
    return result
