"""JobStore on the DynamoDB table: one item per ingestion job, `completed` is the applied-job ledger.

Each job is written together with its reference in the user's index partition and a check that
the user was not deleted since the request read it, so a delete that sweeps the index after its
tombstone finds every job of the generations it forgets (docs/architecture.md "Deletion wins");
those writes are in adapters/dynamodb_job_creation.py.
"""

from collections.abc import Sequence
from datetime import datetime
from itertools import batched
from typing import Any

from botocore.exceptions import ClientError

from hippocampus.adapters.dynamodb_index import (
    OPEN_JOBS_WALK,
    open_message,
    queue_order,
    ref_job_id,
)
from hippocampus.adapters.dynamodb_items import Item, decoded, decoded_all, generation_of, is_expired
from hippocampus.adapters.dynamodb_job_creation import JobCreation, job_from_item, read_job, read_jobs
from hippocampus.adapters.dynamodb_table import (
    DAY_S,
    JOB_REF_PREFIX,
    JOB_SK,
    Table,
    index_pk,
    is_condition_failure,
    iso,
    job_pk,
    key,
    values,
)
from hippocampus.contracts.models import IN_FLIGHT, USER_DELETED, CondenseMessage, Job, JobError, JobStatus
from hippocampus.contracts.names import IDEMPOTENCY_KEY_PREFIX
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.ports import NewJob, RawSource
from hippocampus.contracts.receipts import JobErasure


def job_update(
    table: Table,
    tenant_id: str,
    job_id: str,
    status: JobStatus,
    error: JobError | None,
    memory_version: int | None,
    now: datetime,
) -> dict[str, Any]:
    """The `Update` of a job's status. Never resurrects an unknown job; completed and skipped are
    final. A failed job may still complete: its message can be redriven from the DLQ."""
    sets = ["#s = :status", "updated_at = :at"]
    plain: dict[str, Any] = {":status": status, ":at": iso(now)}
    removes = []
    if error is None:
        removes.append("#e")
    else:
        sets.append("#e = :error")
        plain[":error"] = error.model_dump()
    if memory_version is not None:
        sets.append("memory_version = :mv")
        plain[":mv"] = memory_version
    expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
    return {
        "Update": {
            "TableName": table.name,
            "Key": key(job_pk(tenant_id, job_id), JOB_SK),
            "UpdateExpression": expression,
            "ConditionExpression": "attribute_exists(pk) AND NOT (#s IN (:completed, :skipped))",
            "ExpressionAttributeNames": {"#s": "status", "#e": "error"},
            "ExpressionAttributeValues": values(plain | {":completed": "completed", ":skipped": "skipped"}),
        }
    }


