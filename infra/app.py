"""Build the CDK app: config from context, the stack, cdk-nag. Used by app.py, the tests and the docs."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from infra.assets import FUNCTIONS_DIR, AssetBuildError
from infra.config import ConfigError, load_config, read_cdk_json_context
from infra.nag import add_checks
from infra.stack import HippocampusStack


def stack_name(stage: str) -> str:
    return f"Hippocampus-{stage}"


def build_app(
    *,
    context: Mapping[str, Any] | None = None,
    outdir: str | None = None,
    functions_dir: Path = FUNCTIONS_DIR,
    nag: bool = True,
) -> tuple[cdk.App, HippocampusStack]:
    """The app and its stack. `context` defaults to cdk.json's; the CDK CLI's context (-c) wins over it."""
    app = cdk.App(context=dict(read_cdk_json_context() if context is None else context), outdir=outdir)
    config = load_config(app.node.get_all_context())
    stack = HippocampusStack(app, stack_name(config.stage), config=config, functions_dir=functions_dir)
    if nag:
        add_checks(app)
    return app, stack


def main() -> None:
    try:
        app, _ = build_app()
    except (ConfigError, AssetBuildError) as exc:
        sys.exit(f"error: {exc}")
    app.synth()
