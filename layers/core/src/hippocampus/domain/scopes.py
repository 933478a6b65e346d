"""A write to an agent's private scope, with the agent listed around it (docs/architecture.md
"Agent scopes"): before the write, so a delete of the user that starts meanwhile finds the agent;
and again after, should a delete that read the listing meanwhile have removed it (its token is
renewed, so a delete that read the old one leaves it: contracts/scopes.py)."""

from collections.abc import Iterator
from contextlib import contextmanager

from hippocampus.contracts.scopes import AgentRegistry, split_scope


@contextmanager
def agent_listed(agents: AgentRegistry | None, tenant_id: str, scope_key: str) -> Iterator[None]:
    """Around a write to `scope_key`'s memory; nothing for a user's own (shared) scope."""
    user, agent_id = split_scope(scope_key)
    if agent_id is None or agents is None:
        yield
        return
    agents.register(tenant_id, user, agent_id)
    yield
    agents.register(tenant_id, user, agent_id)
