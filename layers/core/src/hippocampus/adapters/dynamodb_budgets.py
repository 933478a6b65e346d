"""Token budgets on the DynamoDB table (docs/architecture.md "Storage layout", "Token budgets").

- `T#<tenant>#USAGE` / `DAY#<yyyy-mm-dd>`: the tenant's LLM calls and tokens of one UTC day,
  added to by each condensation (`ADD`), kept USAGE_RETENTION_DAYS;
- `T#<tenant>#DEFERRED` / `<user>#<queued ms>#<place>#<job id>`: one parked turn (its queue
  message as JSON, and whether it was sent back to the queue);
- `DEFERRALS` / `T#<tenant>`: every tenant that ever parked a turn, written before its first
  entry, so the scheduled pass finds every parked turn.
"""

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any, Final

from hippocampus.adapters.dynamodb_episodes import DynamoEpisodeStore
from hippocampus.adapters.dynamodb_items import decoded, decoded_all
from hippocampus.adapters.dynamodb_jobs import job_update
from hippocampus.adapters.dynamodb_table import DAY_S, JOB_SK, Table, iso, job_pk, key, values
from hippocampus.contracts.budgets import (
    USAGE_RETENTION_DAYS,
    DailyUsage,
    Deferral,
    DeferredEntry,
    accepted_order,
    budget_exhausted,
)
from hippocampus.contracts.errors import ConditionFailed
from hippocampus.contracts.models import CondenseMessage
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.recall import Episode

REGISTRY_PK: Final = "DEFERRALS"
# A deferral writes, per turn, its episode, its job and its entry; with the memory item, 33 turns fill
# a transaction's 100 items. Its size stays under the 4 MB a transaction holds, with room for the
# attribute names and types the JSON sizes leave out.
_TURNS_PER_TRANSACTION: Final = 33
_BYTES_PER_TRANSACTION: Final = 3_000_000
_USAGE_FIELDS: Final = ("calls", "prompt_tokens", "completion_tokens")


def usage_pk(tenant_id: str) -> str:
    return f"T#{tenant_id}#USAGE"


def ledger_pk(tenant_id: str) -> str:
    return f"T#{tenant_id}#DEFERRED"


def entry_sk(message: CondenseMessage) -> str:
    queued_ms = int(message.queued_at.timestamp() * 1000)
    return f"{message.user_id}#{queued_ms:013d}#{message.raw_index:04d}#{message.job_id}"


def _registry_key(tenant_id: str) -> dict[str, Any]:
    return key(REGISTRY_PK, f"T#{tenant_id}")


class DynamoUsageStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def add_usage(self, tenant_id: str, day: date, usage: DailyUsage) -> None:
        expires = int(datetime(day.year, day.month, day.day).timestamp()) + USAGE_RETENTION_DAYS * DAY_S
        self._table.client().update_item(
            TableName=self._table.name,
            Key=key(usage_pk(tenant_id), f"DAY#{day.isoformat()}"),
            UpdateExpression="ADD calls :calls, prompt_tokens :prompt, completion_tokens :completion "
            f"SET {TTL} = :expires",
            ExpressionAttributeValues=values(
                {
                    ":calls": usage.calls,
                    ":prompt": usage.prompt_tokens,
                    ":completion": usage.completion_tokens,
                    ":expires": expires,
                }
            ),
        )

    def usage(self, tenant_id: str, day: date) -> DailyUsage:
        raw = (
            self._table.client()
            .get_item(
                TableName=self._table.name,
                Key=key(usage_pk(tenant_id), f"DAY#{day.isoformat()}"),
                ConsistentRead=True,
            )
            .get("Item")
        )
        item = decoded(raw) if raw else {}
        return DailyUsage(*(item.get(name, 0) for name in _USAGE_FIELDS))


