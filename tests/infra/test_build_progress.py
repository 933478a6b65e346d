"""The asset builds say what they do while they do it (`make synth` is never silent for minutes)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tools import assets, cache


def test_a_build_says_what_it_builds_and_how_long_it_took(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cache, "BUILD_DIR", tmp_path / "build")
    package = tmp_path / "src" / "probe"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    assets.build_source_layer("probe", package)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("== Building layers/probe")
    assert lines[-1].startswith("   built layers/probe in ") and lines[-1].endswith(" s")
    assets.build_source_layer("probe", package)  # unchanged: skipped, and says nothing
    assert capsys.readouterr().err == ""


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

    monkeypatch.setattr(cache, "progress", show)
    started = time.monotonic()
    cache.run([sys.executable, "-c", script], "probe", echo=True)
    assert lines == ["    Collecting probe", "    shown"]
    assert time.monotonic() - started < 25


def test_a_failed_command_quotes_the_end_of_its_output() -> None:
    script = "import sys\nfor n in range(100): print(f'line {n}')\nsys.exit(3)\n"
    with pytest.raises(cache.AssetBuildError) as failed:
        cache.run([sys.executable, "-c", script], "the probe")
    message = str(failed.value)
    assert message.startswith("the probe failed (exit 3):") and message.endswith("line 99")
    assert "line 39" not in message and f"line {100 - cache.FAILURE_TAIL_LINES}" in message
