"""List the users stored before the tenant's users index existed (docs/operations.md "Upgrading a
deployment that holds users").

`GET /v1/tenants/{tenant_id}/users` reads the sparse index `users-by-tenant`, whose keys a user's
memory item gets from its next write of a summary, a fact or an episode. A user stored before the
index and not written since is not listed until then: this sets the two keys on every such memory
item, once, for every tenant. A forgotten user (a tombstone holding only its generation) is left
off. Each write is conditional on the user's generation, so a delete meanwhile wins. Run with the
operator's credentials (`dynamodb:Scan` and `dynamodb:UpdateItem` on the table):

    .venv/bin/python -m tools.list_users --table <stack output TableName>
    .venv/bin/python -m tools.list_users --table hippocampus-local-memory --endpoint-url <the local stack's AWS endpoint>
"""

from __future__ import annotations

import argparse
from typing import Any

import boto3
from botocore.exceptions import ClientError

from hippocampus.adapters.dynamodb_table import EPISODE_COUNT, FACT_COUNT, MEMORY_SK, listing, values
from hippocampus.contracts.names import USERS_INDEX_PARTITION_KEY

# What a memory item holds while its user has something stored (docs/architecture.md "Storage layout").
_STORED = f"(attribute_exists(memory) OR {FACT_COUNT} > :zero OR {EPISODE_COUNT} > :zero)"


def unlisted(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    """The memory items of users with something stored, not in the users index yet."""
    paginator = dynamodb.get_paginator("scan")
    pages = paginator.paginate(
        TableName=table,
        FilterExpression=f"sk = :memory AND attribute_not_exists({USERS_INDEX_PARTITION_KEY}) AND {_STORED}",
        ExpressionAttributeValues=values({":memory": MEMORY_SK, ":zero": 0}),
        ProjectionExpression="pk, generation",
    )
    return [item for page in pages for item in page.get("Items", [])]


def list_users(dynamodb: Any, table: str) -> int:
    """Set the index keys on each unlisted user's memory item; the number of users listed."""
    listed = 0
    for item in unlisted(dynamodb, table):
        tenant_id, _, user_id = item["pk"]["S"].removeprefix("T#").partition("#U#")
        clause, keys = listing(tenant_id, user_id)
        generation = item.get("generation", {"N": "0"})
        try:
            dynamodb.update_item(
                TableName=table,
                Key={"pk": item["pk"], "sk": {"S": MEMORY_SK}},
                UpdateExpression=f"SET {clause}",
                ConditionExpression="(attribute_not_exists(generation) AND :g = :zero) OR generation = :g",
                ExpressionAttributeValues=values(keys | {":zero": 0}) | {":g": generation},
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            continue  # forgotten meanwhile: the delete wins
        listed += 1
    return listed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", required=True, help="the memory table (stack output TableName)")
    parser.add_argument("--endpoint-url", help="another DynamoDB endpoint (the local stack's AWS endpoint)")
    args = parser.parse_args(argv)
    dynamodb = boto3.client("dynamodb", endpoint_url=args.endpoint_url)
    print(f"listed {list_users(dynamodb, args.table)} user(s) stored before the users index")


if __name__ == "__main__":
    main()
