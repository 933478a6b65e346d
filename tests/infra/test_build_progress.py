"""The asset builds say what they do while they do it (`make synth` is never silent for minutes)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from infra.bundling import LambdaAssets
from tools import assets


def test_a_build_says_what_it_builds_and_how_long_it_took(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "functions" / "recall"
    source.mkdir(parents=True)
    (source / "handler.py").write_text("def lambda_handler(event, context):\n    return {}\n")
    probe = LambdaAssets("arm64", functions_dir=tmp_path / "functions", shared_outdir=None)
    probe.stage(tmp_path / "cdk.out", ["code:recall"])
    lines = capfd.readouterr().err.splitlines()
    assert lines[0] == "Bundling asset Assets/code:recall..."  # CDK's line, then the build's own
    assert lines[-1].startswith("   built code of recall in ") and lines[-1].endswith(" s")
    probe.stage(tmp_path / "cdk.out", ["code:recall"])  # unchanged: reused, and nothing to say
    assert "Bundling" not in capfd.readouterr().err


def test_a_long_command_shows_its_output_as_it_comes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The command prints a line, then waits until that line was shown (or 30 s) before it ends.
    shown = tmp_path / "shown"
    script = (
        "import pathlib, time\n"
        "print('Collecting probe', flush=True)\n"
        f"shown, deadline = pathlib.Path({str(shown)!r}), time.monotonic() + 30\n"
        "while not shown.exists() and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "print('shown' if shown.exists() else 'never shown')\n"
    )
    lines: list[str] = []

    def show(line: str) -> None:
        lines.append(line)
        shown.touch()

    monkeypatch.setattr(assets, "progress", show)
    started = time.monotonic()
    assets.run([sys.executable, "-c", script], "probe", echo=True)
    assert lines == ["    Collecting probe", "    shown"]
    assert time.monotonic() - started < 25


def test_a_failed_command_quotes_the_end_of_its_output() -> None:
    script = "import sys\nfor n in range(100): print(f'line {n}')\nsys.exit(3)\n"
    with pytest.raises(assets.AssetBuildError) as failed:
        assets.run([sys.executable, "-c", script], "the probe")
    message = str(failed.value)
    assert message.startswith("the probe failed (exit 3):") and message.endswith("line 99")
    assert "line 39" not in message and f"line {100 - assets.FAILURE_TAIL_LINES}" in message
