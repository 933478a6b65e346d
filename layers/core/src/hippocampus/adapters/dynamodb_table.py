"""What every DynamoDB adapter shares: keys, (de)serialisation, transactions, TTL filtering.

Layout of the single table (`pk`/`sk`, docs/architecture.md "Storage layout"):
- `T#<tenant>#U#<user>` / `MEMORY`       summary, version, generation (bumped by a delete)
- `T#<tenant>#U#<user>` / `FACT#<id>`    one fact
- `T#<tenant>#U#<user>` / `EPISODE#<ms>#…#<job>` one condensed turn (recall), by when it happened
- `T#<tenant>#U#<user>` / `RECORD#<id>`  one record (ids sort by when they were recorded)
- `T#<tenant>#U#<user>` / `PII#KEY`, `PII#V#<digest>` PII masking's placeholder numbers
- `T#<tenant>#U#<user>#I` / `JOB#<ms>#<job>` the user's index: one reference per job, by creation
- `T#<tenant>#U#<user>#I` / `ingest#<h>` the user's Idempotency-Key records (Powertools)
- `T#<tenant>#U#<user>#A#<agent>` (and its `#I`): an agent's private scope of the user, laid out as a
  user's (contracts/scopes.py)
- `T#<tenant>#U#<user>#AGENTS` / `AGENT#<agent>` the agents with a private scope of the user: what
  the user's delete forgets with it (adapters/dynamodb_agents.py)
- `T#<tenant>#J#<job>`  / `JOB`          one ingestion job; `completed` is the applied-job ledger,
                                          written in the same transaction as the memory version.
The index is what lets a delete find, and an export list, every job and request record of a user.
"""

import random
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from itertools import batched
from typing import Any, Final, NoReturn

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from hippocampus.contracts.errors import ConditionFailed
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.names import USERS_INDEX_PARTITION_KEY, USERS_INDEX_SORT_KEY
from hippocampus.contracts.scopes import split_scope

MEMORY_SK: Final = "MEMORY"
FACT_PREFIX: Final = "FACT#"
EPISODE_PREFIX: Final = "EPISODE#"
# After `MEMORY`: a memory read (FACT# up to MEMORY) never touches them.
RECORD_PREFIX: Final = "RECORD#"
# PII masking's digest key and numbered values (adapters/dynamodb_placeholders.py), between the two.
PII_PREFIX: Final = "PII#"
# On the memory item: episodes written since the last trim (adapters/dynamodb_episodes.py).
EPISODE_COUNT: Final = "episode_count"
EPISODES_REVISION: Final = "episodes_revision"
EPISODES_WRITTEN: Final = "episodes_written"
JOB_SK: Final = "JOB"
JOB_REF_PREFIX: Final = "JOB#"
# On the memory item: the user's fact counts, bumped with every change of the facts, and until when
# (epoch s) a request written in several commits may still be writing (adapters/dynamodb_memory.py).
FACT_COUNT: Final = "fact_count"
FACT_BYTES: Final = "fact_bytes"
FACT_REVISION: Final = "fact_revision"
FACTS_SETTLING_UNTIL: Final = "facts_settling_until"
# On a fact: the bytes it was counted with.
FACT_SIZE: Final = "counted_bytes"
DAY_S: Final = 86_400
# BatchWriteItem takes at most 25 requests, BatchGetItem 100 keys.
BATCH_WRITE_MAX: Final = 25
BATCH_GET_MAX: Final = 100

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()

Now = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def user_pk(tenant_id: str, user_id: str) -> str:
    return f"T#{tenant_id}#U#{user_id}"


def agents_pk(tenant_id: str, user_id: str) -> str:
    """The partition listing the agents with a private scope of the user (adapters/dynamodb_agents.py)."""
    return f"{user_pk(tenant_id, user_id)}#AGENTS"


def index_pk(tenant_id: str, user_id: str) -> str:
    return f"{user_pk(tenant_id, user_id)}#I"


