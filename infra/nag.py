"""cdk-nag 3 (AwsSolutions) wiring and acknowledgments.

cdk-nag 3 is a CDK policy-validation plugin: `cdk.Validations.of(app).add_plugins(...)`, findings
in `<outdir>/validation-report.json` (synth fails on any unacknowledged finding), and
acknowledgments through `cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(...))`, scoped
to the construct and its children. Granular findings are acknowledged one by one by their full
id, e.g. `AwsSolutions-IAM5[Resource::*]`.
"""

from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

MIN_REASON_CHARS = 40


def add_checks(app: cdk.App) -> None:
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one finding on `scope` (and its children) with a reason specific to it."""
    if len(reason.strip()) < MIN_REASON_CHARS:
        raise ValueError(f"acknowledgment of {rule_id} needs a specific reason, got {reason!r}")
    # The bare rule id (stored as "Annotation::<id>") is honoured both by synth-time validation and
    # by `AwsSolutionsChecks.validate_scope`; the "AwsSolutions::<id>" form only by the former.
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=rule_id, reason=reason))


def logical_id(scope: IConstruct) -> str:
    """The logical id of a construct's CloudFormation resource, as cdk-nag prints it in finding ids."""
    resource = scope.node.default_child if not isinstance(scope, cdk.CfnElement) else scope
    assert isinstance(resource, cdk.CfnElement)
    return cdk.Stack.of(scope).get_logical_id(resource)
