"""Helpers of the infra tests: synthesize the app (once per module or session, in a fixture) and read it.

Assertions go through `aws_cdk.assertions.Template` (`synth.template`); the few helpers below
only find a resource's logical id, render a CloudFormation value as text, or list what a
function's role may do (a negative assertion, "nothing else", has no Template matcher).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Before aws_cdk is imported anywhere: jsii's Node 20 end-of-life warning is noise.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # noqa: TID251

import aws_cdk as cdk
from aws_cdk.assertions import Match, Template
from cfnlint.api import lint
from cfnlint.config import ManualArgs

from infra.app import build_app
from infra.config import CONTEXT_KEY, load_config, read_cdk_json_context
from infra.nag import MIN_REASON_CHARS, PLUGIN_NAME
from infra.stack import HippocampusStack
from tools.synth_summary import REPORT_FILE

FUNCTIONS = ("get_memory", "ingest", "condenser", "recall", "events")


@dataclass
class Synth:
    app: cdk.App
    stack: HippocampusStack
    outdir: Path
    template: Template
    error: str | None  # synth failure (e.g. an unacknowledged cdk-nag finding), with the report

    def logical_id(self, resource_type: str, properties: Mapping[str, Any]) -> str:
        """The one resource of this type whose properties match (`Template.find_resources`)."""
        found = self.template.find_resources(resource_type, {"Properties": properties})
        assert len(found) == 1, f"{resource_type} {properties}: {len(found)} found"
        return next(iter(found))

    def props(self, logical_id: str) -> dict[str, Any]:
        properties = self.template.to_json()["Resources"][logical_id].get("Properties", {})
        assert isinstance(properties, dict)
        return properties

    def function_id(self, name: str) -> str:
        wanted = f"{self.stack.config.name_prefix}-{name.replace('_', '-')}"
        return self.logical_id("AWS::Lambda::Function", {"FunctionName": wanted})

    def function(self, name: str) -> dict[str, Any]:
        return self.props(self.function_id(name))

    def role_id(self, name: str) -> str:
        return str(self.function(name)["Role"]["Fn::GetAtt"][0])

    def environment(self, name: str) -> dict[str, Any]:
        variables = self.function(name)["Environment"]["Variables"]
        assert isinstance(variables, dict)
        return variables

    def asset_dir(self, s3_key: Any) -> Path:
        """The staged asset folder in cdk.out of a `Code.S3Key` / `Content.S3Key` (`<hash>.zip`)."""
        assert isinstance(s3_key, str)
        return self.outdir / f"asset.{s3_key.removesuffix('.zip')}"

    def layer_dirs(self, name: str) -> list[Path]:
        """The staged folder of each layer of a function, in its order."""
        layers = self.function(name)["Layers"]
        return [self.asset_dir(self.props(layer["Ref"])["Content"]["S3Key"]) for layer in layers]

    def report(self) -> dict[str, Any]:
        report = json.loads((self.outdir / REPORT_FILE).read_text())
        assert isinstance(report, dict)
        return report


def context_with(**settings: Any) -> dict[str, Any]:
    """cdk.json's feature flags with these settings (the model's defaults for the others)."""
    return read_cdk_json_context() | {CONTEXT_KEY: settings}


def cli_context(**overrides: str) -> dict[str, Any]:
    """cdk.json's context with `-c hippocampus.<key>=<value>` overrides, as the CDK CLI passes them."""
    return read_cdk_json_context() | {f"{CONTEXT_KEY}.{key}": value for key, value in overrides.items()}


def synthesize(outdir: Path, context: Mapping[str, Any] | None = None, customize: Any = None) -> Synth:
    """Build and synthesize the app as `make synth` does (cdk-nag included) into `outdir`."""
    app, stack = build_app(context=context, outdir=str(outdir))
    if customize is not None:
        customize(stack)
    error = None
    try:
        app.synth()
    except RuntimeError as exc:  # cdk-nag findings fail synth; the report says which
        report = outdir / REPORT_FILE
        error = f"{exc}\n{report.read_text() if report.exists() else ''}"
    # After a successful synth, from_stack reads the cached assembly (no second synth).
    template = Template.from_stack(stack) if error is None else Template.from_json({"Resources": {}})
    return Synth(app=app, stack=stack, outdir=outdir, template=template, error=error)


_SYNTHS: dict[str, Synth] = {}


def synthesize_once(outdir_factory: Any, context: Mapping[str, Any]) -> Synth:
    """`synthesize`, once per distinct stack in this process: the same feature flags and the same
    resulting config give the same stack, so the modules that need it share one synth."""
    flags = {key: value for key, value in context.items() if not key.startswith(CONTEXT_KEY)}
    key = json.dumps(flags, sort_keys=True) + load_config(context).model_dump_json()
    if key not in _SYNTHS:
        _SYNTHS[key] = synthesize(outdir_factory.mktemp("cdk"), context)
    return _SYNTHS[key]


def render(value: Any) -> str:
    """A CloudFormation value as text: Fn::Join flattened, Ref/GetAtt shown as ${Name} / ${Name.Attr}."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Fn::Join":
            separator, parts = arg
            return str(separator).join(render(part) for part in parts)
        if key == "Ref":
            return "${" + str(arg) + "}"
        if key == "Fn::GetAtt":
            return "${" + ".".join(arg) + "}"
    return json.dumps(value, sort_keys=True)


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements(synth: Synth) -> Iterator[dict[str, Any]]:
    """Every statement of every identity policy and resource policy of the template."""
    for resource_type in ("AWS::IAM::Policy", "AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy"):
        for resource in synth.template.find_resources(resource_type).values():
            yield from resource["Properties"]["PolicyDocument"]["Statement"]


def granted(synth: Synth, role_id: str) -> dict[str, set[str]]:
    """What a role may do: action → rendered resources (with ` if <condition>` when there is one)."""
    policies = synth.template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"Roles": [{"Ref": role_id}]}}
    )
    result: dict[str, set[str]] = {}
    for policy in policies.values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            assert statement["Effect"] == "Allow"
            condition = (
                f" if {json.dumps(statement['Condition'], sort_keys=True)}"
                if "Condition" in statement
                else ""
            )
            for action in as_list(statement["Action"]):
                texts = {render(resource) + condition for resource in as_list(statement["Resource"])}
                result.setdefault(action, set()).update(texts)
    return result


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
    assert isinstance(report, dict)
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


def resource_paths(synth: Synth) -> dict[str, str]:
    """API Gateway Resource logical id → full path (each resource names its parent)."""
    resources = synth.template.find_resources("AWS::ApiGateway::Resource")
    paths: dict[str, str] = {}

    def path_of(logical_id: str) -> str:
        if logical_id not in paths:
            props = resources[logical_id]["Properties"]
            parent = props["ParentId"]
            paths[logical_id] = f"{path_of(parent['Ref']) if 'Ref' in parent else ''}/{props['PathPart']}"
        return paths[logical_id]

    for logical_id in resources:
        path_of(logical_id)
    return paths


def archive(synth: Synth) -> str:
    """The archive bucket's ARN, as the roles' policies name it (the access-log bucket has no logging)."""
    bucket = synth.logical_id("AWS::S3::Bucket", {"LoggingConfiguration": Match.any_value()})
    return "${" + bucket + ".Arn}"
