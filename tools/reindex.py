"""Re-index a tenant: give every fact and episode of its users a vector of the configured model.

After a change of MEMORY_EMBEDDING_MODEL or MEMORY_EMBEDDING_DIMENSIONS the condenser gives new
vectors to each user's facts and newest episodes on its next pass over the user; this tool asks
for every episode too, for every user of a tenant, by queueing one `index` message per user in
the user's message group (docs/operations.md "Recall"). Run with the operator's credentials
(`dynamodb:Scan` on the table, `sqs:SendMessage` on the queue):

    .venv/bin/python -m tools.reindex --table hippocampus-dev-memory \\
        --queue-url https://sqs.<region>.amazonaws.com/<account>/hippocampus-dev-ingest.fifo --tenant acme
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Iterator
from typing import Any

import boto3

from hippocampus.adapters.dynamodb_table import MEMORY_SK
from hippocampus.adapters.sqs import SqsJobQueue


def tenant_users(dynamodb: Any, table: str, tenant_id: str) -> Iterator[str]:
    """The users of a tenant: one memory item each (`T#<tenant>#U#<user>` / `MEMORY`)."""
    prefix = f"T#{tenant_id}#U#"
    paginator = dynamodb.get_paginator("scan")
    pages = paginator.paginate(
        TableName=table,
        FilterExpression="begins_with(pk, :prefix) AND sk = :memory",
        ExpressionAttributeValues={":prefix": {"S": prefix}, ":memory": {"S": MEMORY_SK}},
        ProjectionExpression="pk",
    )
    for page in pages:
        for item in page.get("Items", []):
            yield item["pk"]["S"][len(prefix) :]


def reindex(dynamodb: Any, queue: SqsJobQueue, table: str, tenant_id: str) -> int:
    """Queue an `index` message of every episode for each user of the tenant; return how many."""
    run = uuid.uuid4().hex  # a new run is never deduplicated against an earlier one
    count = 0
    for user_id in tenant_users(dynamodb, table, tenant_id):
        queue.request_index(tenant_id, user_id, f"reindex-{run}-{user_id}", everything=True)
        count += 1
    return count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", required=True, help="the memory table (stack output TableName)")
    parser.add_argument("--queue-url", required=True, help="the ingest queue (stack output QueueUrl)")
    parser.add_argument("--tenant", required=True, help="the tenant to re-index")
    args = parser.parse_args(argv)
    dynamodb, sqs = boto3.client("dynamodb"), boto3.client("sqs")
    count = reindex(dynamodb, SqsJobQueue(args.queue_url, lambda: sqs), args.table, args.tenant)
    print(f"queued a re-index of {count} user(s) of tenant {args.tenant}")


if __name__ == "__main__":
    main()
