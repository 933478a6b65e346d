"""A user's PII placeholder numbers in the user's partition (docs/architecture.md "PII masking").

- `PII#KEY`: the user's digest key (32 random bytes) and the last number given to each kind
  (`n_EMAIL`, `n_PHONE`, ...);
- `PII#V#<digest>`: one value's kind and number, under HMAC-SHA256(key, "<kind>:<value>").

The value itself is never stored. Every item carries the generation it was written at: a user
delete erases them with the rest of the partition (adapters/dynamodb_memory.py), and an item of an
older generation that a delete has yet to reach counts as absent, so the new life numbers afresh.

Numbers are handed out in one transaction that checks the user's generation (no delete since the
caller read it), moves each kind's counter from the value read, and creates each value's item only
if absent: two writers numbering at once (the condenser and an ingest of facts) cannot give one
number to two values, nor two numbers to one value; the loser reads again and retries.
"""

import hashlib
import hmac
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import batched
from typing import Any, Final

from hippocampus.adapters.dynamodb_items import decoded, read_generation
from hippocampus.adapters.dynamodb_table import (
    PII_PREFIX,
    Table,
    generation_check,
    key,
    user_pk,
    values,
)
from hippocampus.contracts.errors import ConditionFailed
from hippocampus.contracts.names import TABLE_PARTITION_KEY as PK
from hippocampus.contracts.names import TABLE_SORT_KEY as SK
from hippocampus.contracts.pii import PII_KINDS, PiiKind, PiiValue
from hippocampus.contracts.scopes import user_of

KEY_SK: Final = PII_PREFIX + "KEY"
VALUE_PREFIX: Final = PII_PREFIX + "V#"
KEY_BYTES: Final = 32
# Readings and transactions before a numbering gives up (the condensation is then retried by SQS).
NUMBERING_ATTEMPTS: Final = 5
# A transaction holds at most 100 items: the generation check, the key item and the new values.
_NEW_VALUES_PER_TRANSACTION: Final = 98


@dataclass(frozen=True)
class _UserKey:
    secret: bytes
    generation: int
    counters: dict[PiiKind, int]
    stored: bool  # False: made now, not yet written

    def digest(self, value: PiiValue) -> str:
        message = f"{value.kind}:{value.value}".encode()
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()


def _counter(kind: PiiKind) -> str:
    return f"n_{kind}"


_COUNTERS: Final = {_counter(kind): kind for kind in PII_KINDS}


