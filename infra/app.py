"""Build the CDK app: config from context, the stack (and its assets), cdk-nag. Used by app.py and the tests.

`python app.py` (what `make synth` runs, and what the CDK CLI runs for `make deploy`) takes the
same context overrides as the CDK CLI: `-c hippocampus.stage=prod` / `--context key=value`,
merged over cdk.json's context. Under the CDK CLI, the context arrives in the CDK_CONTEXT_JSON
environment variable instead, which `cdk.App` reads and which wins over both.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from hippocampus.contracts.names import default_model
from infra.bundling import LambdaAssets
from infra.config import CONTEXT_KEY, ConfigError, DeploymentConfig, load_config, read_cdk_json_context
from infra.nag import add_checks
from infra.stack import HippocampusStack
from tools.assets import FUNCTIONS_DIR, progress
from tools.synth_summary import REPORT_FILE, nag_lines, nag_report, summary

# How CDK reports an exception of a local bundler (it prefixes the bundler's message).
BUNDLING_FAILED = "Failed to bundle asset"


def stack_name(stage: str) -> str:
    return f"Hippocampus-{stage}"


def build_app(
    *,
    context: Mapping[str, Any] | None = None,
    outdir: str | None = None,
    assets: LambdaAssets | None = None,
    functions_dir: Path = FUNCTIONS_DIR,
    nag: bool = True,
) -> tuple[cdk.App, HippocampusStack]:
    """The app and its stack. `context` defaults to cdk.json's; the CDK CLI's context wins over it.

    Constructing the stack bundles the layers and the functions' code (`infra.bundling`), each only
    when no asset with its hash is staged yet; `assets` replaces the configured ones.
    """
    app = cdk.App(context=dict(read_cdk_json_context() if context is None else context), outdir=outdir)
    config = load_config(app.node.get_all_context())
    if assets is None:
        assets = LambdaAssets(config.architecture, functions_dir)
    progress(
        f"== Building {stack_name(config.stage)} for {config.architecture}: CDK bundles each layer and "
        "function's code whose inputs changed (a layer's first build runs uv: seconds with uv's cache warm)"
    )
    stack = HippocampusStack(app, stack_name(config.stage), config=config, assets=assets)
    if nag:
        add_checks(app)
    return app, stack


def llm_warning(config: DeploymentConfig) -> str | None:
    """The warning synth prints when the condenser would call no LLM (provider `offline`)."""
    if config.llm_provider != "offline":
        return None
    override = f'CDK_ARGS="-c {CONTEXT_KEY}.llm_provider='
    lines = [
        f'{CONTEXT_KEY}.llm_provider is "offline" (the default in cdk.json): the deployed condenser',
        "will not call any LLM. Memories are merged by a deterministic stand-in that keeps, adds and",
        "drops whole sentences: fit for trying the stack out, not for real users.",
        "Choose an LLM with one override (or set llm_provider in cdk.json; docs/configuration.md):",
        f'  make deploy {override}bedrock"  # {default_model("bedrock")}, IAM only, no secret',
        f'  make deploy {override}openai"   # {default_model("openai")}, API key in the Secrets Manager '
        f"secret hippocampus/{config.stage}/llm-api-key",
    ]
    return "\n".join(f"WARNING: {line}" for line in lines)


def parse_context(assignments: Sequence[str]) -> dict[str, str]:
    """`key=value` pairs, as the CDK CLI's `-c` takes them: the value stays a string (split at the first =)."""
    context = {}
    for assignment in assignments:
        key, separator, value = assignment.partition("=")
        if not separator or not key:
            raise ConfigError(f"context argument is not an assignment (KEY=VALUE): {assignment!r}")
        context[key] = value
    return context


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="app.py",
        description="Synthesize the Hippocampus stack into CDK_OUTDIR (cdk.out); prints what it built.",
    )
    parser.add_argument(
        "-c",
        "--context",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="context over cdk.json's, as with the CDK CLI (e.g. -c hippocampus.stage=prod)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    arguments = _arguments(argv)
    try:
        overrides = parse_context(arguments.context)
        app, stack = build_app(context=read_cdk_json_context() | overrides)
    except ConfigError as exc:
        sys.exit(f"error: {exc}")
    except RuntimeError as exc:  # a build step failed (tools.assets.AssetBuildError, through jsii)
        if BUNDLING_FAILED not in str(exc):
            raise
        sys.exit(f"error: {exc}")
    config = stack.config
    outdir = Path(app.outdir)
    (outdir / REPORT_FILE).unlink(missing_ok=True)  # a stale report must not explain this synth
    started = time.monotonic()
    progress(f"== Synthesizing {stack.stack_name} and checking it with cdk-nag")
    try:
        app.synth()
    except RuntimeError:
        report = nag_report(outdir)
        if report is None or report.get("conclusion") == "success":
            raise
        print("\n".join(nag_lines(outdir)), file=sys.stderr)
        sys.exit(f"error: cdk-nag findings in {stack.stack_name}: acknowledge each with a reason or fix it")
    progress(f"   synthesized in {time.monotonic() - started:.1f} s")
    model = config.resolved_llm_model
    details = f"stage {config.stage}, LLM {config.llm_provider}{f' {model}' if model else ''}, "
    print(summary(outdir, stack.stack_name, details + f"{config.architecture}, in {outdir}"), flush=True)
    warning = llm_warning(config)
    if warning:  # last, so that it is what the terminal shows at the end
        print(f"\n{warning}", file=sys.stderr)