class DynamoJobStore:
    def __init__(self, table: Table, retention_days: int = 30) -> None:
        self._table = table
        self.retention_s = retention_days * DAY_S
        self._creation = JobCreation(table, self.retention_s)

    def create_job(self, job: Job, generation: int, source: RawSource | None = None) -> tuple[Job, bool]:
        return self._creation.create_job(job, generation, source)

    def create_jobs(
        self, new_jobs: Sequence[NewJob], generation: int, created: list[Job]
    ) -> list[tuple[Job, bool]]:
        return self._creation.create_jobs(new_jobs, generation, created)

    def get_job(self, tenant_id: str, job_id: str) -> Job | None:
        return read_job(self._table, tenant_id, job_id)

    def raw_source(self, tenant_id: str, job_id: str) -> RawSource | None:
        response = self._table.client().get_item(
            TableName=self._table.name,
            Key=key(job_pk(tenant_id, job_id), JOB_SK),
            ConsistentRead=True,
            ProjectionExpression="raw_key, raw_index",
        )
        item = decoded(response["Item"]) if "Item" in response else {}
        if "raw_key" not in item:
            return None
        return RawSource(item["raw_key"], item["raw_index"])

    def get_jobs(self, tenant_id: str, job_ids: Sequence[str]) -> dict[str, Job]:
        return read_jobs(self._table, tenant_id, job_ids)

    def set_job_status(
        self,
        tenant_id: str,
        job_ids: Sequence[str],
        status: JobStatus,
        error: JobError | None = None,
        memory_version: int | None = None,
    ) -> None:
        now = self._table.now()
        for job_id in job_ids:
            update = job_update(self._table, tenant_id, job_id, status, error, memory_version, now)
            try:
                self._table.client().update_item(**update["Update"])
            except ClientError as failure:
                if not is_condition_failure(failure):
                    raise  # a job that expired or was never stored is not worth failing the batch

    def open_jobs(self, tenant_id: str, user_id: str, limit: int) -> list[CondenseMessage]:
        # Newest first, back to the newest turn that is settled: the open turns behind it are the
        # rest of the user's queue, in order. Further back than one page, the order is not known.
        refs = decoded_all(self._table.newest(index_pk(tenant_id, user_id), JOB_REF_PREFIX, OPEN_JOBS_WALK))
        keys = [key(job_pk(tenant_id, ref_job_id(ref[SK])), JOB_SK) for ref in refs]
        epoch = self._table.epoch()
        stored = {
            item["job_id"]: item
            for item in decoded_all(self._table.batch_get(keys))
            if not is_expired(item, epoch)
        }
        open_turns: list[CondenseMessage] = []
        for ref in refs:
            item = stored.get(ref_job_id(ref[SK]))
            if item is None or "raw_key" not in item:
                continue  # gone, or a fact
            status = item["status"]
            if status in ("completed", "skipped", "failed"):
                break
            if status == "queued":
                open_turns.append(open_message(item))
        else:
            if len(refs) == OPEN_JOBS_WALK:
                return []
        return sorted(open_turns, key=queue_order)[:limit]

    def list_user_jobs(self, tenant_id: str, user_id: str) -> list[Job]:
        refs = self._table.query_partition(index_pk(tenant_id, user_id), sk_prefix=JOB_REF_PREFIX)
        jobs = self.get_jobs(tenant_id, [ref_job_id(ref[SK]) for ref in decoded_all(refs)])
        return sorted(jobs.values(), key=lambda job: (job.created_at, job.job_id), reverse=True)

    def list_jobs(
        self, tenant_id: str, user_id: str, limit: int, before: str | None
    ) -> tuple[list[Job], str | None]:
        # The references newest first, from just below the last one examined (BETWEEN is inclusive:
        # that one is skipped). A reference or job past its retention is passed over, so a page is
        # read on until it holds `limit` jobs or the references run out.
        below = before if before is not None else JOB_REF_PREFIX + "~"
        request = {
            "TableName": self._table.name,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :lowest AND :below",
            "ExpressionAttributeValues": values(
                {":pk": index_pk(tenant_id, user_id), ":lowest": JOB_REF_PREFIX, ":below": below}
            ),
            "ProjectionExpression": f"sk, {TTL}",
            "ConsistentRead": True,
            "ScanIndexForward": False,
        }
        epoch = self._table.epoch()
        jobs: list[Job] = []
        last_examined: str | None = None
        refs = (ref for ref in self._table.query(request) if ref[SK]["S"] != below)
        for batch in batched(refs, limit + 1):
            live = {ref[SK]["S"] for ref in batch if not is_expired(decoded(ref), epoch)}
            stored = self.get_jobs(tenant_id, [ref_job_id(sk) for sk in live])
            for ref in batch:
                sk = ref[SK]["S"]
                job = stored.get(ref_job_id(sk)) if sk in live else None
                if job is not None:
                    if len(jobs) == limit:
                        return jobs, last_examined  # one more exists: the page ends before it
                    jobs.append(job)
                last_examined = sk
        return jobs, None

    def erase_user(self, tenant_id: str, user_id: str, generation: int) -> JobErasure:
        """Erase the job records of the generations before `generation` and every Idempotency-Key
        record of the user; a job still in flight is kept, redacted, as `skipped` (docs/api.md
        "Forgetting a user")."""
        references: list[Item] = []
        records: list[Item] = []  # Idempotency-Key records (Powertools')
        for item in decoded_all(
            self._table.query_partition(index_pk(tenant_id, user_id), projection="pk, sk, #g")
        ):
            if not item[SK].startswith(JOB_REF_PREFIX):
                records.append(item)
            elif generation_of(item) < generation:  # not a job of the user's new life
                references.append(item)
        # A job id comes once (BatchGetItem refuses a key twice), though a job re-sent after its
        # retention has a second reference while DynamoDB has not removed the expired one yet.
        job_ids = dict.fromkeys(ref_job_id(ref[SK]) for ref in references)
        job_keys = [key(job_pk(tenant_id, job_id), JOB_SK) for job_id in job_ids]
        # Every job record stored, expired ones too (DynamoDB removes those lazily, and they still
        # name their item): one in flight is kept, redacted; every other one goes.
        skipped, gone = 0, []
        for raw in self._table.batch_get(job_keys):
            if not self._table.expired(raw) and self._redact_in_flight(job_from_item(raw)):
                skipped += 1
            else:
                gone.append(key(raw[PK]["S"], raw[SK]["S"]))
        self._table.batch_delete(gone)
        # The references last: a retry of the delete finds the jobs again.
        self._table.batch_delete([key(item[PK], item[SK]) for item in references + records])
        idempotency = sum(item[SK].startswith(IDEMPOTENCY_KEY_PREFIX + "#") for item in records)
        return JobErasure(
            jobs=len(gone), job_references=len(references), idempotency_records=idempotency, skipped=skipped
        )

    def _redact_in_flight(self, job: Job) -> bool:
        """A queued, processing or deferred (parked by the token budget) job becomes `skipped`, without
        its item id; False if it was not in flight."""
        if job.status not in IN_FLIGHT:
            return False
        in_flight = {f":in_flight_{n}": status for n, status in enumerate(sorted(IN_FLIGHT))}
        try:
            self._table.client().update_item(
                TableName=self._table.name,
                Key=key(job_pk(job.tenant_id, job.job_id), JOB_SK),
                UpdateExpression="SET #s = :skipped, #e = :error, updated_at = :at REMOVE item_id, memory_version",
                ConditionExpression=f"#s IN ({', '.join(in_flight)})",
                ExpressionAttributeNames={"#s": "status", "#e": "error"},
                ExpressionAttributeValues=values(
                    {
                        ":skipped": "skipped",
                        ":error": USER_DELETED.model_dump(),
                        ":at": iso(self._table.now()),
                        **in_flight,
                    }
                ),
            )
        except ClientError as error:
            if not is_condition_failure(error):
                raise
            return False  # it ended meanwhile: erased like every other finished job
        return True
