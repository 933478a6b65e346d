"""The agents with a private scope of a user (`T#<tenant>#U#<user>#AGENTS` / `AGENT#<agent>`):
what a delete of the user forgets with it (docs/architecture.md "Agent scopes").

An agent's scope lives in partitions of its own, which no query of the user's partition finds; this
list is how a delete of the user reaches them. A partition of its own, so no sweep of the user's
partitions erases it before the delete has read it.
"""

import uuid
from collections.abc import Mapping
from typing import Final

from botocore.exceptions import ClientError

from hippocampus.adapters.dynamodb_items import decoded_all
from hippocampus.adapters.dynamodb_table import Table, agents_pk, is_condition_failure, key, values
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK

AGENT_PREFIX: Final = "AGENT#"


class DynamoDbAgentRegistry:
    def __init__(self, table: Table) -> None:
        self._table = table

    def register(self, tenant_id: str, user_id: str, agent_id: str) -> None:
        item = {
            PK: agents_pk(tenant_id, user_id),
            SK: AGENT_PREFIX + agent_id,
            "agent_id": agent_id,
            "token": uuid.uuid4().hex,  # renewed by every write: see `unregister`
        }
        self._table.client().put_item(TableName=self._table.name, Item=values(item))

    def listed(self, tenant_id: str, user_id: str) -> dict[str, str]:
        items = decoded_all(
            self._table.query_partition(agents_pk(tenant_id, user_id), sk_prefix=AGENT_PREFIX)
        )
        return {str(item["agent_id"]): str(item["token"]) for item in items}

    def unregister(self, tenant_id: str, user_id: str, listed: Mapping[str, str]) -> None:
        # One conditional delete each (a batch takes no condition): a listing renewed since it was
        # read belongs to a write that came after, whose scope the next delete must find.
        for agent_id, token in listed.items():
            try:
                self._table.client().delete_item(
                    TableName=self._table.name,
                    Key=key(agents_pk(tenant_id, user_id), AGENT_PREFIX + agent_id),
                    ConditionExpression="#token = :token",
                    ExpressionAttributeNames={"#token": "token"},
                    ExpressionAttributeValues=values({":token": token}),
                )
            except ClientError as error:
                if not is_condition_failure(error):
                    raise
