"""The global options of `hippocampus` and the client they make (client/README.md "CLI").

The CLI always uses the client in strict mode (client/README.md "Strict mode"): a host
application wants `None` on error, a person at a terminal wants to know what went wrong.
The client is made on first use, so `--help`, `redrive` and a usage error need no tenant.
"""

import ipaddress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import click

from .base import ENDPOINT_VARIABLE, TENANT_VARIABLE
from .cli_output import fail
from .errors import ConfigurationError, ConnectionFailedError, HippocampusError, TransportError
from .sync_client import MemoryClient

LOCAL_ENDPOINT = "http://127.0.0.1:3000"  # `make dev` (README.md "Try it locally")
LOCAL_CONDENSER = "hippocampus-dev-condenser"  # its deployed name, served by the local Invoke API
# The queue the local stack's rule sends every change event to, on its port's SQS API.
LOCAL_EVENTS_QUEUE = "hippocampus-dev-events"
# The client's own retries of 429/503 (docs/api.md "Errors"); a person can wait longer than an app.
CLI_MAX_RETRIES = 4


@dataclass
class CliState:
    endpoint: str | None = None
    tenant: str | None = None
    as_json: bool = False
    local: bool = False
    stack: str | None = None
    region: str | None = None
    timeout: float = 30.0
    agent: str | None = None  # `--agent`: every per-user command goes to that agent's scope
    # `--endpoint` was on the command line: `--local` then keeps it (a local stack on another port),
    # while over HIPPOCAMPUS_ENDPOINT `--local` wins.
    endpoint_given: bool = False
    # `--agent` was on the command line, not only in HIPPOCAMPUS_AGENT: `ui` refuses the one and
    # ignores the other (cli_ui.py).
    agent_given: bool = False
    _client: MemoryClient | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._settle()

    def apply(self, name: str, value: Any) -> None:
        """A global option given after the command: it overrides the one before it."""
        if name == "endpoint":
            self.endpoint_given = True
        if name == "agent":
            self.agent_given = True
        setattr(self, name, value)
        self._settle()

    def _settle(self) -> None:
        if self.local and self.stack:
            raise click.UsageError("--local and --stack name two different deployments: give one")
        if self.local and not self.endpoint_given:
            self.endpoint = LOCAL_ENDPOINT

    def client(self) -> MemoryClient:
        """The strict client of these options: `--stack` (direct invoke), else the endpoint."""
        if self._client is None:
            if not self.tenant:
                raise ConfigurationError(f"no tenant: pass --tenant TENANT or set {TENANT_VARIABLE}")
            options: dict[str, Any] = {
                "strict": True,
                "timeout": self.timeout,
                "write_timeout": self.timeout,
                "max_retries": CLI_MAX_RETRIES,
                # No circuit breaker: a person asked for this request, and backfill retries with
                # its own pauses; a skipped request would only hide the error that happened.
                "breaker_cooldown": 0.0,
                "agent": self.agent,
            }
            if self.stack:
                self._client = MemoryClient.from_stack(
                    self.stack, self.tenant, via="invoke", region=self.region, **options
                )
            elif not self.endpoint:
                raise ConfigurationError(
                    f"no endpoint: pass --endpoint URL or --local, or set {ENDPOINT_VARIABLE}"
                )
            else:
                self._client = MemoryClient(self.endpoint, self.tenant, region=self.region, **options)
        return self._client

    def local_endpoint(self) -> str | None:
        """The endpoint whose Invoke API serves direct invocations: the local stack's (`--local`,
        or any plain-http endpoint, which is never AWS; docs/api.md "Direct invocation", Locally)."""
        if self.stack:
            return None
        if self.local or (self.endpoint or "").startswith("http://"):
            return self.endpoint
        return None

    def hint(self, error: HippocampusError) -> str | None:
        """Where a request went that got no answer, and for the local stack what to check."""
        if not isinstance(error, TransportError):
            return None
        if self.stack:
            return f"stack {self.stack}"
        if not self.endpoint:
            return None
        if _is_loopback(self.endpoint) and isinstance(error, ConnectionFailedError):
            return f"endpoint {self.endpoint}: is make dev running?"
        return f"endpoint {self.endpoint}"

    def close(self) -> None:
        if self._client is not None:
            self._client.close(timeout=1.0)  # strict `add` sends at once: nothing is queued
            self._client = None


def _is_loopback(endpoint: str) -> bool:
    """This machine: where `make dev` serves the local stack."""
    host = urlsplit(endpoint).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name
        return False


class CliGroup(click.Group):
    """Turns every error of the client into one line and exit code 1 (cli_output.py)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except HippocampusError as error:
            state = ctx.find_object(CliState)
            fail(error, bool(state and state.as_json), state.hint(error) if state else None)
        except OSError as error:  # a file the command reads or writes
            fail(_io_error(error), _as_json(ctx))


class IoError(HippocampusError):
    code = "io_error"


def _io_error(error: OSError) -> HippocampusError:
    name = f": {error.filename}" if error.filename else ""
    return IoError(f"{error.strerror or type(error).__name__}{name}")


def _as_json(ctx: click.Context) -> bool:
    state = ctx.find_object(CliState)
    return bool(state and state.as_json)


pass_state = click.make_pass_decorator(CliState)
