"""The fact commits on the DynamoDB table (MemoryStore.commit_facts, remove_fact): each one
TransactWriteItems of the memory item's counts and every entry's job, job reference and fact (or
the check of it), conditional on the user's generation, the counts and each fact as the request
read it (docs/architecture.md "Fact limits").

On the memory item: `fact_count` and `fact_bytes` (the counts the limits are checked on),
`fact_revision` (bumped by every commit and removal: a rebase of the counts is conditional on it)
and `facts_settling_until` (a request of several commits may still be writing until then: no
rebase before). On each fact: `counted_bytes`, what it counts for.
"""

import json
from collections.abc import Callable
from typing import Any

from hippocampus.adapters.dynamodb_index import job_ref_put
from hippocampus.adapters.dynamodb_job_creation import job_put
from hippocampus.adapters.dynamodb_table import (
    FACT_BYTES,
    FACT_COUNT,
    FACT_PREFIX,
    FACT_REVISION,
    FACT_SIZE,
    FACTS_SETTLING_UNTIL,
    MEMORY_SK,
    Table,
    iso,
    key,
    listing,
    user_pk,
    values,
)
from hippocampus.contracts.errors import ConditionFailed, UserDeleted
from hippocampus.contracts.fact_ports import (
    MAX_FACT_ENTRIES,
    Absent,
    FactCommit,
    FactEntry,
    FactRemoval,
    Present,
)
from hippocampus.contracts.models import Fact
from hippocampus.contracts.names import FACT_SETTLE_S
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL


