"""Token budgets on the DynamoDB table (docs/architecture.md "Storage layout", "Token budgets").

- `T#<tenant>#USAGE` / `DAY#<yyyy-mm-dd>`: the tenant's LLM calls and tokens of one UTC day,
  added to by each condensation (`ADD`), kept USAGE_RETENTION_DAYS;
- `T#<tenant>#DEFERRED` / `<user>#<queued ms>#<place>#<job id>`: one parked turn (its queue
  message as JSON, and whether it was sent back to the queue);
- `DEFERRALS` / `T#<tenant>`: the tenants whose ledgers hold entries, with their count, kept in
  the same transactions as the entries, so the scheduled pass finds every parked turn.
"""

import contextlib
from collections.abc import Sequence
from datetime import date, datetime
from itertools import batched
from typing import Any, Final

from hippocampus.adapters.dynamodb_episodes import DynamoEpisodeStore
from hippocampus.adapters.dynamodb_items import decoded, decoded_all
from hippocampus.adapters.dynamodb_jobs import job_update
from hippocampus.adapters.dynamodb_table import DAY_S, Table, key, values
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

REGISTRY_PK: Final = "DEFERRALS"
# A deferral writes, per turn, its episode, its job and its entry; with the memory item and the
# registry, 32 turns fill a transaction's 100 items.
_TURNS_PER_TRANSACTION: Final = 32
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
        by_job = {episode.job_id: episode for episode in deferral.episodes}
        for chunk in batched(deferral.messages, _TURNS_PER_TRANSACTION):
            known = self._known_entries(chunk)
            new = [message for message in chunk if entry_sk(message) not in known]
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
                    *([self._registry_add(deferral.tenant_id, len(new))] if new else []),
                ]
            )

    def user_entries(self, tenant_id: str, user_id: str) -> list[DeferredEntry]:
        items = self._table.query_partition(ledger_pk(tenant_id), sk_prefix=f"{user_id}#")
        return _in_order(map(decoded, items))

    def tenants(self) -> list[str]:
        items = decoded_all(self._table.query_partition(REGISTRY_PK))
        return [item[SK].removeprefix("T#") for item in items if item.get("entries", 0) > 0]

    def entries(self, tenant_id: str) -> list[DeferredEntry]:
        return _in_order(map(decoded, self._table.query_partition(ledger_pk(tenant_id))))

    def count(self, tenant_id: str) -> int:
        raw = (
            self._table.client()
            .get_item(TableName=self._table.name, Key=_registry_key(tenant_id), ConsistentRead=True)
            .get("Item")
        )
        return int(decoded(raw).get("entries", 0)) if raw else 0

    def mark_released(self, tenant_id: str, messages: Sequence[CondenseMessage]) -> None:
        now = self._table.now()
        for message in messages:
            # A job done meanwhile (a late duplicate condensed it) is left: the next pass retires it.
            with contextlib.suppress(ConditionFailed):
                self._table.transact(
                    [
                        self._entry_put(message, released=True),
                        job_update(self._table, tenant_id, message.job_id, "queued", None, None, now),
                    ]
                )

    def retire(self, message: CondenseMessage) -> None:
        self._table.transact(
            [
                {
                    "Delete": {
                        "TableName": self._table.name,
                        "Key": key(ledger_pk(message.tenant_id), entry_sk(message)),
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
                self._registry_add(message.tenant_id, -1),
            ]
        )

    def erase_user(self, tenant_id: str, user_id: str) -> int:
        entries = self.user_entries(tenant_id, user_id)
        for entry in entries:
            with contextlib.suppress(ConditionFailed):  # gone meanwhile (condensed): nothing to do
                self.retire(entry.message)
        return len(entries)

    def _known_entries(self, messages: Sequence[CondenseMessage]) -> set[str]:
        tenant_id = messages[0].tenant_id
        found = self._table.batch_get([key(ledger_pk(tenant_id), entry_sk(m)) for m in messages])
        return {decoded(item)[SK] for item in found}

    def _entry_put(self, message: CondenseMessage, released: bool = False) -> dict[str, Any]:
        item = {
            PK: ledger_pk(message.tenant_id),
            SK: entry_sk(message),
            "message": message.model_dump_json(),
            "released": released,
        }
        return {"Put": {"TableName": self._table.name, "Item": values(item)}}

    def _registry_add(self, tenant_id: str, entries: int) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self._table.name,
                "Key": _registry_key(tenant_id),
                "UpdateExpression": "ADD entries :n",
                "ExpressionAttributeValues": values({":n": entries}),
            }
        }


def _in_order(items: Any) -> list[DeferredEntry]:
    entries = [
        DeferredEntry(CondenseMessage.model_validate_json(item["message"]), bool(item.get("released")))
        for item in items
    ]
    return sorted(entries, key=lambda entry: accepted_order(entry.message))
