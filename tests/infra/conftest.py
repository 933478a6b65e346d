"""Infra tests: CDK synth assertions, cdk-nag, cfn-lint, layer builds (helpers in helpers.py).

Every synth bundles its assets through `infra.bundling`, which reuses what cdk.out already holds for
the same asset hash: the real layers are installed once per change of their inputs (by `make synth`
or the first test that needs them), not once per test, module or session.
"""

from __future__ import annotations

import os
from collections.abc import Callable
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


@pytest.fixture(scope="session")
def staged_assets(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], dict[str, Path]]:
    """The folders a synth stages for an architecture (`layer:<name>`, `code:<function>`), staged once
    per session (without a stack) and reused from cdk.out when they were built before."""
    from infra.bundling import LambdaAssets  # aws_cdk only for the tests that need assets

    staged: dict[str, dict[str, Path]] = {}

    def stage(architecture: str) -> dict[str, Path]:
        if architecture not in staged:
            outdir = tmp_path_factory.mktemp(f"assets-{architecture}")
            staged[architecture] = LambdaAssets(architecture).stage(outdir)
        return staged[architecture]

    return stage