class FactCommits:
    def __init__(
        self,
        table: Table,
        ttl_s: int | None,
        job_retention_s: int,
        read_generation: Callable[[str, str], int],
    ) -> None:
        self._table = table
        self._ttl_s = ttl_s
        self._job_retention_s = job_retention_s
        self._read_generation = read_generation

    def commit(self, commit: FactCommit) -> None:
        if len(commit.entries) > MAX_FACT_ENTRIES:
            raise ValueError(f"a fact commit holds at most {MAX_FACT_ENTRIES} entries")
        pk = user_pk(commit.tenant_id, commit.user_id)
        writes = [self._counts_update(commit)]
        owners: list[int | None] = [None]  # the entry of each write whose condition is the entry's
        for position, entry in enumerate(commit.entries):
            writes += [
                job_put(self._table, entry.job, commit.generation, self._job_retention_s),
                job_ref_put(self._table, entry.job, commit.generation, self._job_retention_s),
            ]
            owners += [None, None]
            fact_write = self._fact_write(pk, commit.generation, entry)
            if fact_write is not None:
                writes.append(fact_write)
                owners.append(position)
        try:
            self._table.transact(writes)
        except ConditionFailed as failure:
            if (
                0 in failure.failed
                and self._read_generation(commit.tenant_id, commit.user_id) != commit.generation
            ):
                raise UserDeleted("the user was deleted while the request ran", failure.failed) from failure
            changed = frozenset(owner for i in failure.failed if (owner := owners[i]) is not None)
            raise ConditionFailed(str(failure), changed) from failure

    def remove(self, removal: FactRemoval) -> None:
        names = {"#g": "generation", "#c": FACT_COUNT, "#r": FACT_REVISION}
        plain: dict[str, Any] = {":gen": removal.generation, ":one": 1}
        if removal.counts is not None:
            update = "ADD #c :minus_facts, #b :minus_bytes, #r :one"
            condition = f"{_current(removal.generation)} AND attribute_exists(#c)"
            names["#b"] = FACT_BYTES
            plain |= {":minus_facts": -removal.counts.facts, ":minus_bytes": -removal.counts.bytes}
        else:  # not counted yet: the revision tells a rebase that the facts changed
            update = "SET #g = if_not_exists(#g, :gen) ADD #r :one"
            condition = f"{_current(removal.generation)} AND attribute_not_exists(#c)"
        pk = user_pk(removal.tenant_id, removal.user_id)
        memory = {
            "Update": {
                "TableName": self._table.name,
                "Key": key(pk, MEMORY_SK),
                "UpdateExpression": update,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values(plain),
            }
        }
        expected, fact_names, fact_values = _expectation(
            removal.expect, removal.generation, self._table.epoch()
        )
        delete = {
            "Delete": {
                "TableName": self._table.name,
                "Key": key(pk, FACT_PREFIX + removal.fact_id),
                "ConditionExpression": expected,
                "ExpressionAttributeNames": fact_names,
                **({"ExpressionAttributeValues": values(fact_values)} if fact_values else {}),
            }
        }
        self._table.transact([memory, delete])

    def _counts_update(self, commit: FactCommit) -> dict[str, Any]:
        """The memory item's part of a commit: the counts changed (or rebased), the revision bumped,
        on the user's generation and, for a change that adds, within the limits."""
        names = {"#g": "generation", "#c": FACT_COUNT, "#b": FACT_BYTES, "#r": FACT_REVISION}
        plain: dict[str, Any] = {":gen": commit.generation, ":one": 1}
        sets: list[str] = []
        condition = _current(commit.generation)
        if commit.rebase_from is None:
            adds = ["#c :change_facts", "#b :change_bytes", "#r :one"]
            plain |= {":change_facts": commit.change.facts, ":change_bytes": commit.change.bytes}
            condition += " AND attribute_exists(#c)"
            if commit.limits is not None:
                condition += " AND #c <= :room_facts AND #b <= :room_bytes"
                plain[":room_facts"] = commit.limits.facts - commit.change.facts
                plain[":room_bytes"] = commit.limits.bytes - commit.change.bytes
        else:
            adds = ["#r :one"]
            sets += ["#c = :facts", "#b = :bytes", "#g = if_not_exists(#g, :gen)"]
            plain |= {
                ":facts": commit.change.facts,
                ":bytes": commit.change.bytes,
                ":now": self._table.epoch(),
            }
            names["#s"] = FACTS_SETTLING_UNTIL
            if commit.rebase_from == 0:
                condition += " AND attribute_not_exists(#r)"
            else:
                condition += " AND #r = :revision"
                plain[":revision"] = commit.rebase_from
            condition += " AND (attribute_not_exists(#s) OR #s <= :now)"
        listed, listed_values = listing(commit.tenant_id, commit.user_id)
        sets.append(listed)
        plain |= listed_values
        if commit.more_follow:
            names["#s"] = FACTS_SETTLING_UNTIL
            sets.append("#s = :until")
            plain[":until"] = self._table.epoch() + FACT_SETTLE_S
        update = ("SET " + ", ".join(sets) + " " if sets else "") + "ADD " + ", ".join(adds)
        return {
            "Update": {
                "TableName": self._table.name,
                "Key": key(user_pk(commit.tenant_id, commit.user_id), MEMORY_SK),
                "UpdateExpression": update,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values(plain),
            }
        }

    def _fact_write(self, pk: str, generation: int, entry: FactEntry) -> dict[str, Any] | None:
        """The entry's fact `Put`, or the `ConditionCheck` of its expectation, or nothing."""
        if entry.fact is None and entry.expect is None:
            return None
        conditional: dict[str, Any] = {}
        if entry.expect is not None:
            expected, names, plain = _expectation(entry.expect, generation, self._table.epoch())
            conditional = {"ConditionExpression": expected, "ExpressionAttributeNames": names}
            if plain:
                conditional["ExpressionAttributeValues"] = values(plain)
        if entry.fact is None:
            item_key = key(pk, FACT_PREFIX + entry.fact_id)
            return {"ConditionCheck": {"TableName": self._table.name, "Key": item_key, **conditional}}
        item = values(self._fact_item(pk, entry.fact, entry.size, generation))
        return {"Put": {"TableName": self._table.name, "Item": item, **conditional}}

    def _fact_item(self, pk: str, fact: Fact, size: int, generation: int) -> dict[str, Any]:
        item: dict[str, Any] = {
            PK: pk,
            SK: FACT_PREFIX + fact.id,
            "id": fact.id,
            "text": fact.text,
            # JSON text: metadata may hold floats, which DynamoDB maps cannot take as they are.
            "metadata": json.dumps(fact.metadata, separators=(",", ":")),
            "additional_metadata": json.dumps(fact.additional_metadata, separators=(",", ":")),
            "is_markdown": fact.is_markdown,
            "updated_at": iso(fact.updated_at),
            "generation": generation,
            FACT_SIZE: size,
        }
        if fact.title is not None:
            item["title"] = fact.title
        if self._ttl_s:
            item[TTL] = self._table.epoch() + self._ttl_s
        return item


def _current(generation: int) -> str:
    """The memory item is at `generation` (an item without one, or none at all, is at 0)."""
    return "#g = :gen" if generation else "(attribute_not_exists(#g) OR #g = :gen)"


def _expectation(
    expect: Present | Absent, generation: int, now: int
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The condition on a fact's item that `expect` holds, with its names and values."""
    if isinstance(expect, Absent):
        # Gone, expired, or of a generation a delete is still erasing (a fact without one is at 0).
        names = {"#e": TTL}
        plain: dict[str, Any] = {":now": now}
        condition = "attribute_not_exists(pk) OR #e <= :now"
        if generation:
            condition += " OR attribute_not_exists(#g) OR #g < :gen"
            names["#g"] = "generation"
            plain[":gen"] = generation
        return condition, names, plain
    names = {"#g": "generation", "#n": FACT_SIZE}
    plain = {":gen": generation}
    size = "attribute_not_exists(#n)" if expect.size is None else "#n = :size"
    if expect.size is not None:
        plain[":size"] = expect.size
    return f"attribute_exists(pk) AND {_current(generation)} AND {size}", names, plain
