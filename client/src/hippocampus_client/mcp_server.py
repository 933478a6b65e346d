"""`hippocampus-mcp`: the memory of one tenant's users as MCP tools, over stdio (client/README.md, "MCP server").

`hippocampus-mcp --endpoint URL --tenant acme` serves six tools, `recall`, `get_context`,
`remember`, `read_memory`, `list_records` and `forget`, through a strict `MemoryClient`: the
tenant is fixed at start, so no tool takes one and an agent can reach no other tenant. With
`--agent A` every tool serves that agent's scope of each user's memory (docs/api.md "Agent
scopes"; mcp_tools.py, `MemoryTools.view`), fixed at start as well. Arguments
are strict (mcp_arguments.py): no coercion, an unknown one refused by name. An error of the API
comes back as a tool error naming its code, never as a crash of the server. Logs go to stderr
(stdout is the protocol) and carry ids and codes only, never a user's content.
"""

import argparse
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations

from ._version import __version__
from .base import AGENT_VARIABLE, ENDPOINT_VARIABLE, TENANT_VARIABLE
from .errors import ConfigurationError, HippocampusError
from .mcp_arguments import StrictTool
from .mcp_models import ID_PATTERN
from .mcp_tools import MemoryTools
from .sync_client import MemoryClient

LOCAL_ENDPOINT = "http://127.0.0.1:3000"  # the local stack of `make dev` (client/README.md)

# Hints for the MCP client (e.g. to ask the human before a destructive call); the service decides.
READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
ERASES = ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False)

INSTRUCTIONS = """\
Long-term memory of the application's users (Hippocampus). Every tool takes the user_id of the
user the conversation is with. At the start of a conversation call get_context with the user's
message and put its text before your answer; use recall to search for something specific,
read_memory to see the summary and the facts, and list_records for the dated statements about the
user, now or at a past time (as_of). Call remember with each finished turn (user_message and
assistant_message), or with text worth keeping; give a fact_id to store a fact verbatim.
forget erases one fact, or with confirm=true everything about the user: only when asked to."""

AGENT_INSTRUCTIONS = """

This server is the memory of one agent, {agent}. What remember stores is this agent's own,
unless share=true: then it goes to the user's shared memory, which every agent reads. recall and
get_context search both (each result's scope says which: shared or agent); read_memory shows the
agent's own summary and facts, and the shared ones in shared; list_records and forget concern the
agent's own memory only (forget never erases the user's shared memory)."""


def build_server(client: MemoryClient) -> MCPServer:
    """The MCP server of `client`'s tenant; `client` must be strict (its errors become tool errors)."""
    if not client.strict:
        raise ConfigurationError("hippocampus-mcp needs a strict client: MemoryClient(..., strict=True)")
    tools = MemoryTools(client)  # an agent's, with a client of an agent
    instructions = INSTRUCTIONS
    if client.agent is not None:
        instructions += AGENT_INSTRUCTIONS.format(agent=client.agent)
    table: list[tuple[Callable[..., Any], str, ToolAnnotations]] = [
        (tools.recall, "Recall from a user's memory", READS),
        (tools.get_context, "Get a user's context block", READS),
        (tools.remember, "Remember for a user", WRITES),
        (tools.read_memory, "Read a user's memory", READS),
        (tools.list_records, "List a user's records", READS),
        (tools.forget, "Forget a user or one fact", ERASES),
    ]
    # The docstring, dedented, is what the agent reads of the tool (with a note on an agent's
    # server); its arguments are strict, its result this server's (mcp_tools.py, `view`).
    strict: list[Tool] = []
    for method, title, notes in table:
        view = tools.view(method)
        strict.append(
            StrictTool.of(method, title, view.description, notes, result=view.result, hidden=view.hidden)
        )
    return MCPServer(
        "hippocampus", instructions=instructions, version=__version__, log_level="WARNING", tools=strict
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hippocampus-mcp", description="The memory of one Hippocampus tenant as MCP tools, on stdio."
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--endpoint", help=f"the API's URL (default ${ENDPOINT_VARIABLE}); https:// is signed")
    where.add_argument("--local", action="store_true", help=f"the local stack, {LOCAL_ENDPOINT}")
    parser.add_argument("--tenant", help=f"the one tenant served (default ${TENANT_VARIABLE})")
    parser.add_argument(
        "--agent", help=f"serve this agent's scope of each user's memory (default ${AGENT_VARIABLE}, if set)"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _options(argv: Sequence[str] | None) -> tuple[str, str, str | None]:
    """The endpoint, the tenant and the agent (None: the users' own memory): the options, else the
    variables; a usage error without an endpoint or a tenant, or with an id that is none."""
    parser = _parser()
    options = parser.parse_args(argv)
    endpoint = options.endpoint or (LOCAL_ENDPOINT if options.local else os.environ.get(ENDPOINT_VARIABLE))
    tenant = options.tenant or os.environ.get(TENANT_VARIABLE)
    if not endpoint:
        parser.error(f"no endpoint: give --endpoint URL or --local, or set {ENDPOINT_VARIABLE}")
    if not tenant or not re.fullmatch(ID_PATTERN, tenant):
        parser.error(f"give --tenant (or set {TENANT_VARIABLE}): letters, digits and . _ @ : -")
    agent = options.agent or os.environ.get(AGENT_VARIABLE) or None
    if agent is not None and not re.fullmatch(ID_PATTERN, agent):
        parser.error(f"--agent (or {AGENT_VARIABLE}) is an id: letters, digits and . _ @ : -")
    return endpoint, tenant, agent


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: serve until the MCP client closes stdin."""
    endpoint, tenant, agent = _options(argv)
    # Before the SDK's own setup, which then keeps it: stderr, warnings and up (stdout is the protocol).
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    try:
        # A tool call waits for its answer anyway: more room than a host application's 3 s.
        client = MemoryClient(endpoint=endpoint, tenant=tenant, agent=agent, strict=True, timeout=10.0)
    except HippocampusError as error:
        print(f"hippocampus-mcp: {error.code}: {error}", file=sys.stderr)
        return 2
    # Ctrl-C in a terminal is a normal end, not a traceback; leaving `with` closes the connections.
    with client, suppress(KeyboardInterrupt):
        build_server(client).run("stdio")
    return 0
