"""Agent scopes (docs/api.md "Agent scopes", docs/architecture.md "Agent scopes").

An agent's private memory of a user is stored as a memory of its own: every store keys it by a
scope key, `<user_id>#A#<agent_id>`, where a user's shared memory is keyed by the user id alone.
`#` is no identifier's character, so a scope key never collides with a user id, and every store,
the condenser and recall serve a private scope with the code that serves a user. What the API and
the events show is split again into `user_id` and `agent_id`; the queue orders a scope's items in
its user's message group (adapters/sqs.py), so one user's items stay in one order.
"""

from collections.abc import Mapping
from typing import Final, Protocol

AGENT_SEPARATOR: Final = "#A#"


def agent_scope(user_id: str, agent_id: str | None) -> str:
    """The key an agent's private scope of `user_id` is stored under (the user id when no agent)."""
    return user_id if agent_id is None else f"{user_id}{AGENT_SEPARATOR}{agent_id}"


def split_scope(scope_key: str) -> tuple[str, str | None]:
    """A scope key's user id and agent id (None: the user's shared scope)."""
    user_id, separator, agent_id = scope_key.partition(AGENT_SEPARATOR)
    return user_id, (agent_id if separator else None)


def user_of(scope_key: str) -> str:
    """The user a scope key belongs to."""
    return split_scope(scope_key)[0]


class AgentRegistry(Protocol):
    """The agents with a private scope of each user: what the user's delete forgets with it. Each
    listing holds a token that every `register` renews, so a delete unlists an agent only if no
    write listed it again since the delete read the list (docs/architecture.md "Agent scopes")."""

    def register(self, tenant_id: str, user_id: str, agent_id: str) -> None: ...

    def listed(self, tenant_id: str, user_id: str) -> dict[str, str]:
        """Each listed agent, with its listing's token."""
        ...

    def unregister(self, tenant_id: str, user_id: str, listed: Mapping[str, str]) -> None:
        """Unlist each agent whose listing still holds the token given (the others stay)."""
        ...