def listing(tenant_id: str, user_id: str) -> tuple[str, dict[str, Any]]:
    """The `SET` clause that lists the user in its tenant's users index, and its values; set by
    every write of a summary or of the fact counts, removed by a delete (docs/architecture.md
    "Storage layout")."""
    clause = f"{USERS_INDEX_PARTITION_KEY} = :listed_tenant, {USERS_INDEX_SORT_KEY} = :listed_user"
    user, agent_id = split_scope(user_id)
    if agent_id is not None:  # an agent's scope is listed under its user, never among the tenant's users
        return clause, {":listed_tenant": agents_pk(tenant_id, user), ":listed_user": agent_id}
    return clause, {":listed_tenant": tenant_pk(tenant_id), ":listed_user": user_id}


def tenant_pk(tenant_id: str) -> str:
    return f"T#{tenant_id}"


def job_pk(tenant_id: str, job_id: str) -> str:
    return f"T#{tenant_id}#J#{job_id}"


def key(pk: str, sk: str) -> dict[str, Any]:
    return {PK: {"S": pk}, SK: {"S": sk}}


def generation_check(table_name: str, tenant_id: str, user_id: str, generation: int) -> dict[str, Any]:
    """The `ConditionCheck` that the user is still at `generation` (no delete since the request read it)."""
    condition = "attribute_not_exists(pk) OR #g = :gen" if generation == 0 else "#g = :gen"
    return {
        "ConditionCheck": {
            "TableName": table_name,
            "Key": key(user_pk(tenant_id, user_id), MEMORY_SK),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#g": "generation"},
            "ExpressionAttributeValues": values({":gen": generation}),
        }
    }


def values(plain: dict[str, Any]) -> dict[str, Any]:
    return {name: _serializer.serialize(value) for name, value in plain.items()}


def plain_item(raw: dict[str, Any]) -> dict[str, Any]:
    return {name: _deserializer.deserialize(value) for name, value in raw.items()}


def iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def expires_at(raw: dict[str, Any]) -> int | None:
    """The item's TTL, in epoch seconds (None: it does not expire)."""
    expires = raw.get(TTL, {}).get("N")
    return int(expires) if expires is not None else None


def is_condition_failure(error: ClientError) -> bool:
    code = error.response.get("Error", {}).get("Code")
    return code in {"ConditionalCheckFailedException", "TransactionCanceledException"}


def _only_conflicts(error: ClientError) -> bool:
    """Cancelled by concurrent transactions on the same items alone: nothing was written."""
    reasons = [r.get("Code") for r in error.response.get("CancellationReasons") or []]
    return "TransactionConflict" in reasons and all(
        r in (None, "None", "TransactionConflict") for r in reasons
    )


# A transaction that lost only to a concurrent one (another writer of the user's memory item) is
# sent again at once a few times, with jitter; DynamoDB's SDK does not retry these itself.
CONFLICT_RETRIES: Final = 3
CONFLICT_PAUSE_S: Final = 0.02


def _failed_conditions(error: ClientError) -> frozenset[int] | None:
    """The positions of the items whose condition failed; None when no condition did."""
    reasons = error.response.get("CancellationReasons") or []
    failed = frozenset(
        i for i, reason in enumerate(reasons) if reason.get("Code") == "ConditionalCheckFailed"
    )
    if failed:
        return failed
    return frozenset() if "ConditionalCheckFailed" in str(error) else None


