"""moto's state as records: what a request changed, how to put it back, and all of it at once.

Items and objects are recorded as their state once the request is done ("after images"): a
record says what the item or object is, not what was asked, so replaying one never depends on a
condition, an expression or a random id, and a failed or rolled-back write records the state it
left. SQS messages are recorded by `moto_sqs.py`. docs/operations.md "Local stack" says what is kept.
These hooks patch moto's Table.put_item and delete_item, DynamoDBBackend.update_item and S3Backend's
put_object and delete_object (through `moto_patching.replace`: a start fails if moto changed them).
"""

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.s3 import models as s3_models

from local_stack import moto_sqs
from local_stack.changes import Changes, current
from local_stack.journal import Record
from local_stack.moto_dynamodb import stored_item
from local_stack.moto_patching import replace


def _key_of(table: Any, attributes: Any) -> dict[str, Any]:
    # PartiQL hands in its own case-insensitive mappings: the journal wants plain JSON.
    names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
    return {name: dict(attributes[name]) for name in names if name in attributes}


def _touch(table: Any, key: dict[str, Any]) -> None:
    changes = current()
    if changes is not None:
        changes.touch_item(table, key)


def _putting_item(original: Callable[..., Any]) -> Callable[..., Any]:
    # Table.put_item: PutItem, BatchWriteItem, transactions and PartiQL all store items with it.
    def put_item(table: Any, item_attrs: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(item_attrs, Mapping):
            _touch(table, _key_of(table, item_attrs))
        return original(table, item_attrs, *args, **kwargs)

    return put_item


def _deleting_item(original: Callable[..., Any]) -> Callable[..., Any]:
    def delete_item(table: Any, hash_key: Any, range_key: Any) -> Any:
        key = {table.hash_key_attr: hash_key.to_json()}
        if table.range_key_attr and range_key is not None:
            key[table.range_key_attr] = range_key.to_json()
        _touch(table, key)
        return original(table, hash_key, range_key)

    return delete_item


def _updating_item(original: Callable[..., Any]) -> Callable[..., Any]:
    # UpdateItem changes an existing item in place, without Table.put_item.
    def update_item(backend: Any, table_name: str, key: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        table = backend.tables.get(table_name)
        if table is not None and isinstance(key, Mapping):
            _touch(table, _key_of(table, key))
        return original(backend, table_name, key, *args, **kwargs)

    return update_item


def _touching_object(original: Callable[..., Any]) -> Callable[..., Any]:
    # put_object covers copies and multipart uploads; delete_object covers DeleteObjects.
    def write(backend: Any, bucket_name: str, key_name: str, *args: Any, **kwargs: Any) -> Any:
        changes = current()
        if changes is not None:
            changes.touch_object(backend, bucket_name, key_name)
        return original(backend, bucket_name, key_name, *args, **kwargs)

    return write


def install() -> None:
    """Install the hooks once; they record only inside `changes.recording()`."""
    replace(Table, "put_item", ("self", "item_attrs"), _putting_item, by=__name__)
    replace(Table, "delete_item", ("self", "hash_key", "range_key"), _deleting_item, by=__name__)
    update = ("self", "table_name", "key")
    replace(dynamodb_models.DynamoDBBackend, "update_item", update, _updating_item, by=__name__)
    for name in ("put_object", "delete_object"):
        write = ("self", "bucket_name", "key_name")
        replace(s3_models.S3Backend, name, write, _touching_object, by=__name__)
    moto_sqs.install()


# --- after images ---------------------------------------------------------------------------------


def _item_image(table: Any, key: dict[str, Any]) -> Record | None:
    if table.hash_key_attr not in key:
        return None  # no such key: moto refused the request
    try:
        range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
        item = stored_item(table, DynamoType(key[table.hash_key_attr]), range_value)
    except (TypeError, AttributeError, KeyError, ValueError):
        return None
    attributes = None if item is None else item.to_json()["Attributes"]
    head = {"s": "dynamodb", "a": table.account_id, "r": table.region_name, "t": table.name}
    return {**head, "k": key, "i": attributes}


def _object_image(backend: Any, bucket_name: str, key_name: str) -> Record | None:
    bucket = backend.buckets.get(bucket_name)
    if bucket is None:
        return None
    head = {"s": "s3", "a": backend.account_id, "r": backend.region_name, "b": bucket_name, "k": key_name}
    key = bucket.keys.get(key_name)
    if not isinstance(key, s3_models.FakeKey):
        return {**head, "gone": True}  # deleted, or hidden by a delete marker
    return {**head, "v": key.value, "meta": dict(key.metadata)}


def records(changes: Changes) -> list[Record]:
    """The records of one request, read while no other request changes the same items."""
    found = [_item_image(*target) for target in changes.items.values()]
    found += [_object_image(*target) for target in changes.objects.values()]
    return [record for record in found if record is not None] + changes.records


# --- replay ---------------------------------------------------------------------------------------


def _apply_item(record: Record) -> bool:
    backend = dynamodb_models.dynamodb_backends[record["a"]][record["r"]]
    if record["t"] not in backend.tables:
        return False
    if record["i"] is None:
        backend.delete_item(record["t"], record["k"])
    else:
        backend.put_item(record["t"], record["i"])
    return True


def _apply_object(record: Record) -> bool:
    backend = s3_models.s3_backends[record["a"]][record["r"]]
    bucket = backend.buckets.get(record["b"])
    if bucket is None:
        return False
    if record["k"] in bucket.keys:
        bucket.keys.pop(record["k"])  # current objects only: older versions are not kept
    if not record.get("gone"):
        key = backend.put_object(record["b"], record["k"], record["v"], disable_notification=True)
        key.set_metadata(dict(record["meta"]))
    return True


@contextmanager
def _no_stream_records() -> Iterator[None]:
    """Putting the state back changes nothing: no table's stream records it (the events poller reads
    every stream from its start, and would publish the whole state again; local_stack/stream_source.py)."""
    shards = [
        (table, table.stream_shard)
        for _, _, backend in backends(dynamodb_models.dynamodb_backends)
        for table in list(backend.tables.values())
    ]
    for table, _ in shards:
        table.stream_shard = None
    try:
        yield
    finally:
        for table, shard in shards:
            table.stream_shard = shard


def replay(stream: Iterable[Record]) -> int:
    """Apply records in their order (SQS's in any order); how many were dropped, their resource gone.
    Items are put back without a stream record."""
    dropped = 0
    messages = moto_sqs.SqsReplay()
    with _no_stream_records():
        for record in stream:
            service = record.get("s")
            if service == "sqs":
                messages.add(record)
            elif not (_apply_item(record) if service == "dynamodb" else _apply_object(record)):
                dropped += 1
    return dropped + messages.place()


# --- everything -----------------------------------------------------------------------------------


def backends(service: Any) -> Iterator[tuple[str, str, Any]]:
    """(account, region, backend) of every backend of a moto service that holds something."""
    yield from service.iter_backends()


def _dump_items() -> Iterator[Record]:
    for account, region, backend in backends(dynamodb_models.dynamodb_backends):
        for name, table in list(backend.tables.items()):
            head = {"s": "dynamodb", "a": account, "r": region, "t": name}
            for item in table.all_items():
                yield {**head, "k": None, "i": item.to_json()["Attributes"]}


def _dump_objects() -> Iterator[Record]:
    for account, region, backend in backends(s3_models.s3_backends):
        for name, bucket in list(backend.buckets.items()):
            for key_name in list(bucket.keys):
                record = _object_image(backend, name, key_name)
                if record is not None and not record.get("gone"):
                    yield record | {"a": account, "r": region}


def dump() -> Iterator[Record]:
    """Every item, object and message, as records that `replay` puts back (a snapshot)."""
    yield from _dump_items()
    yield from _dump_objects()
    yield from moto_sqs.dump()
