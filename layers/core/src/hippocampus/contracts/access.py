"""Who may call which routes: the grants of the CDK app (infra/api.py `grant_tenant_access`,
`grant_agent_access`) as method and path patterns, and how IAM matches them.

The CDK app turns each pattern into an `execute-api:Invoke` resource ARN; the local stack, which
checks no SigV4, can match a request against the same patterns for a principal named in a header
(docs/operations.md "Principals"), so both enforce one rule.

IAM matches a resource with `*` as any run of characters, `/` included, and `?` as any one. So
`GET …/users/*/memory` would also match `GET …/users/u/agents/B/memory`, another agent's private
scope: an agent's grant therefore names only its own routes, which serve the shared scope
read-only (docs/api.md "Agent scopes").
"""

import re
from dataclasses import dataclass
from functools import cache
from typing import Final

from hippocampus.contracts.routes import AGENT_PREFIX, TENANT_PREFIX

# The local stack's header naming the principal a request is checked as (docs/operations.md "Principals").
PRINCIPAL_HEADER: Final = "X-Hippocampus-Principal"


@dataclass(frozen=True)
class Grant:
    """`execute-api:Invoke` on `path` (a pattern under the stage) for `method` (`*`: any)."""

    method: str
    path: str


def tenant_grants(tenant_id: str) -> tuple[Grant, ...]:
    """Every route of one tenant."""
    return (Grant("*", TENANT_PREFIX.replace("{tenant_id}", tenant_id) + "/*"),)


def agent_grants(tenant_id: str, agent_id: str) -> tuple[Grant, ...]:
    """Every route of one agent's scope of any user of one tenant: its private memory, and the
    shared memory its reads and searches return. Ids hold no `/`, and no route but this agent's
    holds `/agents/<agent_id>/`, so the pattern matches nothing else."""
    prefix = AGENT_PREFIX.replace("{tenant_id}", tenant_id).replace("{agent_id}", agent_id)
    return (Grant("*", prefix.replace("{user_id}", "*") + "/*"),)


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern))


def iam_matches(pattern: str, value: str) -> bool:
    """IAM's wildcard match: `*` any run of characters (`/` included), `?` any one."""
    return _compiled(pattern).fullmatch(value) is not None


def allows(grants: tuple[Grant, ...], method: str, path: str) -> bool:
    """Whether any of `grants` lets `method path` (the raw request path) through, as IAM would."""
    return any(iam_matches(g.method, method.upper()) and iam_matches(g.path, path) for g in grants)


def principal_grants(principal: str) -> tuple[Grant, ...] | None:
    """The grants a principal header names: `tenant/<tenant_id>` or
    `tenant/<tenant_id>/agent/<agent_id>`; None when it names neither."""
    parts = principal.strip().split("/")
    if len(parts) == 2 and parts[0] == "tenant" and parts[1]:
        return tenant_grants(parts[1])
    if len(parts) == 4 and parts[0] == "tenant" and parts[2] == "agent" and parts[1] and parts[3]:
        return agent_grants(parts[1], parts[3])
    return None
