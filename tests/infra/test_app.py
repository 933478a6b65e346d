"""`python app.py` (what `make synth` runs): context overrides, the printed summary, the offline warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.app import llm_warning
from infra.config import load_config
from tools.synth_summary import nag_lines

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`make synth CDK_ARGS="-c hippocampus.stage=qa --context hippocampus.max_words=80"`, under a CDK
    CLI that also passes `hippocampus.log_level=DEBUG` (CDK_CONTEXT_JSON), with cdk.json as it is."""
    outdir = tmp_path_factory.mktemp("app-py")
    environment = dict(
        os.environ,  # noqa: TID251 - the child process needs the parent's environment (PATH, HOME)
        CDK_OUTDIR=str(outdir),
        CDK_CONTEXT_JSON='{"hippocampus.log_level": "DEBUG"}',
    )
    arguments = ["-c", "hippocampus.stage=qa", "--context", "hippocampus.max_words=80"]
    result = subprocess.run(
        [sys.executable, "app.py", *arguments],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result, outdir


def condenser_environment(outdir: Path, stack: str) -> dict[str, object]:
    template = json.loads((outdir / f"{stack}.template.json").read_text())
    (variables,) = [
        r["Properties"]["Environment"]["Variables"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"].get("FunctionName") == "hippocampus-qa-condenser"
    ]
    assert isinstance(variables, dict)
    return variables


def test_command_line_and_cdk_cli_context_both_apply(
    run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, outdir = run
    assert [p.name for p in outdir.glob("*.template.json")] == ["Hippocampus-qa.template.json"]
    variables = condenser_environment(outdir, "Hippocampus-qa")
    assert variables["MEMORY_MAX_WORDS"] == "80"  # --context
    assert variables["POWERTOOLS_LOG_LEVEL"] == "DEBUG"  # CDK_CONTEXT_JSON


def test_summary_names_the_stack_its_outputs_and_the_nag_verdict(
    run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, outdir = run
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Synthesized stack Hippocampus-qa (stage qa, LLM offline, arm64")
    template = json.loads((outdir / "Hippocampus-qa.template.json").read_text())
    for key, output in template["Outputs"].items():
        (line,) = [line for line in lines if line.split()[:1] == [key]]
        assert output["Description"] in line, key
    assert any("QueueUrl" in line and "URL of the AWS::SQS::Queue" in line for line in lines)
    report = json.loads((outdir / "validation-report.json").read_text())
    (nag,) = report["pluginReports"]
    acknowledged = len(nag["suppressedViolations"])
    assert f"cdk-nag AwsSolutions: success, 0 unacknowledged findings, {acknowledged} acknowledged" in lines


def test_offline_condenser_is_warned_about_on_stderr(
    run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = run
    warning = [line for line in result.stderr.splitlines() if line.startswith("WARNING: ")]
    assert len(warning) >= 4
    text = "\n".join(warning)
    assert "will not call any LLM" in text
    assert '-c hippocampus.llm_provider=bedrock"' in text and '-c hippocampus.llm_provider=openai"' in text
    assert "hippocampus/qa/llm-api-key" in text  # the secret openai would read in this stage
    assert "WARNING" not in result.stdout


@pytest.mark.parametrize("provider", ["bedrock", "openai"])
def test_no_warning_once_an_llm_is_chosen(provider: str) -> None:
    assert llm_warning(load_config({"hippocampus": {"llm_provider": provider}})) is None


def test_an_argument_that_is_not_an_assignment_is_refused() -> None:
    result = subprocess.run(
        [sys.executable, "app.py", "-c", "hippocampus.stage"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 1
    assert "not an assignment (KEY=VALUE): 'hippocampus.stage'" in result.stderr
    assert "Traceback" not in result.stderr


def test_unacknowledged_findings_are_listed_with_where(tmp_path: Path) -> None:
    """What synth prints on stderr when cdk-nag fails it (read from validation-report.json)."""
    finding = {
        "ruleName": "AwsSolutions-SQS3",
        "violatingConstructs": [{"constructPath": "Hippocampus-dev/Queueing/IngestQueue/Resource"}],
    }
    report = {"pluginName": "AwsSolutions", "conclusion": "failure", "violations": [finding]}
    (tmp_path / "validation-report.json").write_text(json.dumps({"pluginReports": [report]}))
    assert nag_lines(tmp_path) == [
        "cdk-nag AwsSolutions: failure, 1 unacknowledged finding, 0 acknowledged",
        "  finding AwsSolutions-SQS3: Hippocampus-dev/Queueing/IngestQueue/Resource",
    ]


def test_stack_refuses_layers_built_for_another_architecture(tmp_path: Path) -> None:
    """arm64 functions with x86_64 binaries in their layers would fail at their first import."""
    import aws_cdk as cdk

    from infra.bundling import LambdaAssets
    from infra.stack import HippocampusStack

    assets = LambdaAssets("x86_64")
    with pytest.raises(ValueError, match="built for x86_64, the stack is arm64"):
        HippocampusStack(
            cdk.App(outdir=str(tmp_path)), "Hippocampus-dev", config=load_config({}), assets=assets
        )
