"""Helpers of the infra tests: synthesize the app (once per module, in the module's fixture) and read it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Before aws_cdk is imported anywhere: jsii's Node 20 end-of-life warning is noise (DESIGN §7).
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # noqa: TID251

import aws_cdk as cdk
from aws_cdk.assertions import Template
from cfnlint.api import lint
from cfnlint.config import ManualArgs

from infra import assets
from infra.app import build_app
from infra.config import read_cdk_json_context
from infra.nag import MIN_REASON_CHARS, PLUGIN_NAME
from infra.stack import HippocampusStack


@dataclass
class Synth:
    app: cdk.App
    stack: HippocampusStack
    outdir: Path
    template: dict[str, Any]
    assertions: Template
    error: str | None  # synth failure (e.g. an unacknowledged cdk-nag finding), with the report

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.template["Resources"]

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == resource_type}

    def props(self, logical_id: str) -> dict[str, Any]:
        return self.resources[logical_id].get("Properties", {})

    def function_ids(self) -> dict[str, str]:
        """FunctionName (hippocampus-<stage>-get-memory) → logical id."""
        functions = self.of_type("AWS::Lambda::Function").items()
        # (CDK's own custom-resource providers have no FunctionName.)
        return {p["Properties"]["FunctionName"]: k for k, p in functions if "FunctionName" in p["Properties"]}

    def function_id(self, name: str) -> str:
        wanted = f"{self.stack.config.name_prefix}-{name.replace('_', '-')}"
        return self.function_ids()[wanted]

    def asset_dir(self, s3_key: Any) -> Path:
        """The staged asset folder in cdk.out of a `Code.S3Key` / `Content.S3Key` (`<hash>.zip`)."""
        assert isinstance(s3_key, str)
        return self.outdir / f"asset.{s3_key.removesuffix('.zip')}"

    def report(self) -> dict[str, Any]:
        return json.loads((self.outdir / "validation-report.json").read_text())


def context_with(**settings: Any) -> dict[str, Any]:
    """cdk.json's feature flags with these settings (the model's defaults for the others)."""
    return read_cdk_json_context() | {"hippocampus": settings}


def synthesize(outdir: Path, context: Mapping[str, Any] | None = None, customize: Any = None) -> Synth:
    """Build and synthesize the app as `make synth` does (cdk-nag included) into `outdir`."""
    app, stack = build_app(
        context=context if context is not None else read_cdk_json_context(),
        outdir=str(outdir),
        functions_dir=assets.FUNCTIONS_DIR,
    )
    if customize is not None:
        customize(stack)
    error = None
    try:
        app.synth()
    except RuntimeError as exc:  # cdk-nag findings fail synth; the report says which
        report = outdir / "validation-report.json"
        error = f"{exc}\n{report.read_text() if report.exists() else ''}"
    template_file = outdir / f"{stack.stack_name}.template.json"
    template = json.loads(template_file.read_text()) if template_file.exists() else {"Resources": {}}
    return Synth(
        app=app,
        stack=stack,
        outdir=outdir,
        template=template,
        assertions=Template.from_json(template),
        error=error,
    )


def render(value: Any) -> str:
    """A CloudFormation value as text: Fn::Join flattened, Ref/GetAtt shown as ${Name} / ${Name.Attr}."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Fn::Join":
            separator, parts = arg
            return separator.join(render(part) for part in parts)
        if key == "Ref":
            return "${" + arg + "}"
        if key == "Fn::GetAtt":
            return "${" + ".".join(arg) + "}"
        if key == "Fn::Sub":
            return arg if isinstance(arg, str) else arg[0]
    return json.dumps(value, sort_keys=True)


def statements(synth: Synth) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every IAM policy statement of the template: identity policies and resource policies."""
    for logical_id, resource in synth.resources.items():
        props = resource.get("Properties", {})
        documents = []
        if resource["Type"] in {"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"}:
            documents.append(props["PolicyDocument"])
        elif resource["Type"] == "AWS::IAM::Role":
            documents += [p["PolicyDocument"] for p in props.get("Policies", [])]
        elif resource["Type"] in {"AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy"}:
            documents.append(props["PolicyDocument"])
        for document in documents:
            for statement in document["Statement"]:
                yield logical_id, statement


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# ----------------------------------------------------------------------------- cdk-nag and cfn-lint

LINT_REGIONS = ["us-east-1", "eu-west-1"]
# CDK adds an explicit DependsOn on a function's role, which cfn-lint notes is already implied.
ACCEPTED_LINT_WARNINGS = {"W3005"}


def acknowledgments(synth: Synth) -> list[tuple[str, str, str]]:
    """(construct path, rule id, reason) of every acknowledgment recorded in the construct tree."""
    key = cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    found = []
    for construct in synth.stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == key:
                for rule_id, reason in entry.data.items():
                    found.append((construct.node.path, rule_id.removeprefix(f"{PLUGIN_NAME}::"), reason))
    return found


def plugin_report(synth: Synth) -> dict[str, Any]:
    (report,) = [r for r in synth.report()["pluginReports"] if r["pluginName"] == PLUGIN_NAME]
    return report


def assert_nag_clean(synth: Synth) -> None:
    """Synth passed cdk-nag: the AwsSolutions report concludes success with no open finding."""
    assert synth.error is None, synth.error
    report = plugin_report(synth)
    assert report["conclusion"] == "success"
    assert report["violations"] == []


def assert_acknowledgments_used_and_explained(synth: Synth) -> None:
    """Every acknowledgment in the tree suppressed a real finding, and says why (the report lists them)."""
    suppressed = plugin_report(synth).get("suppressedViolations", [])
    used = {(s["acknowledgedAt"], s["acknowledgedId"].removeprefix(f"{PLUGIN_NAME}::")) for s in suppressed}
    recorded = acknowledgments(synth)
    assert recorded
    for path, rule_id, reason in recorded:
        assert (path, rule_id) in used, f"unused acknowledgment {rule_id} on {path}"
        assert rule_id.startswith("AwsSolutions-")
        assert len(reason) >= MIN_REASON_CHARS, (rule_id, reason)
    for violation in suppressed:
        assert len(violation["reason"]) >= MIN_REASON_CHARS


def assert_cfn_lint_clean(synth: Synth) -> None:
    """Zero errors; no warnings but the accepted ones."""
    template = (synth.outdir / f"{synth.stack.stack_name}.template.json").read_text()
    matches = lint(template, config=ManualArgs(regions=LINT_REGIONS))
    problems = [
        f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})"
        for m in matches
        if m.rule.id.startswith("E")
        or (m.rule.id.startswith("W") and m.rule.id not in ACCEPTED_LINT_WARNINGS)
    ]
    assert problems == []
