"""Job identity: the same item (id and content) sent again maps to the same job."""

import hashlib
from datetime import datetime

from hippocampus.contracts.models import IngestItem, Job, JobStatus


def content_hash(item: IngestItem) -> str:
    return hashlib.sha256(item.model_dump_json(exclude={"id"}).encode()).hexdigest()


def job_id_for(tenant_id: str, user_id: str, item_id: str, digest: str, generation: int) -> str:
    """Deterministic in tenant, user, item id, content and generation (a delete starts a new one)."""
    seed = "\x1f".join([tenant_id, user_id, item_id, digest, str(generation)])
    return "job-" + hashlib.sha256(seed.encode()).hexdigest()[:32]


def new_job(
    tenant_id: str, user_id: str, item: IngestItem, job_id: str, now: datetime, status: JobStatus = "queued"
) -> Job:
    """The job of `item` (with its id), accepted `now`: it happened at its `occurred_at`, or now."""
    assert item.id is not None
    return Job(
        job_id=job_id,
        tenant_id=tenant_id,
        user_id=user_id,
        item_id=item.id,
        status=status,
        created_at=now,
        updated_at=now,
        occurred_at=item.occurred_at or now,
    )
