"""The global options of `hippocampus`, before or after the command, and the type of every id it
takes (client/README.md "CLI").

The group takes the global options with their variables and defaults; every command takes them
as well, so `hippocampus query alice "…" --json` is `hippocampus --json query alice "…"`. One
given after the command overrides the same one given before it: the client is made on first
use, inside the command, so it sees both. A command's own option of the same name stays the
command's (`wait --timeout` is how long to wait).
"""

from datetime import UTC, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
from click.core import ParameterSource

from .base import AGENT_VARIABLE, ENDPOINT_VARIABLE, TENANT_VARIABLE
from .cli_settings import CliState
from .errors import InvalidInputError
from .identifiers import IDENTIFIER
from .timestamps import occurred_at

MAX_SHOWN = 40  # a longer value is told by its length, so the error stays one line


# Not subscripted: ParamType is generic from click 8.5 on, and the client supports 8.1.
class IdentifierType(click.ParamType):  # type: ignore[type-arg]
    """An id the API accepts (docs/api.md "Routes", identifiers): anything else is a usage error
    naming the argument, before any request. An id such as `..` must never reach a URL, where it
    would be resolved as a dot segment and name another route."""

    name = "id"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if isinstance(value, str) and IDENTIFIER.fullmatch(value):
            return value
        text = str(value)
        shown = repr(text) if len(text) <= MAX_SHOWN else f"a value of {len(text)} characters"
        message = (
            f"{shown} is not an id: 1 to 128 letters, digits and . _ @ : -, starting with a letter or digit"
        )
        raise click.BadParameter(message, ctx, param)


ID = IdentifierType()


class TimestampType(click.ParamType):  # type: ignore[type-arg]
    """An `occurred_at` the API accepts (timestamps.py): anything else is a usage error, before
    any request."""

    name = "timestamp"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return occurred_at(value)
        except InvalidInputError:
            shown = (
                repr(value) if len(str(value)) <= MAX_SHOWN else f"a value of {len(str(value))} characters"
            )
            message = f'{shown} is not an RFC 3339 timestamp with Z or an offset, e.g. "2023-05-08T13:56:00Z"'
            self.fail(message, param, ctx)


TIMESTAMP = TimestampType()


class TimezoneType(click.ParamType):  # type: ignore[type-arg]
    """An IANA time zone name (`Europe/Paris`) or `UTC`, as a `tzinfo`."""

    name = "zone"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tzinfo:
        if isinstance(value, tzinfo):
            return value
        if str(value).upper() in ("UTC", "Z"):
            return UTC  # no time zone database needed for it
        try:
            return ZoneInfo(str(value))
        except (ZoneInfoNotFoundError, ValueError):
            self.fail(
                f"{str(value)[:MAX_SHOWN]!r} is not a time zone name such as UTC or Europe/Paris", param, ctx
            )


TIMEZONE = TimezoneType()


def global_options(after_command: bool = False) -> list[click.Option]:
    """The group's global options, or (`after_command`) a command's copies of them: no variable,
    no default, and a value given on the command line goes to the group's `CliState`."""
    later: dict[str, Any] = {"expose_value": False, "callback": _given_after} if after_command else {}

    def variable(name: str) -> dict[str, Any]:
        return {} if after_command else {"envvar": name, "show_envvar": True}

    return [
        click.Option(
            ["--endpoint"],
            metavar="URL",
            help="The API's base URL (the ApiUrl output; https:// is signed with SigV4).",
            **variable(ENDPOINT_VARIABLE),
            **later,
        ),
        click.Option(
            ["--tenant"],
            type=ID,
            metavar="TENANT",
            help="The tenant whose users these are.",
            **variable(TENANT_VARIABLE),
            **later,
        ),
        click.Option(
            ["--agent"],
            type=ID,
            metavar="AGENT",
            help="An agent's scope of each user's memory: its own routes (…/users/U/agents/AGENT/memory).",
            **variable(AGENT_VARIABLE),
            **later,
        ),
        click.Option(
            ["--json", "as_json"], is_flag=True, help="Print one JSON document per command.", **later
        ),
        click.Option(
            ["--local"], is_flag=True, help="The local stack (make dev): http://127.0.0.1:3000.", **later
        ),
        click.Option(
            ["--stack"],
            metavar="NAME",
            help="A deployed stack: invoke its functions (its outputs name them).",
            **later,
        ),
        click.Option(
            ["--region"],
            metavar="REGION",
            help="AWS region (default: AWS_REGION, or the ApiUrl's host).",
            **later,
        ),
        click.Option(
            ["--timeout"],
            type=click.FloatRange(min=0.1),
            default=None if after_command else 30.0,
            show_default=not after_command,
            help="Seconds per request.",
            **later,
        ),
    ]


def accept_global_options(group: click.Group) -> None:
    """Give every command of `group` the global options it does not have an option of its own for."""
    for command in group.commands.values():
        own = {name for param in command.params for name in param.opts}
        command.params += [o for o in global_options(after_command=True) if not own & set(o.opts)]


def _given_after(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    if param.name is None or ctx.get_parameter_source(param.name) != ParameterSource.COMMANDLINE:
        return  # not given after the command: the group's value stands
    state = ctx.find_object(CliState)
    if state is not None:
        state.apply(param.name, value)
