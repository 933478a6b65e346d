"""MemoryStore on the DynamoDB table: the summary item, the facts (and their counts) and the
tombstone of each user."""

from collections.abc import Collection
from itertools import batched
from typing import Any, Final

from hippocampus.adapters.dynamodb_episodes import episode_put, episode_sk
from hippocampus.adapters.dynamodb_facts import FactCommits
from hippocampus.adapters.dynamodb_index import job_ref_put
from hippocampus.adapters.dynamodb_items import (
    Item,
    current,
    decoded,
    decoded_all,
    generation_of,
    read_generation,
    with_prefix,
)
from hippocampus.adapters.dynamodb_job_creation import job_put
from hippocampus.adapters.dynamodb_jobs import job_update
from hippocampus.adapters.dynamodb_memory_items import fact_fields, memory_and_fact_items, memory_state
from hippocampus.adapters.dynamodb_records import record_put, record_rewrite, record_sk
from hippocampus.adapters.dynamodb_table import (
    DAY_S,
    EPISODE_COUNT,
    EPISODE_PREFIX,
    EPISODES_REVISION,
    EPISODES_WRITTEN,
    FACT_BYTES,
    FACT_COUNT,
    FACT_PREFIX,
    FACT_REVISION,
    FACT_SIZE,
    FACTS_SETTLING_UNTIL,
    MEMORY_SK,
    PII_PREFIX,
    RECORD_PREFIX,
    Table,
    generation_check,
    iso,
    key,
    listing,
    tenant_pk,
    user_pk,
    values,
)
from hippocampus.adapters.vector_codec import VECTOR_MODEL_ATTRIBUTE
from hippocampus.contracts.fact_ports import FactCommit, FactCounts, FactLedger, FactRemoval, StoredFact
from hippocampus.contracts.memory_state import MemoryState
from hippocampus.contracts.models import Fact
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.names import TABLE_TTL_ATTRIBUTE as TTL
from hippocampus.contracts.names import USERS_INDEX_NAME, USERS_INDEX_PARTITION_KEY, USERS_INDEX_SORT_KEY
from hippocampus.contracts.ports import MemoryWrite
from hippocampus.contracts.receipts import EpisodeErasure, MemoryErasure, VectorsErased
from hippocampus.contracts.records import EpisodeForget

# DynamoDB's TransactWriteItems takes at most 100 writes.
TRANSACTION_MAX_ITEMS: Final = 100


