"""DynamoDB adapter: memory items, facts, jobs and the applied-job ledger in one table.

Layout (single table, `pk`/`sk`):
- `T#<tenant>#U#<user>` / `MEMORY`       summary, version, generation (bumped by a delete)
- `T#<tenant>#U#<user>` / `FACT#<id>`    one fact
- `T#<tenant>#J#<job>`  / `JOB`          one ingestion job; `completed` is the applied-job ledger,
                                          written in the same transaction as the memory version.
"""

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from hippocampus.errors import ConditionFailed
from hippocampus.models import Fact, Job, JobError, JobStatus
from hippocampus.ports import MemoryState, MemoryWrite, iter_chunks
from hippocampus.schema import TABLE_PARTITION_KEY as PK
from hippocampus.schema import TABLE_SORT_KEY as SK
from hippocampus.schema import TABLE_TTL_ATTRIBUTE as TTL

MEMORY_SK = "MEMORY"
FACT_PREFIX = "FACT#"
JOB_SK = "JOB"

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def user_pk(tenant_id: str, user_id: str) -> str:
    return f"T#{tenant_id}#U#{user_id}"


def job_pk(tenant_id: str, job_id: str) -> str:
    return f"T#{tenant_id}#J#{job_id}"


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {PK: {"S": pk}, SK: {"S": sk}}


def _values(values: dict[str, Any]) -> dict[str, Any]:
    return {name: _serializer.serialize(value) for name, value in values.items()}


def _item(raw: dict[str, Any]) -> dict[str, Any]:
    return {name: _deserializer.deserialize(value) for name, value in raw.items()}


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _cancelled_indexes(error: ClientError) -> list[int]:
    """Indexes of the transaction items whose condition failed."""
    reasons = error.response.get("CancellationReasons") or []
    return [i for i, reason in enumerate(reasons) if reason.get("Code") == "ConditionalCheckFailed"]


def _is_condition_failure(error: ClientError) -> bool:
    code = error.response.get("Error", {}).get("Code")
    return code in {"ConditionalCheckFailedException", "TransactionCanceledException"}