class Table:
    """One DynamoDB table; `client` and `now` are injectable (the composition root, tests)."""

    def __init__(
        self,
        name: str,
        client: Callable[[], Any],
        now: Now = utc_now,
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self.name = name
        self.client = client
        self.now = now
        self._pause = pause

    def epoch(self) -> int:
        return int(self.now().timestamp())

    def transact(self, items: list[dict[str, Any]]) -> None:
        """TransactWriteItems; ConditionFailed (naming the items that failed) when a condition failed.
        One cancelled only by concurrent transactions is sent again up to CONFLICT_RETRIES times."""
        for attempt in range(CONFLICT_RETRIES + 1):
            try:
                self.client().transact_write_items(TransactItems=items)
                return
            except ClientError as error:
                if attempt == CONFLICT_RETRIES or not _only_conflicts(error):
                    self._raise_cancelled(error)
                self._pause(CONFLICT_PAUSE_S * (2**attempt) * random.uniform(0.5, 1.5))  # noqa: S311 - jitter

    @staticmethod
    def _raise_cancelled(error: ClientError) -> NoReturn:
        code = error.response.get("Error", {}).get("Code")
        failed = _failed_conditions(error) if code == "TransactionCanceledException" else None
        if failed is not None:
            raise ConditionFailed(str(error), failed) from error
        raise error

    def query_partition(
        self,
        pk: str,
        projection: str | None = None,
        sk_prefix: str | None = None,
        sk_from: str | None = None,
        sk_to: str | None = None,
        highest_first: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """The partition's items (under `sk_prefix`, from the sort key `sk_from` on (up to `sk_to`),
        or both), paged; in the order of their sort keys, the highest first if `highest_first`."""
        kwargs: dict[str, Any] = {
            "TableName": self.name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ConsistentRead": True,
        }
        if sk_prefix and sk_from:
            # The prefix's range from `sk_from` on: up to the key right after every key it begins.
            kwargs["KeyConditionExpression"] += " AND sk BETWEEN :from AND :to"
            kwargs["ExpressionAttributeValues"][":from"] = {"S": sk_from}
            kwargs["ExpressionAttributeValues"][":to"] = {"S": sk_prefix[:-1] + chr(ord(sk_prefix[-1]) + 1)}
        elif sk_prefix:
            kwargs["KeyConditionExpression"] += " AND begins_with(sk, :prefix)"
            kwargs["ExpressionAttributeValues"][":prefix"] = {"S": sk_prefix}
        elif sk_from and sk_to:
            kwargs["KeyConditionExpression"] += " AND sk BETWEEN :from AND :to"
            kwargs["ExpressionAttributeValues"][":from"] = {"S": sk_from}
            kwargs["ExpressionAttributeValues"][":to"] = {"S": sk_to}
        elif sk_from:
            kwargs["KeyConditionExpression"] += " AND sk >= :from"
            kwargs["ExpressionAttributeValues"][":from"] = {"S": sk_from}
        if projection:
            kwargs["ProjectionExpression"] = projection
            kwargs["ExpressionAttributeNames"] = {"#g": "generation"}
        if highest_first:
            kwargs["ScanIndexForward"] = False
        yield from self.query(kwargs)

    def newest(self, pk: str, sk_prefix: str, limit: int) -> list[dict[str, Any]]:
        """The `limit` items of the partition with the highest sort keys under `sk_prefix`, newest
        first (paged: large items may take more than one 1 MB page)."""
        request = {
            "TableName": self.name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":prefix": {"S": sk_prefix}},
            "ConsistentRead": True,
            "ScanIndexForward": False,
        }
        return list(self.query(request, limit))

    def query(self, request: dict[str, Any], limit: int | None = None) -> Iterator[dict[str, Any]]:
        """The items of the Query `request` (at most `limit`), page after page, each from where the
        last one ended. Paged by hand, not by `get_paginator("query")`: a paginator's first use loads
        botocore's paginator model, listing every service botocore ships to find it, about 8 ms of
        the read path's first request (README "Performance")."""
        client = self.client()
        read = 0
        while limit is None or read < limit:
            page = client.query(**request, **({} if limit is None else {"Limit": limit - read}))
            items = page.get("Items", [])
            read += len(items)
            yield from items
            if not page.get("LastEvaluatedKey"):
                return
            request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}

    def batch_get(self, keys: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """BatchGetItem (strongly consistent), unprocessed keys retried."""
        found: list[dict[str, Any]] = []
        for chunk in batched(keys, BATCH_GET_MAX):
            request: dict[str, Any] = {self.name: {"Keys": list(chunk), "ConsistentRead": True}}
            while request:
                response = self.client().batch_get_item(RequestItems=request)
                found += response.get("Responses", {}).get(self.name, [])
                request = response.get("UnprocessedKeys") or {}
        return found

    def batch_delete(self, keys: Sequence[dict[str, Any]]) -> None:
        for chunk in batched(keys, BATCH_WRITE_MAX):
            requests = [{"DeleteRequest": {"Key": item_key}} for item_key in chunk]
            while requests:
                response = self.client().batch_write_item(RequestItems={self.name: requests})
                requests = response.get("UnprocessedItems", {}).get(self.name, [])

    def expired(self, raw: dict[str, Any]) -> bool:
        # DynamoDB deletes TTL-expired items lazily (and moto never): filter them here.
        expires = expires_at(raw)
        return expires is not None and expires <= self.epoch()
