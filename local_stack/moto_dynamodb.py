"""moto's DynamoDB at a per-request cost that does not grow with the table (docs/architecture.md "Local stack").

moto 5.2 has two costs that are O(table size) per request, which made the local stack's memory
(and its latency) grow with the data it holds:
- `transact_write_items` deep-copies every table it touches, for its rollback: at a few thousand
  items, every transaction copies megabytes, and concurrent ones ran out of memory;
- a table query sorts every item of the table before keeping the partition's.

Since `SerializedDynamoDB` runs one DynamoDB request at a time, a transaction's rollback needs only
the items it targets: they are snapshotted before it runs and put back if it fails. The stream records
its writes added (moto applies each write, then checks the next one's condition) are taken back with
them: a stream holds only committed changes (docs/architecture.md "Events"). moto's rollback put back
a copy of the whole table, stream shard included, which left a reader's shard iterator on a shard no
longer written to; the table now stays the same object. A query on the table's own key looks at its
partition only. All keep moto's answers as they were; tests/integration/test_local_moto.py shows moto
still needs them.
"""

import copy
import inspect
import types
from collections.abc import Callable
from typing import Any

from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table

from local_stack.moto_patching import replace, require

_Target = tuple[Table, DynamoType, DynamoType | None]


def _deepcopy_but_tables(value: Any, memo: dict[int, Any] | None = None) -> Any:
    # moto's module deep-copies a Table only for the transaction rollback, which is done per item here.
    return value if isinstance(value, Table) else copy.deepcopy(value, memo)


def _targets(backend: Any, transact_items: list[dict[str, Any]]) -> list[_Target]:
    """The (table, hash, range) of every item the transaction may write; unknown tables and bad keys
    are skipped (moto refuses them before writing anything for that operation)."""
    targets: list[_Target] = []
    for entry in transact_items:
        for op_type, op in entry.items():
            table = backend.tables.get(op.get("TableName")) if isinstance(op, dict) else None
            if table is None:
                continue
            attrs = op.get("Item") if op_type == "Put" else op.get("Key")
            if not isinstance(attrs, dict) or table.hash_key_attr not in attrs:
                continue
            try:
                hash_value = DynamoType(attrs[table.hash_key_attr])
                range_attr = table.range_key_attr
                range_value = DynamoType(attrs[range_attr]) if range_attr and range_attr in attrs else None
            except (TypeError, AttributeError, IndexError, KeyError, ValueError):
                continue
            if range_attr and range_value is None:
                continue
            targets.append((table, hash_value, range_value))
    return targets


def stored_item(table: Table, hash_value: DynamoType, range_value: DynamoType | None) -> Any:
    # Not `table.get_item`: on a range-key table, its lookup inserts an empty partition.
    partition = table.items.get(hash_value)
    if range_value is None:
        return partition
    return partition.get(range_value) if partition is not None else None


def _restore(table: Table, hash_value: DynamoType, range_value: DynamoType | None, item: Any) -> None:
    if range_value is None:
        if item is None:
            table.items.pop(hash_value, None)
        else:
            table.items[hash_value] = item
        return
    partition = table.items.setdefault(hash_value, {})
    if item is None:
        partition.pop(range_value, None)
        if not partition:
            table.items.pop(hash_value, None)
    else:
        partition[range_value] = item


def _stream_lengths(targets: list[_Target]) -> list[tuple[Any, int]]:
    """The stream shard of each table the transaction writes, with the number of records it holds."""
    shards = {id(table.stream_shard): table.stream_shard for table, _, _ in targets if table.stream_shard}
    return [(shard, len(shard.items)) for shard in shards.values()]


def _item_rollback(original: Callable[..., None]) -> Callable[..., None]:
    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        targets = _targets(self, transact_items)
        snapshot = [(target, copy.deepcopy(stored_item(*target))) for target in targets]
        streams = _stream_lengths(targets)
        try:
            original(self, transact_items)
        except BaseException:
            # Newest first: an item named twice (moto then refuses the transaction) gets its first state.
            for (table, hash_value, range_value), item in reversed(snapshot):
                _restore(table, hash_value, range_value, item)
            for shard, length in streams:
                del shard.items[length:]  # no stream record of what did not commit
            raise

    return transact_write_items


def _partition_query(original: Callable[..., Any]) -> Any:
    parameters = inspect.signature(original)

    def query(self: Table, *args: Any, **kwargs: Any) -> Any:
        asked = parameters.bind(self, *args, **kwargs).arguments  # moto passes index_name by position
        hash_key = asked.get("hash_key")
        if asked.get("index_name") or hash_key is None:
            return original(self, *args, **kwargs)
        # moto keeps the items of `all_items()` in the partition, then sorts them by range key: give it
        # the partition only (the instance attribute shadows the method for this one request).
        table: Any = self
        partition = table.items.get(hash_key)
        items = [] if partition is None else list(partition.values()) if table.range_key_attr else [partition]
        table.all_items = lambda: items
        try:
            return original(self, *args, **kwargs)
        finally:
            del table.all_items

    return query


# The parameters of moto's `Table.query` up to the one the partition query reads by name.
_QUERY: tuple[str, ...] = ("self", "hash_key", "range_comparison", "range_objs", "limit")
_QUERY += ("exclusive_start_key", "scan_index_forward", "projection_expressions", "index_name")


def fix_moto_dynamodb_costs() -> None:
    """Install both fixes once (they rely on `SerializedDynamoDB`: one DynamoDB request at a time)."""
    # moto's module deep-copies through its `copy` name: the module, replaced by one skipping tables.
    replace(
        dynamodb_models,
        "copy",
        None,
        lambda _copy: types.SimpleNamespace(deepcopy=_deepcopy_but_tables),
        by=__name__,
    )
    backend_class = dynamodb_models.DynamoDBBackend
    replace(backend_class, "transact_write_items", ("self", "transact_items"), _item_rollback, by=__name__)
    require(Table, "all_items", ("self",), by=__name__)
    replace(Table, "query", _QUERY, _partition_query, by=__name__)
