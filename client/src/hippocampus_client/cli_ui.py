"""`hippocampus ui`: the memory browser against any deployment (client/README.md "Memory browser").

    hippocampus ui --endpoint https://abc123.execute-api.eu-west-1.amazonaws.com/dev/ --tenant acme
    hippocampus ui --stack Hippocampus-dev --tenant acme
    hippocampus ui --local --tenant acme

The page is served on 127.0.0.1 and its API calls go to the endpoint through `ui_server.UiServer`,
signed with SigV4 for an `https://` endpoint; `--stack` reads the endpoint from the stack's `ApiUrl`
output. Runs until interrupted. It shows the users' own memory: `--agent` is refused, and an agent
set only in HIPPOCAMPUS_AGENT (for the other commands) is ignored, with a note.
"""

import signal
import threading
import webbrowser

import click

from .base import AGENT_VARIABLE
from .cli_options import ID
from .cli_output import fail, note
from .cli_settings import CliState, pass_state
from .errors import ConfigurationError, HippocampusError
from .invoke import stack_outputs
from .ui_server import UiServer

DEFAULT_PORT = 8765


@click.command()
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port on 127.0.0.1 (0: any free one).",
)
@click.option("--user", type=ID, help="Open this user's memory at once.")
@click.option(
    "--open/--no-open",
    "open_page",
    default=True,
    show_default=True,
    help="Open the page in the default browser.",
)
@pass_state
def ui(state: CliState, port: int, user: str | None, open_page: bool) -> None:
    """Serve the memory browser on http://127.0.0.1:PORT/ui/ for --tenant, its calls to --endpoint."""
    if state.agent and state.agent_given:
        raise click.UsageError(
            "the memory browser shows users' own memory, not an agent's scope: drop --agent"
        )
    if state.agent:  # from the environment, set for the other commands: not this one's business
        note(
            f"{AGENT_VARIABLE}={state.agent} ignored: the memory browser shows users' own memory, "
            "not an agent's scope"
        )
    try:
        endpoint = _endpoint(state)
        server = UiServer(endpoint, port=port, region=state.region)
    except HippocampusError as error:
        fail(error, state.as_json)
    except OSError as error:
        raise click.UsageError(f"cannot listen on 127.0.0.1:{port} ({error.strerror}): try --port") from None
    page = server.page_url(state.tenant, user)
    click.echo(f"Memory browser on {page}")
    click.echo(
        f"Its API calls go to {endpoint}"
        + (" (signed with SigV4)" if endpoint.startswith("https://") else "")
    )
    note("Press Ctrl-C to stop.")
    server.start()
    if open_page:
        webbrowser.open(page)
    stopped = threading.Event()
    # Ctrl-C and a termination stop it, even where SIGINT came ignored (a parent that ignores it).
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, lambda *_: stopped.set())
    try:
        stopped.wait()
    finally:
        server.stop()


def _endpoint(state: CliState) -> str:
    if state.stack:
        url = stack_outputs(state.stack, region=state.region).get("ApiUrl")
        if not url:
            raise ConfigurationError(f"the stack {state.stack} has no output ApiUrl")
        return url
    if not state.endpoint:
        raise ConfigurationError("no endpoint: pass --endpoint URL, --stack NAME or --local")
    return state.endpoint
