"""The user's index partition (`T#<t>#U#<u>#I`): one reference per job, in creation order.

What a delete sweeps, an export lists, and the condenser reads to find the turns queued behind
the records it holds (docs/architecture.md "Storage layout").
"""

from typing import Any

from hippocampus.adapters.dynamodb_items import Item
from hippocampus.adapters.dynamodb_table import JOB_REF_PREFIX, Table, index_pk, values
from hippocampus.contracts.models import CondenseMessage, Job
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.scopes import agent_scope


def job_ref_put(table: Table, job: Job, generation: int, retention_s: int) -> dict[str, Any]:
    """The `Put` of the job's reference in the user's index (what a delete sweeps, an export lists)."""
    item = {
        PK: index_pk(job.tenant_id, job.scope_key),
        SK: ref_sk(job),
        "generation": generation,
        TTL: table.epoch() + retention_s,
    }
    return {"Put": {"TableName": table.name, "Item": values(item)}}


def ref_sk(job: Job) -> str:
    """`JOB#<created, ms>#<job id>`: references sort by creation, so the newest come first in a query."""
    return f"{JOB_REF_PREFIX}{int(job.created_at.timestamp() * 1000):013d}#{job.job_id}"


def ref_job_id(sk: str) -> str:
    return sk.rsplit("#", 1)[1]


# How many of a user's newest job references `open_jobs` reads, at most (one query page).
OPEN_JOBS_WALK = 100


def queue_order(message: CondenseMessage) -> tuple[str, str, int]:
    """The order the queue holds a user's messages in: by request, then by place in the request."""
    return (message.queued_at.isoformat(), message.raw_key, message.raw_index)


def open_message(item: Item) -> CondenseMessage:
    """The queue message of a stored, queued turn: what its own message will say when it arrives."""
    return CondenseMessage(
        job_id=item["job_id"],
        tenant_id=item["tenant_id"],
        user_id=agent_scope(item["user_id"], item.get("agent_id")),
        item_id=item["item_id"],
        generation=item["generation"],
        raw_key=item["raw_key"],
        raw_index=item["raw_index"],
        queued_at=item["created_at"],
    )
