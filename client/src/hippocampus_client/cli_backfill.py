"""`hippocampus backfill FILE.jsonl`: import past conversations of many users (client/README.md "CLI").

The line formats are in cli_backfill_lines.py, the state file in cli_backfill_state.py, the
sending in cli_backfill_run.py; here are the options, the progress bar, Ctrl-C and the summary.
"""

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import tzinfo
from pathlib import Path
from typing import Any

import click
from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no type information

from .cli_backfill_lines import DEFAULT_BATCH_BYTES, LINE_FORMATS, MAX_BODY_BYTES, MAX_ITEMS
from .cli_backfill_run import Options, Runner, Summary, count_lines
from .cli_backfill_state import BackfillState, FailedLines
from .cli_options import TIMEZONE
from .cli_output import count, emit_json, error_document, error_line, note
from .cli_settings import CliState, pass_state

EXIT_INTERRUPTED = 130  # as a shell reports a command stopped by Ctrl-C

HELP = f"""Import past conversations from FILE (JSON Lines) for many users.

{LINE_FORMATS}

\b
Resuming: FILE.progress (--state) records the lines done, atomically, for
one tenant, endpoint and --agent (or none). Run the same command again after
an interruption (Ctrl-C waits for the requests in flight; twice quits at
once) and the lines done are skipped. Nothing is
stored twice: an item without "id" gets one derived from the user, the line
number, its position and its content, and each request carries an
Idempotency-Key derived from its body, so what was sent but not yet recorded
is recognised by the service. A date is part of an item's content: a
session's "date_time" read in another --timezone makes other items.

\b
Failed lines are listed in the summary and written to FILE.failed.jsonl
(--failed), with their ids, for a re-run; a resume sends them again too.
Exit code: 0, 1 if a line failed or the service kept refusing, 130 if stopped.
"""


@click.command(help=HELP)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--state", "state_path", type=click.Path(dir_okay=False, path_type=Path), help="Default: FILE.progress."
)
@click.option(
    "--failed",
    "failed_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Default: FILE.failed.jsonl.",
)
@click.option(
    "--restart", is_flag=True, help="Ignore the state: send every line again (still no duplicates)."
)
@click.option(
    "--concurrency", type=click.IntRange(1, 32), default=4, show_default=True, help="Requests at once."
)
@click.option("--batch-items", type=click.IntRange(1, MAX_ITEMS), default=MAX_ITEMS, show_default=True)
@click.option(
    "--batch-bytes", type=click.IntRange(1024, MAX_BODY_BYTES), default=DEFAULT_BATCH_BYTES, show_default=True
)
@click.option(
    "--retries",
    type=click.IntRange(0, 100),
    default=8,
    show_default=True,
    help="Per request, after the client's.",
)
@click.option(
    "--retry-pause",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="First pause, doubling.",
)
@click.option(
    "--timezone",
    type=TIMEZONE,
    default="UTC",
    show_default=True,
    metavar="ZONE",
    help='Where a session\'s "date_time" was written: UTC or a name such as Europe/Paris.',
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="The progress bar (default: on a terminal, without --json).",
)
@pass_state
def backfill(
    state: CliState,
    file: Path,
    state_path: Path | None,
    failed_path: Path | None,
    restart: bool,
    concurrency: int,
    batch_items: int,
    batch_bytes: int,
    retries: int,
    retry_pause: float,
    timezone: tzinfo,
    progress: bool | None,
) -> None:
    client = state.client()
    target = f"stack:{state.stack}" if state.stack else str(state.endpoint).rstrip("/")
    state_file = state_path or file.with_name(file.name + ".progress")
    books = BackfillState.load(state_file, file.name, target, client.tenant, restart, client.agent)
    failed = FailedLines(failed_path or file.with_name(file.name + ".failed.jsonl"))
    options = Options(batch_items, batch_bytes, concurrency, retries, retry_pause, timezone=timezone)
    disable = (state.as_json or None) if progress is None else not progress  # None: tqdm checks the TTY
    with tqdm(total=count_lines(file), unit="line", disable=disable, file=sys.stderr, leave=False) as bar:
        runner = Runner(client, books, failed, options, bar)
        with _stop_on_signals(runner):
            try:
                summary = runner.run(file)
            except KeyboardInterrupt:  # the second Ctrl-C: the state was saved on the way out
                summary = runner.summary
                summary.interrupted = True
    _report(state, file, summary, state_file, failed)
    raise click.exceptions.Exit(_exit_code(summary))


@contextmanager
def _stop_on_signals(runner: Runner) -> Iterator[None]:
    """The first Ctrl-C (or SIGTERM) stops after the requests in flight; a second one quits."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        runner.request_stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        note("stopping after the requests in flight (Ctrl-C again to quit now)")

    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _exit_code(summary: Summary) -> int:
    if summary.interrupted:
        return EXIT_INTERRUPTED
    return 1 if summary.stopped is not None or summary.failed else 0


def _report(state: CliState, file: Path, summary: Summary, state_file: Path, failed: FailedLines) -> None:
    failed_file = str(failed.path) if failed.count else None
    if state.as_json:
        document: dict[str, Any] = {
            "file": str(file),
            "lines": summary.lines,
            "done": summary.done,
            "skipped": summary.skipped,
            "failed": summary.failed,
            "items": summary.items,
            "requests": summary.requests,
            "retries": summary.retries,
            "users": len(summary.users),
            "failures": summary.failures,
            "interrupted": summary.interrupted,
            "stopped": error_document(summary.stopped)["error"] if summary.stopped else None,
            "state": str(state_file),
            "failed_file": failed_file,
        }
        emit_json(document)
    else:
        _print_summary(file, summary, state_file, failed_file)
    if summary.stopped is not None:
        note(f"stopped: {error_line(summary.stopped)}; run the same command again to resume")
    elif summary.interrupted:
        note("interrupted: run the same command again to resume")


def _print_summary(file: Path, summary: Summary, state_file: Path, failed_file: str | None) -> None:
    click.echo(
        f"backfill of {file}: {summary.lines} lines read, {summary.done} done, "
        f"{summary.skipped} skipped (done before), {summary.failed} failed; {count(summary.items, 'item')} "
        f"in {count(summary.requests, 'request')} for {count(len(summary.users), 'user')}, "
        f"{summary.retries} {'retry' if summary.retries == 1 else 'retries'}"
    )
    if summary.failures:
        click.echo(f"failed lines (written to {failed_file}):")
        for failure in summary.failures:
            click.echo(f"  line {failure['line']}: {failure['code']}: {failure['message']}")
    click.echo(f"state: {state_file}")
