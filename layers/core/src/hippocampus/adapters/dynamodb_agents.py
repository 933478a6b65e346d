"""The agents with a private scope of a user (`T#<tenant>#U#<user>#AGENTS` / `AGENT#<agent>`):
what a delete of the user forgets with it (docs/architecture.md "Agent scopes").

An agent's scope lives in partitions of its own, which no query of the user's partition finds; this
list is how a delete of the user reaches them. A partition of its own, so no sweep of the user's
partitions erases it before the delete has read it.
"""

from collections.abc import Sequence
from typing import Final

from hippocampus.adapters.dynamodb_items import decoded_all
from hippocampus.adapters.dynamodb_table import Table, key, user_pk, values
from hippocampus.contracts.names import TABLE_SORT_KEY as SK

AGENT_PREFIX: Final = "AGENT#"


def agents_pk(tenant_id: str, user_id: str) -> str:
    return f"{user_pk(tenant_id, user_id)}#AGENTS"


class DynamoDbAgentRegistry:
    def __init__(self, table: Table) -> None:
        self._table = table

    def register(self, tenant_id: str, user_id: str, agent_id: str) -> None:
        item = {"pk": agents_pk(tenant_id, user_id), SK: AGENT_PREFIX + agent_id, "agent_id": agent_id}
        self._table.client().put_item(TableName=self._table.name, Item=values(item))

    def agents(self, tenant_id: str, user_id: str) -> list[str]:
        items = decoded_all(
            self._table.query_partition(agents_pk(tenant_id, user_id), sk_prefix=AGENT_PREFIX)
        )
        return [str(item["agent_id"]) for item in items]

    def unregister(self, tenant_id: str, user_id: str, agent_ids: Sequence[str]) -> None:
        pk = agents_pk(tenant_id, user_id)
        self._table.batch_delete([key(pk, AGENT_PREFIX + agent_id) for agent_id in agent_ids])