class DynamoPlaceholderStore:
    def __init__(
        self, table: Table, new_secret: Callable[[], bytes] = lambda: secrets.token_bytes(KEY_BYTES)
    ):
        self._table = table
        self._new_secret = new_secret

    def numbers(
        self, tenant_id: str, user_id: str, generation: int, values: Sequence[PiiValue]
    ) -> dict[PiiValue, int]:
        wanted = list(dict.fromkeys(values))
        if user_of(user_id) != user_id:
            # An agent's scope numbers with its user's key, in the user's life: a value has one
            # placeholder in every scope a read of the agent merges (docs/architecture.md "PII masking").
            user_id = user_of(user_id)
            generation = read_generation(self._table, tenant_id, user_id)
        pk = user_pk(tenant_id, user_id)
        for _ in range(NUMBERING_ATTEMPTS):
            user_key = self._read_key(pk, generation) or _UserKey(
                self._new_secret(), generation, {}, stored=False
            )
            known = self._known(pk, user_key, wanted)
            new = [value for value in wanted if value not in known]
            if not new:
                return known
            try:
                return known | self._number(tenant_id, user_id, user_key, new)
            except ConditionFailed as lost:
                if 0 in lost.failed:  # the generation check: the user was deleted since
                    raise
        raise ConditionFailed("the user's placeholders kept changing while they were numbered")

    def known_numbers(self, tenant_id: str, user_id: str, values: Sequence[PiiValue]) -> dict[PiiValue, int]:
        pk = user_pk(tenant_id, user_of(user_id))
        user_key = self._read_key(pk, None)
        return self._known(pk, user_key, list(dict.fromkeys(values))) if user_key else {}

    def _read_key(self, pk: str, generation: int | None) -> _UserKey | None:
        """The user's key item; None when absent or of an older generation than `generation`.
        ConditionFailed when it is of a newer one: the user was forgotten since `generation` was
        read, and the old life's values must not be numbered in the new one."""
        raw = (
            self._table.client()
            .get_item(TableName=self._table.name, Key=key(pk, KEY_SK), ConsistentRead=True)
            .get("Item")
        )
        if not raw:
            return None
        item = decoded(raw)
        if generation is not None and item["generation"] < generation:
            return None
        if generation is not None and item["generation"] > generation:
            raise ConditionFailed("the user was forgotten since its generation was read", frozenset({0}))
        counters = {kind: item[name] for name, kind in _COUNTERS.items() if name in item}
        return _UserKey(item["secret"], item["generation"], counters, stored=True)

    def _known(self, pk: str, user_key: _UserKey, wanted: list[PiiValue]) -> dict[PiiValue, int]:
        if not user_key.stored or not wanted:
            return {}
        by_digest = {user_key.digest(value): value for value in wanted}
        found = self._table.batch_get([key(pk, VALUE_PREFIX + digest) for digest in by_digest])
        known: dict[PiiValue, int] = {}
        for item in map(decoded, found):
            if item["generation"] == user_key.generation:
                known[by_digest[item[SK][len(VALUE_PREFIX) :]]] = item["number"]
        return known

    def _number(
        self, tenant_id: str, user_id: str, user_key: _UserKey, new: list[PiiValue]
    ) -> dict[PiiValue, int]:
        """Number `new` after the last number of each kind, one transaction per chunk."""
        numbered: dict[PiiValue, int] = {}
        previous = user_key  # the key item as the next transaction expects to find it
        for chunk in batched(new, _NEW_VALUES_PER_TRANSACTION):
            counters = dict(previous.counters)
            given: dict[PiiValue, int] = {}
            for value in chunk:
                counters[value.kind] = counters.get(value.kind, 0) + 1
                given[value] = counters[value.kind]
            self._table.transact(
                [
                    generation_check(self._table.name, tenant_id, user_id, user_key.generation),
                    self._key_write(user_pk(tenant_id, user_id), previous, counters),
                    *(self._value_put(user_pk(tenant_id, user_id), previous, v, n) for v, n in given.items()),
                ]
            )
            numbered |= given
            previous = replace(previous, counters=counters, stored=True)
        return numbered

    def _key_write(self, pk: str, previous: _UserKey, counters: dict[PiiKind, int]) -> dict[str, Any]:
        """The key item with the new counters: created (over one of an older generation), or
        updated only if its counters are still those read."""
        if not previous.stored:
            item = {
                PK: pk,
                SK: KEY_SK,
                "secret": previous.secret,
                "generation": previous.generation,
                **{_counter(kind): number for kind, number in counters.items()},
            }
            return self._put_unless_this_life(item, previous.generation)
        names: dict[str, str] = {"#g": "generation"}
        plain: dict[str, Any] = {":g": previous.generation}
        sets, conditions = [], ["#g = :g"]
        for index, (kind, number) in enumerate(sorted(counters.items())):
            names[f"#c{index}"] = _counter(kind)
            plain[f":new{index}"] = number
            sets.append(f"#c{index} = :new{index}")
            old = previous.counters.get(kind, 0)
            if old:
                plain[f":old{index}"] = old
                conditions.append(f"#c{index} = :old{index}")
            else:
                conditions.append(f"attribute_not_exists(#c{index})")
        return {
            "Update": {
                "TableName": self._table.name,
                "Key": key(pk, KEY_SK),
                "UpdateExpression": "SET " + ", ".join(sets),
                "ConditionExpression": " AND ".join(conditions),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values(plain),
            }
        }

    def _value_put(self, pk: str, user_key: _UserKey, value: PiiValue, number: int) -> dict[str, Any]:
        item = {
            PK: pk,
            SK: VALUE_PREFIX + user_key.digest(value),
            "kind": value.kind,
            "number": number,
            "generation": user_key.generation,
        }
        return self._put_unless_this_life(item, user_key.generation)

    def _put_unless_this_life(self, item: dict[str, Any], generation: int) -> dict[str, Any]:
        """A Put that fails when the item exists for this `generation` (another writer was first);
        one of an older generation is the old life's, which a delete has yet to erase: replaced."""
        return {
            "Put": {
                "TableName": self._table.name,
                "Item": values(item),
                "ConditionExpression": "attribute_not_exists(pk) OR #g < :g",
                "ExpressionAttributeNames": {"#g": "generation"},
                "ExpressionAttributeValues": values({":g": generation}),
            }
        }
