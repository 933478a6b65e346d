"""Creating jobs on the DynamoDB table (JobStore.create_job, create_jobs) and reading them.

Each job is written together with its reference in the user's index partition and a check that
the user was not deleted since the request read it, so a delete that sweeps the index after its
tombstone finds every job of the generations it forgets (docs/architecture.md "Deletion wins").
A request's new jobs share transactions: 49 jobs and one generation check each.
"""

from collections.abc import Sequence
from itertools import batched
from typing import Any, Final

from botocore.exceptions import ClientError

from hippocampus.adapters.dynamodb_index import job_ref_put
from hippocampus.adapters.dynamodb_table import (
    JOB_SK,
    Table,
    generation_check,
    is_condition_failure,
    iso,
    job_pk,
    key,
    plain_item,
    values,
)
from hippocampus.contracts.errors import ConditionFailed, DependencyUnavailable, UserDeleted
from hippocampus.contracts.models import Job
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.ports import NewJob, RawSource

_NOT_STORED = {PK, SK, TTL}

# A transaction holds at most 100 writes: two per job (its item, its reference) and one check of
# the user's generation for them all (one item may appear once in a transaction).
JOBS_PER_TRANSACTION: Final = 49


def job_put(
    table: Table, job: Job, generation: int, retention_s: int, source: RawSource | None = None
) -> dict[str, Any]:
    """The `Put` of a new job: only where no live job has this id (an expired one counts as absent)."""
    item = job.model_dump(mode="json") | {
        PK: job_pk(job.tenant_id, job.job_id),
        SK: JOB_SK,
        "generation": generation,
        "attempt": 1,
        TTL: table.epoch() + retention_s,
    }
    if source is not None:  # a turn: where its content is (the condenser may apply it early)
        item |= {"raw_key": source.raw_key, "raw_index": source.raw_index}
    return {
        "Put": {
            "TableName": table.name,
            "Item": values({k: v for k, v in item.items() if v is not None}),
            "ConditionExpression": f"attribute_not_exists(pk) OR {TTL} <= :now",
            "ExpressionAttributeValues": values({":now": table.epoch()}),
        }
    }


def new_job_writes(
    table: Table, job: Job, generation: int, retention_s: int, source: RawSource | None = None
) -> list[dict[str, Any]]:
    """A new job, its reference and the generation check (in this order: `UserDeleted` reads it)."""
    return [
        job_put(table, job, generation, retention_s, source),
        job_ref_put(table, job, generation, retention_s),
        generation_check(table.name, job.tenant_id, job.scope_key, generation),
    ]


def raise_if_deleted(failure: ConditionFailed, check_at: int) -> None:
    """A transaction whose generation check (at position `check_at`) failed lost to a delete."""
    if check_at in failure.failed:
        raise UserDeleted("the user was deleted while the request ran", failure.failed) from failure


def job_from_item(raw: dict[str, Any]) -> Job:
    return Job.model_validate({k: v for k, v in plain_item(raw).items() if k not in _NOT_STORED})


def read_job(table: Table, tenant_id: str, job_id: str) -> Job | None:
    response = table.client().get_item(
        TableName=table.name, Key=key(job_pk(tenant_id, job_id), JOB_SK), ConsistentRead=True
    )
    raw = response.get("Item")
    return job_from_item(raw) if raw and not table.expired(raw) else None


def read_jobs(table: Table, tenant_id: str, job_ids: Sequence[str]) -> dict[str, Job]:
    keys = [key(job_pk(tenant_id, job_id), JOB_SK) for job_id in dict.fromkeys(job_ids)]
    jobs = (job_from_item(raw) for raw in table.batch_get(keys) if not table.expired(raw))
    return {job.job_id: job for job in jobs}


