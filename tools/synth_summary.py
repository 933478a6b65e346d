"""What `make synth` prints: the stack it wrote, its outputs, and the cdk-nag verdict.

Read from the cloud assembly on disk (`<outdir>/<stack>.template.json` and
`<outdir>/validation-report.json`), so it describes exactly what was written, without aws_cdk.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Final

NAG_PLUGIN: Final = "AwsSolutions"
REPORT_FILE: Final = "validation-report.json"


def _load(path: Path) -> dict[str, Any]:
    document = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return document


# What `Ref` returns for the resource types this stack exports (CloudFormation's return values).
_REF_RETURNS: Final = {
    "AWS::Lambda::Function": "name",
    "AWS::DynamoDB::Table": "name",
    "AWS::S3::Bucket": "name",
    "AWS::SQS::Queue": "URL",
    "AWS::SNS::Topic": "ARN",
    "AWS::ApiGateway::RestApi": "id",
}


def value_kind(value: Any, resources: dict[str, Any]) -> str:
    """What an output's value is at synth time: a literal, or which attribute of which resource."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict) and "Ref" in value:
        resource_type = resources.get(value["Ref"], {}).get("Type", "")
        return f"{_REF_RETURNS.get(resource_type, 'Ref')} of the {resource_type or value['Ref']}"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        return f"{attribute} of the {resources.get(logical_id, {}).get('Type', logical_id)}"
    return "composed from resource attributes at deploy time"


def nag_report(outdir: Path) -> dict[str, Any] | None:
    """The AwsSolutions part of the validation report, if synth got as far as writing it."""
    path = outdir / REPORT_FILE
    if not path.is_file():
        return None
    for report in _load(path).get("pluginReports", []):
        if report.get("pluginName") == NAG_PLUGIN:
            return dict(report)
    return None


def nag_lines(outdir: Path) -> list[str]:
    """cdk-nag's verdict: unacknowledged findings (each with where), and acknowledgments by rule."""
    report = nag_report(outdir)
    if report is None:
        return [f"cdk-nag {NAG_PLUGIN}: no report in {outdir / REPORT_FILE}"]
    violations = report.get("violations", [])
    suppressed = report.get("suppressedViolations", [])
    lines = [
        f"cdk-nag {NAG_PLUGIN}: {report.get('conclusion', 'unknown')}, "
        f"{len(violations)} unacknowledged finding{'' if len(violations) == 1 else 's'}, "
        f"{len(suppressed)} acknowledged"
    ]
    for violation in violations:
        paths = [c.get("constructPath", "?") for c in violation.get("violatingConstructs", [])]
        lines.append(f"  finding {violation.get('ruleName')}: {', '.join(paths) or '?'}")
    if suppressed:
        by_rule = Counter(str(s.get("ruleName", "?")).split("[", 1)[0] for s in suppressed)
        counts = ", ".join(f"{rule} x{count}" for rule, count in by_rule.most_common())
        lines.append(f"  acknowledged: {counts}")
        lines.append(f"  (each with its reason under suppressedViolations in {outdir / REPORT_FILE})")
    return lines


def summary(outdir: Path, stack_name: str, details: str = "") -> str:
    """The stack, its outputs (key, description, what the value is), and the cdk-nag verdict."""
    template_file = outdir / f"{stack_name}.template.json"
    template = _load(template_file)
    resources: dict[str, Any] = template.get("Resources", {})
    outputs: dict[str, Any] = template.get("Outputs", {})
    lines = [
        f"Synthesized stack {stack_name}{f' ({details})' if details else ''}",
        f"  template: {template_file} ({len(resources)} resources)",
        "",
        f"Outputs ({len(outputs)}): each value is resolved by CloudFormation at deploy time; read them after",
        f"`make deploy` with: aws cloudformation describe-stacks --stack-name {stack_name} "
        '--query "Stacks[0].Outputs"',
    ]
    key_width = max((len(key) for key in outputs), default=0) + 2
    description_width = max((len(o.get("Description", "")) for o in outputs.values()), default=0) + 2
    for key, output in outputs.items():
        description = output.get("Description", "")
        kind = value_kind(output.get("Value"), resources)
        lines.append(f"  {key:<{key_width}}{description:<{description_width}}{kind}".rstrip())
    lines += ["", *nag_lines(outdir)]
    return "\n".join(lines)
