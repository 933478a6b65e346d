"""cdk-nag (AwsSolutions) and cfn-lint on the stack cdk.json describes (what `make deploy` ships)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from infra.config import read_cdk_json_context
from tests.infra.helpers import (
    Synth,
    acknowledgments,
    assert_acknowledgments_used_and_explained,
    assert_cfn_lint_clean,
    assert_nag_clean,
    synthesize_once,
)


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    # The same synth as `default_synth` while cdk.json keeps the model's defaults.
    return synthesize_once(tmp_path_factory, read_cdk_json_context())


def test_nag_report_is_clean(synth: Synth) -> None:
    assert_nag_clean(synth)


def test_every_acknowledgment_is_used_and_explained(synth: Synth) -> None:
    assert_acknowledgments_used_and_explained(synth)


def test_acknowledged_findings_are_the_reviewed_ones(synth: Synth) -> None:
    """A security review gate: a new acknowledged finding changes this list, and must be reviewed."""
    rules = Counter(re.sub(r"<[^>]+>", "<ref>", rule_id) for _, rule_id, _ in acknowledgments(synth))
    assert rules == {
        "AwsSolutions-L1": 5,  # python3.13, the runtime we compile bytecode for
        # X-Ray, one per traced function; dynamodb:ListStreams, alone in the events role's StreamListPolicy.
        "AwsSolutions-IAM5[Resource::*]": 5 + 1,
        "AwsSolutions-SQS3": 1,  # the events DLQ: the stream's on-failure destination, itself no queue's DLQ
        "AwsSolutions-IAM5[Resource::<ref>/history/*]": 3,
        "AwsSolutions-IAM5[Resource::<ref>/raw/*]": 3,
        # The stored copies of users' episodes: recall reads, the condenser keeps, ingest erases.
        "AwsSolutions-IAM5[Resource::<ref>/recall/*]": 3,
        "AwsSolutions-IAM4[Policy::arn:<ref>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]": 1,
        "AwsSolutions-APIG2": 1,  # parameters validated by API Gateway, bodies by the Lambda (422)
        "AwsSolutions-APIG3": 1,  # no WAF: IAM auth + throttling
        "AwsSolutions-COG4": 1,  # IAM auth, not Cognito
    }


def test_reasons_are_specific(synth: Synth) -> None:
    by_reason: dict[str, set[str]] = {}
    for _, rule_id, reason in acknowledgments(synth):
        by_reason.setdefault(reason, set()).add(re.sub(r"\[.*", "", rule_id))
    # A reason may cover the same finding on several constructs, never two different rules.
    assert all(len(rules) == 1 for rules in by_reason.values()), by_reason
    generic = re.compile(r"^(ok|fine|n/?a|not needed|suppress(ed)?|false positive)\.?$", re.IGNORECASE)
    assert not [reason for reason in by_reason if generic.match(reason.strip())]


def test_cfn_lint_has_no_errors(synth: Synth) -> None:
    assert_cfn_lint_clean(synth)