class JobCreation:
    def __init__(self, table: Table, retention_s: int) -> None:
        self._table = table
        self._retention_s = retention_s

    def create_job(self, job: Job, generation: int, source: RawSource | None = None) -> tuple[Job, bool]:
        return self._create_alone(NewJob(job, source), generation, puts=2)

    def _create_alone(self, new: NewJob, generation: int, puts: int) -> tuple[Job, bool]:
        # A job that refused the put but is gone by the read (it expired in between) is put again:
        # answering `job` unstored would report a queued job that exists nowhere and is never queued.
        for _ in range(puts):
            try:
                self._table.transact(
                    new_job_writes(self._table, new.job, generation, self._retention_s, new.source)
                )
                return new.job, True
            except ConditionFailed as failure:
                raise_if_deleted(failure, check_at=2)
            existing = read_job(self._table, new.job.tenant_id, new.job.job_id)
            if existing is not None:
                return self._duplicate(new.job, existing, generation)
        raise DependencyUnavailable(f"job {new.job.job_id} could not be created; send the item again")

    def _duplicate(self, job: Job, existing: Job, generation: int) -> tuple[Job, bool]:
        """The live job that has this id, untouched; a failed one is queued again."""
        if existing.status != "failed":
            return existing, False
        return self._requeue_failed(job, generation)

    def create_jobs(
        self, new_jobs: Sequence[NewJob], generation: int, created: list[Job]
    ) -> list[tuple[Job, bool]]:
        first: dict[str, NewJob] = {}  # the first of each job id is the one written
        for new in new_jobs:
            first.setdefault(new.job.job_id, new)
        if len({(new.job.tenant_id, new.job.scope_key) for new in first.values()}) > 1:
            raise ValueError("create_jobs takes the jobs of one user (one generation check)")
        outcomes: dict[str, tuple[Job, bool]] = {}
        for chunk in batched(first.values(), JOBS_PER_TRANSACTION):
            outcomes |= self._create_together(list(chunk), generation, created)
        answers: list[tuple[Job, bool]] = []
        answered: set[str] = set()
        for new in new_jobs:
            job, was_created = outcomes[new.job.job_id]
            answers.append((job, was_created and new.job.job_id not in answered))  # a repeat is a duplicate
            answered.add(new.job.job_id)
        return answers

    def _create_together(
        self, chunk: list[NewJob], generation: int, created: list[Job]
    ) -> dict[str, tuple[Job, bool]]:
        """One transaction for the chunk; the jobs it refused (they exist) are settled one by one
        and the rest is written again, until every job of the chunk has its outcome."""
        outcomes: dict[str, tuple[Job, bool]] = {}
        pending = chunk
        while pending:
            writes = [
                write
                for new in pending
                for write in (
                    job_put(self._table, new.job, generation, self._retention_s, new.source),
                    job_ref_put(self._table, new.job, generation, self._retention_s),
                )
            ]
            user = chunk[0].job
            writes.append(generation_check(self._table.name, user.tenant_id, user.scope_key, generation))
            try:
                self._table.transact(writes)
            except ConditionFailed as failure:
                raise_if_deleted(failure, check_at=len(writes) - 1)
                # Only a job's put is conditional (even positions); a store that does not say
                # which failed has every job settled alone.
                refused = {position // 2 for position in failure.failed} or set(range(len(pending)))
                outcomes |= self._settle_refused([pending[i] for i in sorted(refused)], generation, created)
                pending = [new for i, new in enumerate(pending) if i not in refused]
                continue
            created += [new.job for new in pending]
            outcomes |= {new.job.job_id: (new.job, True) for new in pending}
            pending = []
        return outcomes

    def _settle_refused(
        self, refused: list[NewJob], generation: int, created: list[Job]
    ) -> dict[str, tuple[Job, bool]]:
        """Jobs whose put was refused: the existing one (a duplicate), requeued if it failed; one
        gone by the read (it expired in between) is put once more alone, as `create_job` does."""
        existing = read_jobs(self._table, refused[0].job.tenant_id, [new.job.job_id for new in refused])
        outcomes: dict[str, tuple[Job, bool]] = {}
        for new in refused:
            stored = existing.get(new.job.job_id)
            if stored is None:  # its first put was the chunk's
                outcome = self._create_alone(new, generation, puts=1)
            else:
                outcome = self._duplicate(new.job, stored, generation)
            if outcome[1]:
                created.append(outcome[0])
            outcomes[new.job.job_id] = outcome
        return outcomes

    def _requeue_failed(self, job: Job, generation: int) -> tuple[Job, bool]:
        """A failed job sent again gets another chance under the same id."""
        try:
            self._table.client().update_item(
                TableName=self._table.name,
                Key=key(job_pk(job.tenant_id, job.job_id), JOB_SK),
                UpdateExpression="SET #s = :queued, updated_at = :at, #g = :gen, #a = #a + :one "
                "REMOVE #e, memory_version",
                ConditionExpression="#s = :failed",
                ExpressionAttributeNames={"#s": "status", "#e": "error", "#g": "generation", "#a": "attempt"},
                ExpressionAttributeValues=values(
                    {
                        ":queued": "queued",
                        ":failed": "failed",
                        ":at": iso(self._table.now()),
                        ":gen": generation,
                        ":one": 1,
                    }
                ),
            )
        except ClientError as error:
            if not is_condition_failure(error):
                raise
            # Another request requeued it first.
            return read_job(self._table, job.tenant_id, job.job_id) or job, False
        return read_job(self._table, job.tenant_id, job.job_id) or job, True
