"""`hippocampus`: the command line of the client (client/README.md "CLI").

    hippocampus --endpoint http://127.0.0.1:3000 --tenant acme get alice

Global options go before the command or after it (cli_options.py). Every id is checked before
any request (a usage error, exit code 2). Every command uses the client in strict mode, so an
error of the API or of the connection is one line on stderr naming its code, and exit code 1.
`backfill` (cli_backfill.py), `redrive` (cli_redrive.py) and `events` (cli_events.py) live in their
own modules.
"""

from pathlib import Path
from typing import Any, cast, get_args

import click

from ._version import __version__
from .base import QueryOptions, ResultKind
from .cli_add import add, known_jobs, wait_and_report
from .cli_backfill import backfill
from .cli_events import events
from .cli_options import ID, TIMESTAMP, accept_global_options, global_options
from .cli_output import count, emit_json, indented, job_line, note, record_line, required, usage_line
from .cli_redrive import redrive
from .cli_settings import CliGroup, CliState, pass_state
from .cli_ui import ui
from .models import AgentMemory, Memory


@click.group(cls=CliGroup, params=global_options(), context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hippocampus")
@click.pass_context
def cli(
    ctx: click.Context,
    endpoint: str | None,
    tenant: str | None,
    agent: str | None,
    as_json: bool,
    local: bool,
    stack: str | None,
    region: str | None,
    timeout: float,
) -> None:
    """Per-user memory for LLM applications: read, add, recall, list records, forget, import, redrive, usage,
    browse, follow the change events.

    Global options go before the command, or after it (client/README.md "CLI"); with --agent, every
    command about a user reads and writes that agent's scope of the user's memory:

    \b
      hippocampus --endpoint http://127.0.0.1:3000 --tenant acme get alice
      hippocampus --local --tenant acme add alice "I sell candles." --wait
      hippocampus query alice "payment provider" --local --tenant acme --json
      hippocampus --local --tenant acme --agent research add alice "Prefers email." --share
    """
    given = {
        name: ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE
        for name in ("endpoint", "agent")
    }
    state = CliState(
        endpoint, tenant, as_json, local, stack, region, timeout, agent=agent,
        endpoint_given=given["endpoint"], agent_given=given["agent"],
    )  # fmt: skip
    ctx.obj = state
    ctx.call_on_close(state.close)


cli.add_command(add)
cli.add_command(backfill)
cli.add_command(events)
cli.add_command(redrive)
cli.add_command(ui)


@cli.command()
@click.argument("user", type=ID)
@click.option("--full", is_flag=True, help="Also the version, the ETag and the facts.")
@pass_state
def get(state: CliState, user: str, full: bool) -> None:
    """Print USER's summary (nothing, and a note on stderr, before a first version); with --agent,
    the user's shared summary and the agent's own."""
    client = state.client()
    if client.agent is not None:
        _print_scopes(state, required(client.get_scopes(user)), full)
        return
    memory = required(client.get_full(user))
    if state.as_json:
        keep = None if full else {"tenant_id", "user_id", "memory", "version", "updated_at"}
        emit_json(memory.model_dump(mode="json", include=keep))
        return
    if memory.memory is not None:
        click.echo(memory.memory)
    else:
        note(f"no summary for {user} yet (version 0)")
    if full:
        _print_details(memory)


def _print_scopes(state: CliState, both: AgentMemory, full: bool) -> None:
    """An agent's view (docs/api.md "Agent scopes"): the shared scope, then the agent's own."""
    if state.as_json:
        brief = dict.fromkeys(("memory", "version", "updated_at"), True)
        ids = dict.fromkeys(("tenant_id", "user_id", "agent_id"), True)
        keep = None if full else ids | {"scopes": {"shared": brief, "agent": brief}}
        emit_json(both.model_dump(mode="json", include=keep))
        return
    for label, memory in (("shared", both.scopes.shared), (f"agent {both.agent_id}", both.scopes.agent)):
        click.echo(f"{label} (version {memory.version}):")
        click.echo(indented(memory.memory if memory.memory is not None else "(no summary yet)"))
        if full:
            _print_details(memory)


def _print_details(memory: Memory) -> None:
    click.echo(f"version {memory.version}, {memory.word_count} words, updated {memory.updated_at or '-'}")
    click.echo(f"facts ({len(memory.facts)}):")
    for fact in memory.facts:
        title = f" [{fact.title}]" if fact.title else ""
        click.echo(f"  {fact.id}{title}: {' '.join(fact.text.split())}")


KINDS: tuple[str, ...] = get_args(ResultKind)  # what `query --types` takes: the API's kinds


def _split_types(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> list[ResultKind] | None:
    # `--types fact,episode` or `--types fact --types episode`: both read naturally.
    types = [part.strip() for value in values for part in value.split(",") if part.strip()]
    unknown = sorted(set(types) - set(KINDS))
    if unknown:
        raise click.BadParameter(f"unknown type {', '.join(unknown)}: {', '.join(KINDS[:-1])} or {KINDS[-1]}")
    return cast(list[ResultKind], types) or None  # each one checked above


def _filters(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Any] | None:
    # KEY=VALUE, repeated: one value is an exact match, several for one key match any (docs/api.md "Query").
    found: dict[str, list[str]] = {}
    for value in values:
        key, sep, wanted = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{value!r} is not KEY=VALUE")
        found.setdefault(key, []).append(wanted)
    return {key: v[0] if len(v) == 1 else v for key, v in found.items()} or None


@cli.command()
@click.argument("user", type=ID)
@click.argument("text", nargs=-1, required=True)
@click.option("--top-k", type=click.IntRange(1, 50), help="How many results (1-50; service default 10).")
@click.option("--types", multiple=True, callback=_split_types, help=f"Only these kinds: {','.join(KINDS)}.")
@click.option("--alpha", type=click.FloatRange(0, 1), help="1: semantic only, 0: lexical only (0.5).")
@click.option("--recency-bias", type=click.FloatRange(0, 1), help="Share of the score given to recency (0).")
@click.option(
    "--filter", "filters", multiple=True, callback=_filters, metavar="KEY=VALUE", help="Metadata filter."
)
@click.option("--no-memory", is_flag=True, help="Leave the summary out of the answer.")
@pass_state
def query(
    state: CliState,
    user: str,
    text: tuple[str, ...],
    top_k: int | None,
    types: list[ResultKind] | None,
    alpha: float | None,
    recency_bias: float | None,
    filters: dict[str, Any] | None,
    no_memory: bool,
) -> None:
    """Rank USER's facts and episodes for TEXT (docs/api.md "Query")."""
    options: QueryOptions = {"include_memory": not no_memory}
    if top_k is not None:
        options["top_k"] = top_k
    if types:
        options["types"] = types
    if alpha is not None:
        options["alpha"] = alpha
    if recency_bias is not None:
        options["recency_bias"] = recency_bias
    if filters:
        options["metadata_filters"] = filters
    answer = required(state.client().query(user, " ".join(text), **options))
    if state.as_json:
        emit_json(answer)
        return
    if answer.memory:
        click.echo(f"memory (version {answer.version}):\n{indented(answer.memory)}")
    if not answer.results:
        note("no fact or episode matches")
    for result in answer.results:
        scope = f" ({result.scope})" if result.scope else ""  # an agent's: shared or its own
        click.echo(f"{result.score:.3f} {result.type} {result.id}{scope}\n{indented(result.text)}")


@cli.command()
@click.argument("user", type=ID)
@click.argument("query", nargs=-1)
@click.option("--max-words", type=click.IntRange(1, 2000), default=300, show_default=True)
@pass_state
def context(state: CliState, user: str, query: tuple[str, ...], max_words: int) -> None:
    """Print the block to prepend to a prompt for USER (optionally for QUERY, the new message)."""
    block = required(state.client().context(user, " ".join(query) or None, max_words))
    if state.as_json:
        emit_json(block)
    elif block.context:
        click.echo(block.context)
    else:
        note(f"nothing known about {user} yet")


@cli.command()
@click.argument("user", type=ID)
@click.option("--as-of", type=TIMESTAMP, metavar="TIMESTAMP", help="The records true at this time.")
@click.option("--known-at", type=TIMESTAMP, metavar="TIMESTAMP", help="The records held at this time.")
@click.option("--all", "include_invalidated", is_flag=True, help="The replaced records too.")
@click.option("--limit", type=click.IntRange(min=1), help="The newest N only (default: every record).")
@pass_state
def records(
    state: CliState,
    user: str,
    as_of: str | None,
    known_at: str | None,
    include_invalidated: bool,
    limit: int | None,
) -> None:
    """Print USER's records, the dated statements about them, newest first: the current ones, or
    those true --as-of a time (RFC 3339 with Z or an offset), or all of them (docs/api.md "Records")."""
    found = required(
        state.client().records(
            user, as_of=as_of, known_at=known_at, include_invalidated=include_invalidated, limit=limit
        )
    )
    if state.as_json:
        emit_json({"items": found})
        return
    if not found:
        note(f"no records for {user}")
    for record in found:
        click.echo(record_line(record))


@cli.command()
@click.argument("user", type=ID)
@click.option("--fact", "fact_id", type=ID, metavar="ID", help="Delete this one fact only.")
@click.option("--record", "record_id", type=ID, metavar="ID", help="Delete this one record only.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@pass_state
def forget(state: CliState, user: str, fact_id: str | None, record_id: str | None, yes: bool) -> None:
    """Forget USER entirely: summary, facts, records, episodes, history, jobs (docs/api.md
    "Forgetting a user"); or, with --fact or --record, that one fact or record. With --agent,
    what that agent's scope holds: the user's shared memory and the other agents' stay."""
    if fact_id and record_id:
        raise click.UsageError("give --fact or --record, not both")
    client = state.client()
    of = f"{user}" if client.agent is None else f"{user} in agent {client.agent}'s scope"
    if fact_id:
        what = f"fact {fact_id} of {of}"
    elif record_id:
        what = f"record {record_id} of {of}"
    elif client.agent is None:
        what = f"everything stored about {user}"
    else:
        what = f"everything agent {client.agent} keeps about {user}"
    if not yes:
        click.confirm(f"Delete {what} (tenant {client.tenant})?", abort=True, err=True)
    receipt_id = None
    if fact_id:
        client.delete_fact(user, fact_id)
    elif record_id:
        client.delete_record(user, record_id)
    else:
        receipt_id = client.forget(user)
    if state.as_json:
        one = {"fact_id": fact_id} if fact_id else {"record_id": record_id} if record_id else {}
        agent = {"agent_id": client.agent} if client.agent is not None else {}
        emit_json(
            {"deleted": True, "user_id": user}
            | agent
            | one
            | ({"receipt_id": receipt_id} if receipt_id else {})
        )
    else:
        click.echo(f"deleted {what}" + (f" (deletion receipt {receipt_id})" if receipt_id else ""))


@cli.command()
@click.argument("user", type=ID)
@click.argument("receipt_id", type=ID)
@pass_state
def deletion(state: CliState, user: str, receipt_id: str) -> None:
    """Print what a delete of USER's memory erased: the deletion receipt RECEIPT_ID (`forget` prints
    the one of forgetting the user): counts per store, the generation and the times (docs/api.md
    "Deletion receipts")."""
    receipt = required(state.client().deletion(user, receipt_id))
    emit_json(receipt.model_dump(mode="json"))


USER_OF_JOBS = (
    "With --agent: read on the agent's job route of this user (all a caller granted only the "
    "agent's routes may read); without it, the tenant's route."
)


@cli.command()
@click.argument("job_id", type=ID)
@click.option("--user", type=ID, help=USER_OF_JOBS)
@pass_state
def job(state: CliState, job_id: str, user: str | None) -> None:
    """Print one ingestion job (docs/api.md "Jobs")."""
    found = required(state.client().job(job_id, user=user))
    if state.as_json:
        emit_json(found)
    else:
        click.echo(job_line(found))


@cli.command()
@click.argument("job_ids", nargs=-1, required=True, type=ID, metavar="JOB_ID...")
@click.option("--timeout", type=click.FloatRange(min=0), default=60.0, show_default=True)
@click.option("--interval", type=click.FloatRange(min=0.05), default=0.5, show_default=True)
@click.option("--user", type=ID, help=USER_OF_JOBS)
@pass_state
def wait(
    state: CliState, job_ids: tuple[str, ...], timeout: float, interval: float, user: str | None
) -> None:
    """Wait until every job is final; exit 1 if one failed, is unknown, or the timeout passed first."""
    known, unknown = known_jobs(state, list(job_ids), user)
    raise click.exceptions.Exit(wait_and_report(state, known, timeout, interval, unknown, user))


@cli.command()
@pass_state
def usage(state: CliState) -> None:
    """Print the tenant's LLM calls and tokens today (UTC) against its daily token budget, the jobs
    deferred until it resets, and when it does (docs/api.md "Usage")."""
    found = required(state.client().usage())
    if state.as_json:
        emit_json(found)
    else:
        click.echo(usage_line(found))


@cli.command()
@click.argument("user", type=ID)
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True)
@pass_state
def history(state: CliState, user: str, limit: int) -> None:
    """Print USER's past summaries, newest first."""
    versions = required(state.client().history(user, limit))
    if state.as_json:
        emit_json({"versions": versions})
        return
    if not versions:
        note(f"no history for {user}")
    for version in versions:
        jobs = f", {count(len(version.job_ids), 'job')}" if version.job_ids else ", by hand"
        click.echo(f"version {version.version} ({version.updated_at or '-'}{jobs}):")
        click.echo(indented(version.memory or ""))


@cli.command()
@click.argument("user", type=ID)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write to FILE.")
@pass_state
def export(state: CliState, user: str, output: Path | None) -> None:
    """Everything stored about USER as one JSON document, every page merged (docs/api.md "Export")."""
    document = required(state.client().export(user)).model_dump_json(indent=2)
    if output is None:
        click.echo(document)
        return
    temporary = output.with_name(output.name + ".tmp")
    temporary.write_text(document + "\n", encoding="utf-8")
    temporary.replace(output)  # a half-written export never has the final name
    if state.as_json:
        emit_json({"user_id": user, "output": str(output), "bytes": len(document.encode()) + 1})
    else:
        note(f"wrote the export of {user} to {output}")


accept_global_options(cli)  # after every command is added


def main() -> None:
    """The console script `hippocampus` (client/pyproject.toml)."""
    cli(prog_name="hippocampus")
