"""mypy skips the aws_cdk modules infra/ does not use (pyproject.toml): every one it uses stays checked."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_aws_cdk_module_infra_imports_is_type_checked() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    followed = {
        module
        for override in config
        if override.get("follow_imports") == "normal"
        for module in override["module"]
    }
    sources = [
        *ROOT.glob("infra/*.py"),
        ROOT / "app.py",
        *ROOT.glob("tools/*.py"),
        *ROOT.glob("tests/infra/*.py"),
    ]
    imported = {"aws_cdk"} if any("import aws_cdk" in path.read_text() for path in sources) else set()
    for path in sources:
        text = path.read_text()
        imported |= {f"aws_cdk.{name}" for name in re.findall(r"^from aws_cdk import (\w+)", text, re.M)}
        imported |= set(re.findall(r"^from (aws_cdk\.\w+) import", text, re.M))
    assert imported and imported <= followed, sorted(imported - followed)