class DynamoMemoryStore:
    def __init__(
        self, table: Table, memory_ttl_days: int | None = None, job_retention_days: int = 30
    ) -> None:
        self._table = table
        self._memory_ttl_s = memory_ttl_days * DAY_S if memory_ttl_days else None
        self._job_retention_s = job_retention_days * DAY_S
        self._facts = FactCommits(table, self._memory_ttl_s, self._job_retention_s, self.read_generation)

    def read_memory(self, tenant_id: str, user_id: str, with_facts: bool) -> tuple[MemoryState, list[Fact]]:
        pk = user_pk(tenant_id, user_id)
        if not with_facts:
            return self.memory_state(self._get_memory_item(pk)), []
        state, facts = memory_and_fact_items(self._table, pk)
        return state, [fact_of(item) for item in facts]

    def _current_facts(self, items: list[Item], generation: int) -> list[Item]:
        return current(with_prefix(items, FACT_PREFIX), generation, self._table.epoch())

    def read_generation(self, tenant_id: str, user_id: str) -> int:
        return read_generation(self._table, tenant_id, user_id)

    def write_memory(self, write: MemoryWrite) -> None:
        now = self._table.now()
        memory_update = self._memory_update(write, len(write.episodes))
        # The ledger: each applied job turns `completed` atomically with the version that applied it.
        ledger = [
            job_update(
                self._table, write.tenant_id, job_id, "completed", None, write.expected_version + 1, now
            )
            for job_id in write.completed_job_ids
        ]
        episodes = [
            episode_put(
                self._table, write.tenant_id, write.user_id, write.generation, episode, self._job_retention_s
            )
            for episode in write.episodes
        ]
        place = (self._table, write.tenant_id, write.user_id, write.generation)
        records = [record_put(*place, change, self._memory_ttl_s) for change in write.records]
        self._table.transact([memory_update, *ledger, *episodes, *records])

    def forget_episode(self, forget: EpisodeForget) -> EpisodeErasure:
        """One transaction: the memory's next version (the summary rebuilt, the episode count down,
        conditional on the version and generation read), the forget's job stored `completed` at it,
        the episode items and the records it alone taught deleted, the others rewritten while they
        are as read. Past DynamoDB's 100 writes, the record changes go first in transactions of their
        own, each checking the generation; the episode goes with the last, so a retry after a partial
        failure finds it still there and plans again from what was done."""
        write = MemoryWrite(
            forget.tenant_id,
            forget.user_id,
            forget.expected_version,
            forget.generation,
            forget.memory,
            forget.word_count,
            forget.updated_at,
            [forget.job.job_id],
        )
        pk = user_pk(forget.tenant_id, forget.user_id)
        # What is there and which hold a vector, for the receipt: a transaction's Delete returns
        # nothing (a record deleted by itself meanwhile is its own receipt's, not this one's).
        episode_keys = [key(pk, episode_sk(e.place)) for e in forget.episodes]
        record_keys = [key(pk, record_sk(r.id)) for r in forget.deleted_records]
        found = {item[SK]: item for item in decoded_all(self._table.batch_get(episode_keys + record_keys))}
        with_vectors = {sk for sk, item in found.items() if VECTOR_MODEL_ATTRIBUTE in item}
        job = [
            job_put(self._table, forget.job, forget.generation, self._job_retention_s),
            job_ref_put(self._table, forget.job, forget.generation, self._job_retention_s),
        ]
        last = [
            self._memory_update(write, -len(forget.episodes)),
            *job,
            *(
                {"Delete": {"TableName": self._table.name, "Key": key(pk, episode_sk(e.place))}}
                for e in forget.episodes
            ),
        ]
        changes = [
            *(
                {"Delete": {"TableName": self._table.name, "Key": key(pk, record_sk(r.id))}}
                for r in forget.deleted_records
            ),
            *(
                record_rewrite(self._table, forget.tenant_id, forget.user_id, r)
                for r in forget.rewritten_records
            ),
        ]
        room = TRANSACTION_MAX_ITEMS - len(last)
        head, tail = changes[: max(0, len(changes) - room)], changes[max(0, len(changes) - room) :]
        check = generation_check(self._table.name, forget.tenant_id, forget.user_id, forget.generation)
        for chunk in batched(head, TRANSACTION_MAX_ITEMS - 1):
            self._table.transact([check, *chunk])
        self._table.transact([*last, *tail])
        vectors = VectorsErased(
            episodes=sum(k[SK]["S"] in with_vectors for k in episode_keys),
            records=sum(k[SK]["S"] in with_vectors for k in record_keys),
        )
        return EpisodeErasure(records=sum(k[SK]["S"] in found for k in record_keys), vectors=vectors)

    def _memory_update(self, write: MemoryWrite, episode_change: int) -> dict[str, Any]:
        """The conditional `Update` of the memory item to the version `write` makes."""
        names = {"#v": "version", "#g": "generation", "#m": "memory"}
        plain: dict[str, Any] = {
            ":expected": write.expected_version,
            ":gen": write.generation,
            ":new": write.expected_version + 1,
            ":words": write.word_count,
            ":at": iso(write.updated_at),
            ":jobs": list(write.completed_job_ids),
        }
        listed, listed_values = listing(write.tenant_id, write.user_id)
        update = f"SET #v = :new, #g = :gen, word_count = :words, updated_at = :at, job_ids = :jobs, {listed}"
        plain |= listed_values
        if write.memory is not None:
            update += ", #m = :memory"
            plain[":memory"] = write.memory
        if self._memory_ttl_s:
            update += f", {TTL} = :ttl"
            plain[":ttl"] = self._table.epoch() + self._memory_ttl_s
        if episode_change:  # counted, so the condenser trims only a user over the cap (and recall's
            # copy of the episodes is read again when the count no longer adds up)
            update += f" ADD {EPISODE_COUNT} :episodes"
            plain[":episodes"] = episode_change
            # What a copy of the episodes checks itself against (adapters/episode_cache.py).
            if episode_change > 0:
                update += f", {EPISODES_WRITTEN} :episodes"
            else:  # an episode forgotten: a copy of the episodes is read whole again
                update += f", {EPISODES_REVISION} :one"
                plain[":one"] = 1
        if write.memory is None:  # a summary rebuilt from no records: none, as for a new user
            update += " REMOVE #m"
        # On the version counter as read: a delete keeps it, and so does an expired memory DynamoDB
        # has not removed yet, so the next version is always one no earlier read has seen.
        condition = "(#v = :expected AND #g = :gen)"
        if write.expected_version == 0:
            # An absent counter is 0 (an item may hold only the generation so far).
            condition = "(attribute_not_exists(#v) AND #g = :gen) OR " + condition
            if write.generation == 0:
                condition = "attribute_not_exists(pk) OR " + condition
        return {
            "Update": {
                "TableName": self._table.name,
                "Key": key(user_pk(write.tenant_id, write.user_id), MEMORY_SK),
                "UpdateExpression": update,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values(plain),
            }
        }

    # --- facts: counted on the memory item, written without a lock (docs/architecture.md "Fact limits")

    def read_facts(self, tenant_id: str, user_id: str, fact_ids: Collection[str] | None = None) -> FactLedger:
        pk = user_pk(tenant_id, user_id)
        if fact_ids is None:
            # The memory item first: a fact committed after this read bumps the revision it holds.
            memory = self._get_memory_item(pk)
            items = decoded_all(self._table.query_partition(pk, sk_prefix=FACT_PREFIX))
        else:  # the memory item and the facts named, whatever else the user holds
            keys = [key(pk, MEMORY_SK)] + [key(pk, FACT_PREFIX + fact_id) for fact_id in set(fact_ids)]
            items = decoded_all(self._table.batch_get(keys))
            memory = next((item for item in items if item[SK] == MEMORY_SK), None)
        state = self.memory_state(memory)
        facts = {
            item["id"]: StoredFact(fact_of(item), item.get(FACT_SIZE), VECTOR_MODEL_ATTRIBUTE in item)
            for item in self._current_facts(items, state.generation)
        }
        memory = memory or {}
        counts = None
        if FACT_COUNT in memory:
            counts = FactCounts(memory[FACT_COUNT], memory.get(FACT_BYTES, 0))
        settling = memory.get(FACTS_SETTLING_UNTIL, 0) > self._table.epoch()
        revision = memory.get(FACT_REVISION, 0)
        return FactLedger(
            state.generation, state.version, dict(sorted(facts.items())), counts, revision, settling
        )

    def commit_facts(self, commit: FactCommit) -> None:
        self._facts.commit(commit)

    def remove_fact(self, removal: FactRemoval) -> None:
        self._facts.remove(removal)

    def erase_user(self, tenant_id: str, user_id: str) -> MemoryErasure:
        pk = user_pk(tenant_id, user_id)
        # The tombstone first: from here on, every queued item of the old generation is skipped.
        # The version counter stays: the new life's versions go on after the old one's.
        result = self._table.client().update_item(
            TableName=self._table.name,
            Key=key(pk, MEMORY_SK),
            UpdateExpression="SET #g = if_not_exists(#g, :zero) + :one, "
            f"word_count = :zero REMOVE #m, updated_at, job_ids, {EPISODE_COUNT}, {EPISODES_REVISION}, {EPISODES_WRITTEN}, {TTL}, "
            # The facts' counts go too: the next fact write counts the new life's facts.
            f"{FACT_COUNT}, {FACT_BYTES}, {FACT_REVISION}, {FACTS_SETTLING_UNTIL}, "
            # Off the tenant's list of users until something is stored again.
            f"{USERS_INDEX_PARTITION_KEY}, {USERS_INDEX_SORT_KEY}",
            ExpressionAttributeNames={"#m": "memory", "#g": "generation"},
            ExpressionAttributeValues=values({":zero": 0, ":one": 1}),
            ReturnValues="ALL_OLD",  # what the tombstone replaced: whether a summary was erased
        )
        before = decoded(result.get("Attributes") or {})
        generation = generation_of(before) + 1
        # Facts and episodes written after the tombstone carry the new generation and stay.
        projection = f"pk, sk, #g, {VECTOR_MODEL_ATTRIBUTE}"
        older = [
            item
            for item in decoded_all(self._table.query_partition(pk, projection=projection))
            if item[SK].startswith((FACT_PREFIX, EPISODE_PREFIX, RECORD_PREFIX, PII_PREFIX))
            and generation_of(item) < generation
        ]
        self._table.batch_delete([key(item[PK], item[SK]) for item in older])

        def erased(prefix: str, vectors: bool = False) -> int:
            kind = [item for item in older if item[SK].startswith(prefix)]
            return sum(VECTOR_MODEL_ATTRIBUTE in item for item in kind) if vectors else len(kind)

        return MemoryErasure(
            generation=generation,
            summary=int("memory" in before),
            facts=erased(FACT_PREFIX),
            episodes=erased(EPISODE_PREFIX),
            records=erased(RECORD_PREFIX),
            vectors=VectorsErased(
                facts=erased(FACT_PREFIX, vectors=True),
                episodes=erased(EPISODE_PREFIX, vectors=True),
                records=erased(RECORD_PREFIX, vectors=True),
            ),
            placeholders=erased(PII_PREFIX),
        )

    def list_users(self, tenant_id: str, limit: int, after: str | None) -> tuple[list[str], bool]:
        request: dict[str, Any] = {
            "TableName": self._table.name,
            "IndexName": USERS_INDEX_NAME,
            "KeyConditionExpression": f"{USERS_INDEX_PARTITION_KEY} = :tenant",
            "ExpressionAttributeValues": values({":tenant": tenant_pk(tenant_id)}),
        }
        if after is not None:
            request["KeyConditionExpression"] += f" AND {USERS_INDEX_SORT_KEY} > :after"
            request["ExpressionAttributeValues"] |= values({":after": after})
        found = [decoded(raw)[USERS_INDEX_SORT_KEY] for raw in self._table.query(request, limit + 1)]
        return found[:limit], len(found) > limit

    def _get_memory_item(self, pk: str) -> Item | None:
        raw = (
            self._table.client()
            .get_item(TableName=self._table.name, Key=key(pk, MEMORY_SK), ConsistentRead=True)
            .get("Item")
        )
        return decoded(raw) if raw else None

    def memory_state(self, item: Item | None) -> MemoryState:
        return memory_state(item, self._table.epoch())


def fact_of(item: Item) -> Fact:
    return Fact(**fact_fields(item))
