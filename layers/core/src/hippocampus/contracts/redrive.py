"""The condenser's direct action `redrive_dead_letters` (docs/api.md "Direct invocation"): its
payload and its answer. The CLI's `hippocampus redrive` sends the payload as JSON."""

from typing import Annotated, Literal

from pydantic import Field

from hippocampus.contracts.models import Model, Record

REDRIVE_ACTION: Literal["redrive_dead_letters"] = "redrive_dead_letters"
MAX_REDRIVE_LIMIT = 1_000
DEFAULT_REDRIVE_LIMIT = 100


class RedriveRequest(Model):
    """`{"action": "redrive_dead_letters", "limit": 100}`: strict, no other field."""

    action: Literal["redrive_dead_letters"]
    limit: Annotated[int, Field(ge=1, le=MAX_REDRIVE_LIMIT)] = DEFAULT_REDRIVE_LIMIT


class RedriveResult(Record):
    """What a redrive did: messages moved back to the ingest queue, `failed` jobs of theirs queued
    again, and about how many messages the DLQ still holds (SQS's approximate counts)."""

    moved: int
    jobs_requeued: int
    remaining: int
