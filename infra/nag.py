"""cdk-nag 3 (AwsSolutions) wiring and acknowledgments.

cdk-nag 3 is a CDK policy-validation plugin: `cdk.Validations.of(app).add_plugins(...)`, findings
in `<outdir>/validation-report.json` (synth fails on any unacknowledged finding), and
acknowledgments through `cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(...))`, scoped
to the construct and its children. Granular findings are acknowledged one by one by their full
id, e.g. `AwsSolutions-IAM5[Resource::*]`.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

MIN_REASON_CHARS = 40
PLUGIN_NAME = "AwsSolutions"


def add_checks(app: cdk.App) -> None:
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one finding on `scope` (and its children) with a reason specific to it."""
    if len(reason.strip()) < MIN_REASON_CHARS:
        raise ValueError(f"acknowledgment of {rule_id} needs a specific reason, got {reason!r}")
    # "<plugin>::<rule>", as the report itself suggests: acknowledged this way, a finding is listed
    # with its reason under `suppressedViolations` in validation-report.json (a bare id is filed
    # as "Annotation::<rule>", suppresses the finding too, but leaves no trace in the report).
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=f"{PLUGIN_NAME}::{rule_id}", reason=reason))


def nag_text(scope: IConstruct, value: str) -> str:
    """A (tokenized) string as cdk-nag prints it in finding ids: `<AWS::Region>`, `<Logical.Arn>`, literals."""
    return _flatten(cdk.Stack.of(scope).resolve(value))


def _flatten(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return f"<{argument}>"
        if function == "Fn::GetAtt":
            return f"<{'.'.join(argument)}>"
        if function == "Fn::Join":
            separator, parts = argument
            return str(separator).join(_flatten(part) for part in parts)
    raise ValueError(f"cannot render {value!r} as a cdk-nag finding id")
