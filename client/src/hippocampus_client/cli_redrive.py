"""`hippocampus redrive`: move the dead-letter queue back, in order, and re-queue the jobs
(docs/operations.md "The dead-letter queue"; docs/api.md "Direct invocation").

It invokes the condenser's `redrive_dead_letters` action, `{"action": "redrive_dead_letters",
"limit": N}` answered by `{"moved", "jobs_requeued", "remaining"}`, again and again until the
DLQ is empty or nothing moved. The invocation goes through the client's own invoke transport
(invoke.py): the same botocore client, credentials, local-stack handling and error mapping as
every direct call, and the client's retries of 429/503 (a message the ingest queue refused).
"""

from dataclasses import dataclass
from typing import Any

import click

from .calls import WRITE, Call
from .cli_output import count, emit_json, note
from .cli_settings import LOCAL_CONDENSER, CliState, pass_state
from .errors import ConfigurationError, HippocampusError, MalformedResponseError
from .invoke import InvokeTarget, InvokeTransport, stack_outputs
from .retry import Policy, SyncSender

ACTION = "redrive_dead_letters"
MAX_LIMIT = 1000  # per invocation (docs/api.md "Direct invocation")
CONDENSER_OUTPUT = "CondenserFunctionName"  # the stack output naming it (infra/stack.py)
# The condenser may take a while to move 1,000 messages; its own timeout bounds the wait.
INVOKE_TIMEOUT_S = 130.0


@dataclass
class Totals:
    moved: int = 0
    jobs_requeued: int = 0
    remaining: int | None = None
    invocations: int = 0

    def document(self) -> dict[str, Any]:
        return {
            "moved": self.moved,
            "jobs_requeued": self.jobs_requeued,
            "remaining": self.remaining,
            "invocations": self.invocations,
        }


class Condenser:
    """The condenser's direct action, through `InvokeTransport`."""

    def __init__(self, function: str, state: CliState, timeout: float) -> None:
        # The one action is the condenser's: every function of the target names it.
        target = InvokeTarget(get_memory=function, ingest=function, recall=function)
        transport = InvokeTransport(target, region=state.region, endpoint_url=state.local_endpoint())
        self.function = function
        self._sender = SyncSender(transport, Policy(timeout=timeout, write_timeout=timeout, max_retries=3))
        self._transport = transport

    def redrive(self, limit: int) -> dict[str, int]:
        call = Call(ACTION, "ingest", "POST", "", {"limit": limit}, kind=WRITE)
        data = self._sender.send(call).data
        names = ("moved", "jobs_requeued", "remaining")
        if not isinstance(data, dict) or not all(isinstance(data.get(n), int) for n in names):
            raise MalformedResponseError(f"the condenser's answer is not {{{', '.join(names)}}}")
        return {name: data[name] for name in names}

    def close(self) -> None:
        self._transport.close()


def condenser_name(state: CliState, function: str | None) -> str:
    """`--function`, else the stack's output, else the local stack's condenser."""
    if function:
        return function
    if state.stack:
        name = stack_outputs(state.stack, region=state.region).get(CONDENSER_OUTPUT)
        if not name:
            raise ConfigurationError(f"the stack {state.stack} has no output {CONDENSER_OUTPUT}")
        return name
    if state.local_endpoint():
        return LOCAL_CONDENSER
    raise click.UsageError("name the condenser: --function NAME, or the global --stack NAME or --local")


@click.command()
@click.option(
    "--function", metavar="NAME", help="The condenser's name or ARN (default: from --stack, or --local's)."
)
@click.option(
    "--batch",
    type=click.IntRange(1, MAX_LIMIT),
    default=100,
    show_default=True,
    help="Messages per invocation.",
)
@click.option("--limit", type=click.IntRange(min=1), help="Move at most this many messages in all.")
@click.option("--max-batches", type=click.IntRange(min=1), help="Invoke at most this many times.")
@click.option("--invoke-timeout", type=click.FloatRange(min=1), default=INVOKE_TIMEOUT_S, show_default=True)
@pass_state
def redrive(
    state: CliState,
    function: str | None,
    batch: int,
    limit: int | None,
    max_batches: int | None,
    invoke_timeout: float,
) -> None:
    """Move the dead-letter queue back to the ingest queue, in order, and queue its jobs again.

    \b
    hippocampus --local redrive
    hippocampus --stack Hippocampus-dev --region eu-west-1 redrive --batch 1000
    """
    condenser = Condenser(condenser_name(state, function), state, invoke_timeout)
    totals = Totals()
    try:
        run(condenser, totals, batch, limit, max_batches, quiet=state.as_json)
    except HippocampusError:
        if totals.invocations:
            note(f"before the error: moved {totals.moved}, jobs requeued {totals.jobs_requeued}")
        raise
    finally:
        condenser.close()
    if state.as_json:
        emit_json(totals.document() | {"function": condenser.function})
        return
    click.echo(
        f"moved {count(totals.moved, 'message')}, requeued {count(totals.jobs_requeued, 'job')} "
        f"in {count(totals.invocations, 'invocation')}; about {totals.remaining} left in the DLQ"
    )
    if totals.remaining:
        note("messages remain (in flight, or beyond --limit/--max-batches): run redrive again later")


def run(
    condenser: Condenser, totals: Totals, batch: int, limit: int | None, max_batches: int | None, quiet: bool
) -> None:
    """Invoke until `remaining` is 0, nothing moved (what is left is in flight), or a bound is hit.

    Each answer but the last is a progress line on stderr; the last is in the totals, printed once."""
    while True:
        answer = condenser.redrive(batch if limit is None else min(batch, limit - totals.moved))
        totals.invocations += 1
        totals.moved += answer["moved"]
        totals.jobs_requeued += answer["jobs_requeued"]
        totals.remaining = answer["remaining"]
        if answer["remaining"] == 0 or answer["moved"] == 0:
            return
        if max_batches is not None and totals.invocations >= max_batches:
            return
        if limit is not None and totals.moved >= limit:
            return
        if not quiet:
            note(
                f"moved {answer['moved']}, jobs requeued {answer['jobs_requeued']}, remaining {answer['remaining']}"
            )