class DynamoMemoryStore:
    """MemoryStore on one DynamoDB table; `now` and `client` are injectable for tests."""

    def __init__(
        self,
        table_name: str,
        client: Callable[[], Any],
        memory_ttl_days: int | None = None,
        job_retention_days: int = 30,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._table = table_name
        self._client = client
        self._memory_ttl_s = memory_ttl_days * 86400 if memory_ttl_days else None
        self._job_ttl_s = job_retention_days * 86400
        self._now = now

    # -- memory and facts ---------------------------------------------------------------

    def read_memory(self, tenant_id: str, user_id: str, with_facts: bool) -> tuple[MemoryState, list[Fact]]:
        pk = user_pk(tenant_id, user_id)
        if not with_facts:
            raw = self._client().get_item(TableName=self._table, Key=_key(pk, MEMORY_SK), ConsistentRead=True)
            return self._memory_state(raw.get("Item")), []
        memory_raw: dict[str, Any] | None = None
        facts: list[dict[str, Any]] = []
        for raw_item in self._query_partition(pk):
            sk = raw_item[SK]["S"]
            if sk == MEMORY_SK:
                memory_raw = raw_item
            elif sk.startswith(FACT_PREFIX) and not self._expired(raw_item):
                facts.append(_item(raw_item))
        state = self._memory_state(memory_raw)
        # A fact of an earlier generation is one a delete has not finished erasing: never shown.
        return state, [
            self._fact(item) for item in facts if int(item.get("generation", 0)) == state.generation
        ]

    def write_memory(self, write: MemoryWrite) -> None:
        now = self._now()
        names = {"#v": "version", "#g": "generation", "#m": "memory"}
        values: dict[str, Any] = {
            ":expected": write.expected_version,
            ":gen": write.generation,
            ":new": write.expected_version + 1,
            ":memory": write.memory,
            ":words": write.word_count,
            ":at": _iso(write.updated_at),
            ":jobs": list(write.completed_job_ids),
        }
        update = (
            "SET #v = :new, #g = :gen, #m = :memory, word_count = :words, updated_at = :at, job_ids = :jobs"
        )
        if self._memory_ttl_s:
            update += f", {TTL} = :ttl"
            values[":ttl"] = int(now.timestamp()) + self._memory_ttl_s
        condition = "(#v = :expected AND #g = :gen)"
        if write.expected_version == 0:
            # Absent attributes mean version 0 (an item may hold only the generation so far), and so
            # does an expired memory that DynamoDB has not removed yet.
            condition = "(attribute_not_exists(#v) AND #g = :gen) OR " + condition
            if self._memory_ttl_s:
                condition += f" OR (#g = :gen AND {TTL} <= :now)"
                values[":now"] = int(now.timestamp())
            if write.generation == 0:
                condition = "attribute_not_exists(pk) OR " + condition
        transaction: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": _key(user_pk(write.tenant_id, write.user_id), MEMORY_SK),
                    "UpdateExpression": update,
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": _values(values),
                }
            }
        ]
        # The ledger: each applied job turns `completed` atomically with the version that applied it.
        transaction += [
            self._job_update(write.tenant_id, job_id, "completed", None, write.expected_version + 1, now)
            for job_id in write.completed_job_ids
        ]
        self._transact(transaction)

    def put_fact(self, tenant_id: str, user_id: str, fact: Fact, generation: int) -> None:
        pk = user_pk(tenant_id, user_id)
        fact_item: dict[str, Any] = {
            PK: pk,
            SK: FACT_PREFIX + fact.id,
            "id": fact.id,
            "text": fact.text,
            # JSON text: metadata may hold floats, which DynamoDB maps cannot take as they are.
            "metadata": json.dumps(fact.metadata, separators=(",", ":")),
            "additional_metadata": json.dumps(fact.additional_metadata, separators=(",", ":")),
            "updated_at": _iso(fact.updated_at),
            "generation": generation,
        }
        if self._memory_ttl_s:
            fact_item[TTL] = int(self._now().timestamp()) + self._memory_ttl_s
        generation_check = "attribute_not_exists(pk) OR #g = :gen" if generation == 0 else "#g = :gen"
        self._transact(
            [
                {"Put": {"TableName": self._table, "Item": _values(fact_item)}},
                {
                    # Written only while the user is not deleted since the request read it.
                    "ConditionCheck": {
                        "TableName": self._table,
                        "Key": _key(pk, MEMORY_SK),
                        "ConditionExpression": generation_check,
                        "ExpressionAttributeNames": {"#g": "generation"},
                        "ExpressionAttributeValues": _values({":gen": generation}),
                    }
                },
            ]
        )

    def delete_fact(self, tenant_id: str, user_id: str, fact_id: str) -> bool:
        try:
            self._client().delete_item(
                TableName=self._table,
                Key=_key(user_pk(tenant_id, user_id), FACT_PREFIX + fact_id),
                ConditionExpression="attribute_exists(pk)",
            )
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        return True

    def erase_user(self, tenant_id: str, user_id: str) -> int:
        pk = user_pk(tenant_id, user_id)
        # The tombstone first: from here on, every queued item of the old generation is skipped.
        result = self._client().update_item(
            TableName=self._table,
            Key=_key(pk, MEMORY_SK),
            UpdateExpression="SET #g = if_not_exists(#g, :zero) + :one, #v = :zero, "
            "word_count = :zero REMOVE #m, updated_at, job_ids, " + TTL,
            ExpressionAttributeNames={"#m": "memory", "#g": "generation", "#v": "version"},
            ExpressionAttributeValues=_values({":zero": 0, ":one": 1}),
            ReturnValues="UPDATED_NEW",
        )
        generation = int(result["Attributes"]["generation"]["N"])
        # Facts written after the tombstone carry the new generation and stay.
        fact_keys = [
            {PK: raw[PK], SK: raw[SK]}
            for raw in self._query_partition(pk, projection=True)
            if raw[SK]["S"].startswith(FACT_PREFIX)
            and int(raw.get("generation", {}).get("N", "0")) < generation
        ]
        for chunk in iter_chunks(fact_keys, 25):
            self._batch_delete(chunk)
        return generation

    # -- jobs -------------------------------------------------------------------------

    def create_job(self, job: Job, generation: int) -> tuple[Job, bool]:
        item = job.model_dump(mode="json") | {
            PK: job_pk(job.tenant_id, job.job_id),
            SK: JOB_SK,
            "generation": generation,
            "attempt": 1,
            TTL: int(self._now().timestamp()) + self._job_ttl_s,
        }
        try:
            self._client().put_item(
                TableName=self._table,
                Item=_values(_drop_none(item)),
                # An expired job that DynamoDB has not removed yet counts as absent.
                ConditionExpression=f"attribute_not_exists(pk) OR {TTL} <= :now",
                ExpressionAttributeValues=_values({":now": int(self._now().timestamp())}),
            )
            return job, True
        except ClientError as error:
            if not _is_condition_failure(error):
                raise
        existing = self.get_job(job.tenant_id, job.job_id)
        if existing is None or existing.status != "failed":
            return existing or job, False
        return self._requeue_failed(job, generation)

    def _requeue_failed(self, job: Job, generation: int) -> tuple[Job, bool]:
        """A failed job sent again gets another chance under the same id."""
        now = self._now()
        try:
            self._client().update_item(
                TableName=self._table,
                Key=_key(job_pk(job.tenant_id, job.job_id), JOB_SK),
                UpdateExpression="SET #s = :queued, updated_at = :at, #g = :gen, #a = #a + :one "
                "REMOVE #e, memory_version",
                ConditionExpression="#s = :failed",
                ExpressionAttributeNames={"#s": "status", "#e": "error", "#g": "generation", "#a": "attempt"},
                ExpressionAttributeValues=_values(
                    {
                        ":queued": "queued",
                        ":failed": "failed",
                        ":at": _iso(now),
                        ":gen": generation,
                        ":one": 1,
                    }
                ),
            )
        except ClientError as error:
            if not _is_condition_failure(error):
                raise
            return self.get_job(job.tenant_id, job.job_id) or job, False  # another request requeued it first
        return self.get_job(job.tenant_id, job.job_id) or job, True

    def get_job(self, tenant_id: str, job_id: str) -> Job | None:
        raw = self._get_job_raw(tenant_id, job_id)
        return Job.model_validate(raw) if raw else None

    def _get_job_raw(self, tenant_id: str, job_id: str) -> dict[str, Any] | None:
        response = self._client().get_item(
            TableName=self._table, Key=_key(job_pk(tenant_id, job_id), JOB_SK), ConsistentRead=True
        )
        if "Item" not in response or self._expired(response["Item"]):
            return None
        item = _item(response["Item"])
        return {k: v for k, v in item.items() if k not in {PK, SK, TTL}}

    def set_job_status(
        self,
        tenant_id: str,
        job_ids: Sequence[str],
        status: JobStatus,
        error: JobError | None = None,
        memory_version: int | None = None,
    ) -> None:
        now = self._now()
        for job_id in job_ids:
            update = self._job_update(tenant_id, job_id, status, error, memory_version, now)["Update"]
            try:
                self._client().update_item(**update)
            except ClientError as failure:
                if not _is_condition_failure(failure):
                    raise  # a job that expired or was never stored is not worth failing the batch

    def _job_update(
        self,
        tenant_id: str,
        job_id: str,
        status: JobStatus,
        error: JobError | None,
        memory_version: int | None,
        now: datetime,
    ) -> dict[str, Any]:
        sets = ["#s = :status", "updated_at = :at"]
        values: dict[str, Any] = {":status": status, ":at": _iso(now)}
        removes = []
        if error is None:
            removes.append("#e")
        else:
            sets.append("#e = :error")
            values[":error"] = error.model_dump()
        if memory_version is not None:
            sets.append("memory_version = :mv")
            values[":mv"] = memory_version
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        return {
            "Update": {
                "TableName": self._table,
                "Key": _key(job_pk(tenant_id, job_id), JOB_SK),
                "UpdateExpression": expression,
                # Never resurrect an unknown job; completed and skipped are final. A failed job may
                # still complete: its message can be redriven from the DLQ.
                "ConditionExpression": "attribute_exists(pk) AND NOT (#s IN (:completed, :skipped))",
                "ExpressionAttributeNames": {"#s": "status", "#e": "error"},
                "ExpressionAttributeValues": _values(
                    values | {":completed": "completed", ":skipped": "skipped"}
                ),
            }
        }

    # -- helpers ------------------------------------------------------------------------

    def _transact(self, items: list[dict[str, Any]]) -> None:
        try:
            self._client().transact_write_items(TransactItems=items)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "TransactionCanceledException" and (
                _cancelled_indexes(error) or "ConditionalCheckFailed" in str(error)
            ):
                raise ConditionFailed(str(error)) from error
            raise

    def _query_partition(self, pk: str, projection: bool = False) -> Iterator[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ConsistentRead": True,
        }
        if projection:
            kwargs["ProjectionExpression"] = "pk, sk, #g"
            kwargs["ExpressionAttributeNames"] = {"#g": "generation"}
        paginator = self._client().get_paginator("query")
        for page in paginator.paginate(**kwargs):
            yield from page.get("Items", [])

    def _batch_delete(self, keys: Sequence[dict[str, Any]]) -> None:
        requests = [{"DeleteRequest": {"Key": key}} for key in keys]
        while requests:
            response = self._client().batch_write_item(RequestItems={self._table: requests})
            requests = response.get("UnprocessedItems", {}).get(self._table, [])

    def _expired(self, raw: dict[str, Any]) -> bool:
        # DynamoDB deletes TTL-expired items lazily (and moto never): filter them here.
        expires = raw.get(TTL, {}).get("N")
        return expires is not None and int(expires) <= int(self._now().timestamp())

    def _memory_state(self, raw: dict[str, Any] | None) -> MemoryState:
        if not raw:
            return MemoryState()
        item = _item(raw)
        generation = int(item.get("generation", 0))
        if self._expired(raw) or "memory" not in item:
            return MemoryState(generation=generation)
        updated_at = item.get("updated_at")
        return MemoryState(
            memory=str(item["memory"]),
            version=int(item.get("version", 0)),
            word_count=int(item.get("word_count", 0)),
            updated_at=datetime.fromisoformat(updated_at) if updated_at else None,
            generation=generation,
        )

    @staticmethod
    def _fact(item: dict[str, Any]) -> Fact:
        return Fact(
            id=item["id"],
            text=item["text"],
            metadata=json.loads(item.get("metadata") or "{}"),
            additional_metadata=json.loads(item.get("additional_metadata") or "{}"),
            updated_at=datetime.fromisoformat(item["updated_at"]),
        )


def _drop_none(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if v is not None}
