"""Running `hippocampus backfill` against the CLI fake in a test: the lines written, the command,
its JSON summary and the items it sent (client/README.md "CLI")."""

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from client_cli_fake import FakeHippocampus

from hippocampus_client.cli import cli


def write_lines(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def backfill(fake: FakeHippocampus, path: Path, *extra: str, tenant: str = "acme") -> Result:
    args = [
        "--endpoint",
        fake.url,
        "--tenant",
        tenant,
        "--json",
        "backfill",
        str(path),
        "--no-progress",
        *extra,
    ]
    return CliRunner().invoke(cli, args)


def summary(result: Result) -> dict[str, Any]:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def posted(fake: FakeHippocampus, user: str) -> list[dict[str, Any]]:
    """Every item sent for `user`, in order, replays included."""
    return [
        item
        for r in fake.requests
        if r.method == "POST" and f"/users/{user}/" in r.path + "/"
        for item in r.body["items"]
    ]