class DynamoDeferralStore:
    def __init__(self, table: Table, episodes: DynamoEpisodeStore) -> None:
        self._table = table
        self._episodes = episodes

    def defer(self, deferral: Deferral) -> None:
        # The tenant is registered first, on its own (a registry item in every park transaction
        # would make concurrent parks of one tenant conflict): an entry is never unregistered.
        self._table.client().put_item(
            TableName=self._table.name, Item=values({PK: REGISTRY_PK, SK: f"T#{deferral.tenant_id}"})
        )
        by_job = {episode.job_id: episode for episode in deferral.episodes}
        for chunk in _transactions(deferral.messages, by_job):
            now = self._table.now()
            self._table.transact(
                [
                    *self._episodes.counted_puts(
                        deferral.tenant_id,
                        deferral.user_id,
                        deferral.generation,
                        [by_job[message.job_id] for message in chunk],
                    ),
                    *(
                        job_update(
                            self._table, m.tenant_id, m.job_id, "deferred", budget_exhausted(), None, now
                        )
                        for m in chunk
                    ),
                    *(self._entry_put(message) for message in chunk),
                ]
            )

    def user_entries(self, tenant_id: str, user_id: str) -> list[DeferredEntry]:
        items = self._table.query_partition(ledger_pk(tenant_id), sk_prefix=f"{user_id}#")
        # The prefix `alice#` also holds the entries of alice's agents' scopes (`alice#A#…`): this
        # scope's alone.
        return [entry for entry in _in_order(map(decoded, items)) if entry.message.user_id == user_id]

    def tenants(self) -> list[str]:
        items = decoded_all(self._table.query_partition(REGISTRY_PK))
        return [item[SK].removeprefix("T#") for item in items]

    def entries(self, tenant_id: str) -> list[DeferredEntry]:
        return _in_order(map(decoded, self._table.query_partition(ledger_pk(tenant_id))))

    def count(self, tenant_id: str) -> int:
        request = {
            "TableName": self._table.name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": values({":pk": ledger_pk(tenant_id)}),
            "Select": "COUNT",
        }
        counted = 0
        while True:
            page = self._table.client().query(**request)
            counted += int(page.get("Count", 0))
            if not page.get("LastEvaluatedKey"):
                return counted
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def mark_released(
        self, tenant_id: str, entries: Sequence[DeferredEntry], at: datetime
    ) -> list[CondenseMessage]:
        marked: list[CondenseMessage] = []
        for entry in entries:
            message = entry.message.model_copy(update={"released_at": at})
            # Only as read: not parked again since (released), nor sent again by another pass.
            before = {":read": entry.message.model_dump_json(), ":released": entry.released}
            was = "deferred" if not entry.released else "queued"
            try:
                self._table.transact(
                    [
                        {
                            "Update": {
                                "TableName": self._table.name,
                                "Key": key(ledger_pk(tenant_id), entry_sk(entry.message)),
                                "UpdateExpression": "SET message = :message, released = :true",
                                "ConditionExpression": "message = :read AND released = :released",
                                "ExpressionAttributeValues": values(
                                    {**before, ":message": message.model_dump_json(), ":true": True}
                                ),
                            }
                        },
                        _job_requeued(self._table, tenant_id, entry.message.job_id, was),
                    ]
                )
            except ConditionFailed:
                continue
            marked.append(message)
        return marked

    def retire(self, message: CondenseMessage) -> None:
        self._table.client().delete_item(
            TableName=self._table.name, Key=key(ledger_pk(message.tenant_id), entry_sk(message))
        )

    def erase_user(self, tenant_id: str, user_id: str, generation: int) -> int:
        older = [e for e in self.user_entries(tenant_id, user_id) if e.message.generation < generation]
        self._table.batch_delete([key(ledger_pk(tenant_id), entry_sk(e.message)) for e in older])
        return len(older)

    def _entry_put(self, message: CondenseMessage) -> dict[str, Any]:
        item = {
            PK: ledger_pk(message.tenant_id),
            SK: entry_sk(message),
            "message": message.model_dump_json(),
            "released": False,
        }
        return {"Put": {"TableName": self._table.name, "Item": values(item)}}


def _job_requeued(table: Table, tenant_id: str, job_id: str, was: str) -> dict[str, Any]:
    """The job back to `queued`, only from the status its entry says it has (`deferred`, or `queued`
    when a lost message is sent again)."""
    return {
        "Update": {
            "TableName": table.name,
            "Key": key(job_pk(tenant_id, job_id), JOB_SK),
            "UpdateExpression": "SET #s = :queued, updated_at = :at REMOVE #e",
            "ConditionExpression": "#s = :was",
            "ExpressionAttributeNames": {"#s": "status", "#e": "error"},
            "ExpressionAttributeValues": values({":queued": "queued", ":was": was, ":at": iso(table.now())}),
        }
    }


def _transactions(
    messages: Sequence[CondenseMessage], episodes: dict[str, Episode]
) -> list[list[CondenseMessage]]:
    """The messages in chunks whose transaction fits DynamoDB's limits: 100 items (3 per turn, and
    the memory item) and 4 MB (the episodes are nearly all of it)."""
    chunks: list[list[CondenseMessage]] = []
    size = 0
    for message in messages:
        episode = episodes[message.job_id]
        bytes_of = len(episode.model_dump_json().encode()) + len(message.model_dump_json().encode())
        if (
            not chunks
            or len(chunks[-1]) == _TURNS_PER_TRANSACTION
            or size + bytes_of > _BYTES_PER_TRANSACTION
        ):
            chunks.append([])
            size = 0
        chunks[-1].append(message)
        size += bytes_of
    return chunks


def _in_order(items: Any) -> list[DeferredEntry]:
    entries = [
        DeferredEntry(CondenseMessage.model_validate_json(item["message"]), bool(item.get("released")))
        for item in items
    ]
    return sorted(entries, key=lambda entry: accepted_order(entry.message))
