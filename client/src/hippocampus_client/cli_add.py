"""`hippocampus add`, and the waiting for jobs it shares with `hippocampus wait` (client/README.md "CLI").

The text comes from the arguments, from `--file`, or from stdin (`-`, or whenever stdin is
piped); `--json-input` reads it as what `MemoryClient.add` accepts: openai-style messages, one
item, or a list of items (docs/api.md "Ingest").
"""

import json
import sys
from collections.abc import Sequence
from typing import IO, Any

import click

from .base import ItemOptions
from .cli_options import ID, TIMESTAMP
from .cli_output import count, emit_json, error_document, error_line, job_line, note, required
from .cli_settings import CliState, pass_state
from .errors import HippocampusError, NotFoundError, WaitTimeoutError
from .items import Content
from .models import Job
from .sync_client import MemoryClient


def _json_object(ctx: click.Context, param: click.Parameter, value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        raise click.BadParameter("not JSON") from None
    if not isinstance(parsed, dict):
        raise click.BadParameter("must be a JSON object")
    return parsed


@click.command()
@click.argument("user", type=ID)
@click.argument("text", nargs=-1)
@click.option(
    "--file", "source", type=click.File("r", encoding="utf-8"), help="Read the text from FILE (- is stdin)."
)
@click.option(
    "--json-input", is_flag=True, help="The input is JSON: openai-style messages, an item or a list of items."
)
@click.option(
    "--id", "item_id", type=ID, metavar="ID", help="The item's id: the same item sent again queues nothing."
)
@click.option(
    "--fact", "fact_id", type=ID, metavar="ID", help="Store the text verbatim as the fact ID (infer: false)."
)
@click.option("--user-name", metavar="NAME", help="The user's name, for the condensation prompt.")
@click.option("--title", help="A short label kept with the fact or episode.")
@click.option("--markdown", is_flag=True, help="The text is markdown.")
@click.option("--metadata", callback=_json_object, metavar="JSON", help="A JSON object kept with it.")
@click.option("--instructions", metavar="TEXT", help="custom_instructions: what the application wants kept.")
@click.option(
    "--occurred-at",
    type=TIMESTAMP,
    metavar="TIMESTAMP",
    help="When it happened, RFC 3339 with Z or an offset (2023-05-08T13:56:00Z). Default: when the API accepts it.",
)
@click.option("--idempotency-key", metavar="KEY", help="Sent as the Idempotency-Key header.")
@click.option(
    "--share",
    is_flag=True,
    help="With --agent: store it in the user's shared memory, seen by every agent, not the agent's own.",
)
@click.option("--wait", "wait_for", is_flag=True, help="Wait until the jobs are final; exit 1 if one failed.")
@click.option("--wait-timeout", type=click.FloatRange(min=0), default=60.0, show_default=True)
@pass_state
def add(
    state: CliState,
    user: str,
    text: tuple[str, ...],
    source: IO[str] | None,
    json_input: bool,
    item_id: str | None,
    fact_id: str | None,
    user_name: str | None,
    title: str | None,
    markdown: bool,
    metadata: dict[str, Any] | None,
    instructions: str | None,
    occurred_at: str | None,
    idempotency_key: str | None,
    share: bool,
    wait_for: bool,
    wait_timeout: float,
) -> None:
    """Store a turn or a text for USER: TEXT..., --file PATH, or stdin.

    \b
    hippocampus --local --tenant acme add alice "User: I sell candles.
    Assistant: Nice!"
    echo "Prefers email." | hippocampus --local --tenant acme add alice --fact contact
    hippocampus --local --tenant acme add alice "Moved to Lyon." --occurred-at 2023-05-08T13:56:00Z
    hippocampus --local --tenant acme --agent research add alice "Prefers email." --share
    """
    if item_id and fact_id:
        raise click.UsageError("--fact ID is the item's id already: give --id or --fact")
    if share and not state.agent:
        raise click.UsageError(
            "--share stores into the user's shared memory from an agent's scope: give --agent"
        )
    content = _content(_read_input(text, source), json_input)
    options: ItemOptions = {}
    if fact_id:
        options["id"], options["infer"] = fact_id, False
    if item_id:
        options["id"] = item_id
    if user_name:
        options["user_name"] = user_name
    if title:
        options["title"] = title
    if markdown:
        options["is_markdown"] = True
    if metadata is not None:
        options["metadata"] = metadata
    if instructions:
        options["custom_instructions"] = instructions
    if occurred_at:
        options["occurred_at"] = occurred_at
    client = state.client()
    jobs = required(client.add(user, content, idempotency_key=idempotency_key, share=share, **options))
    if wait_for:
        raise click.exceptions.Exit(wait_and_report(state, list(jobs), wait_timeout))
    print_jobs(state, jobs)


def _read_input(text: Sequence[str], source: IO[str] | None) -> str:
    if source is not None and text:
        raise click.UsageError("give the text as arguments or with --file, not both")
    stdin = sys.stdin  # CliRunner swaps it too
    if source is not None:
        found = source.read()
    elif tuple(text) == ("-",) or (not text and not stdin.isatty()):
        found = stdin.read()
    elif text:
        found = " ".join(text)
    else:
        raise click.UsageError("nothing to add: give TEXT, --file PATH, or pipe it on stdin")
    if not found.strip():
        raise click.UsageError("nothing to add: the text is empty")
    return found.rstrip("\r\n")  # the newline `echo` adds is not part of the text


def _content(found: str, json_input: bool) -> Content:
    if not json_input:
        return found
    try:
        parsed = json.loads(found)
    except ValueError:
        raise click.UsageError("--json-input: the input is not JSON") from None
    if not isinstance(parsed, str | dict | list):
        raise click.UsageError("--json-input: give messages, an item, a list of items or a string")
    content: Content = parsed
    return content


def print_jobs(state: CliState, jobs: list[Job]) -> None:
    if state.as_json:
        emit_json({"jobs": jobs})
    else:
        for found in jobs:
            click.echo(job_line(found))


def known_jobs(state: CliState, job_ids: list[str], user: str | None = None) -> tuple[list[str], list[str]]:
    """The jobs that exist and those that do not (one read each): an unknown job is reported
    beside the others, it does not hide their results. `user`: with --agent, read on the agent's
    job route of that user."""
    client = state.client()
    known, unknown = [], []
    for job_id in dict.fromkeys(job_ids):
        try:
            required(client.job(job_id, user=user))
        except NotFoundError:
            unknown.append(job_id)
        else:
            known.append(job_id)
    return known, unknown


def _reread(client: MemoryClient, job: str | Job, user: str | None) -> Job | None:
    if isinstance(job, str):
        return client.job(job, user=user)
    return client.job(job.job_id, user=user or job.user_id)


def wait_and_report(
    state: CliState,
    waited: Sequence[str | Job],
    timeout: float,
    interval: float = 0.25,
    unknown: Sequence[str] = (),
    user: str | None = None,
) -> int:
    """Wait for the jobs (ids, or the jobs `add` got back: with `--agent`, those, and ids given
    with `user`, are polled on the agent's own route) and print them, then a line for each unknown
    job; the exit code: 1 if one failed, is not final (`deferred` included), or is unknown."""
    client = state.client()
    errors: list[HippocampusError] = [NotFoundError(f"no such job: {job_id}") for job_id in unknown]
    try:
        jobs = required(client.wait(waited, timeout=timeout, interval=interval, user=user)) if waited else []
    except WaitTimeoutError as timed_out:
        jobs = [required(_reread(client, job, user)) for job in waited]
        errors.insert(0, timed_out)
    failed = [found.job_id for found in jobs if found.status == "failed"]
    if failed:
        errors.append(JobFailedError(", ".join(failed)))
    if state.as_json:
        emit_json(
            {"jobs": jobs} | ({"errors": [error_document(e)["error"] for e in errors]} if errors else {})
        )
    else:
        print_jobs(state, jobs)
    for found in errors:
        note(error_line(found))
    deferred = [found for found in jobs if found.status == "deferred"]
    if deferred:  # not final, so waited for in vain: say what they wait for
        note(
            f"{count(len(deferred), 'job')} deferred: the tenant's daily token budget is spent; "
            "condensed after it resets at 00:00 UTC (hippocampus usage)"
        )
    return 1 if errors else 0


class JobFailedError(HippocampusError):
    """A job `wait` waited for ended `failed` (its own error is in the job)."""

    code = "job_failed"
