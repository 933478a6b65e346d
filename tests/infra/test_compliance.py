"""cdk-nag (AwsSolutions) and cfn-lint on the stack cdk.json describes (what `make deploy` ships)."""

from __future__ import annotations

import pytest

from tests.infra.helpers import (
    Synth,
    assert_acknowledgments_used_and_explained,
    assert_cfn_lint_clean,
    assert_nag_clean,
    synthesize,
)


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk-nag"))


def test_nag_report_is_clean(synth: Synth) -> None:
    assert_nag_clean(synth)


def test_every_acknowledgment_is_used_and_explained(synth: Synth) -> None:
    assert_acknowledgments_used_and_explained(synth)


def test_cfn_lint_has_no_errors(synth: Synth) -> None:
    assert_cfn_lint_clean(synth)
