"""moto's DynamoDB stream in bounded memory (docs/architecture.md "Local stack").

moto 5.2 keeps every record of a table's stream for the life of the process (DynamoDB trims them
after 24 hours), each with the item's old and new images, and every shard iterator it ever handed out
(DynamoDB lets them expire after 15 minutes): the events poller's reads, a few a second even idle,
grew the stack's memory without end. Now a shard keeps its newest `KEPT_RECORDS` records, older ones
trimmed as DynamoDB trims a day-old record (the shard's first sequence number moves past them, and a
read from before them starts at the oldest kept), and the streams backend keeps its newest
`KEPT_ITERATORS` iterators. tests/integration/test_local_moto_streams.py shows moto still needs it.
"""

from collections.abc import Callable
from typing import Any

from moto.dynamodb.models.table import StreamShard
from moto.dynamodbstreams import models as streams_models

from local_stack.moto_patching import replace

# Far more than the events poller leaves unread (it reads within a second), unless the events
# function keeps failing meanwhile: then the oldest changes get no event (the poller logs it).
KEPT_RECORDS = 10_000
KEPT_ITERATORS = 1_000


def _trimmed(original: Callable[..., None]) -> Callable[..., None]:
    def add(shard: Any, old: Any, new: Any) -> None:
        original(shard, old, new)
        excess = len(shard.items) - KEPT_RECORDS
        if excess > 0:
            del shard.items[:excess]
            # moto numbers a record by its place in `items`, counted from the first sequence number.
            shard.starting_sequence_number += excess

    return add


def _from_the_oldest_kept(original: Callable[..., Any]) -> Callable[..., Any]:
    def get(shard: Any, start: int, quantity: int) -> Any:
        # moto fails (an assertion, a 500) on a sequence number before its first one.
        return original(shard, max(start, shard.starting_sequence_number), quantity)

    return get


def _newest_iterators(original: Callable[..., Any]) -> Callable[..., Any]:
    def handing_out(backend: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(backend, *args, **kwargs)
        iterators = backend.shard_iterators  # in the order handed out
        while len(iterators) > KEPT_ITERATORS:
            iterators.pop(next(iter(iterators)))
        return result

    return handing_out


def fix_moto_stream_memory() -> None:
    """Install once (stream requests run one at a time with DynamoDB's: `SerializedDynamoDB`)."""
    replace(StreamShard, "add", ("self", "old", "new"), _trimmed, by=__name__)
    replace(StreamShard, "get", ("self", "start", "quantity"), _from_the_oldest_kept, by=__name__)
    backend = streams_models.DynamoDBStreamsBackend
    iterator = ("self", "arn", "shard_id", "shard_iterator_type")
    replace(backend, "get_shard_iterator", iterator, _newest_iterators, by=__name__)
    replace(backend, "get_records", ("self", "iterator_arn", "limit"), _newest_iterators, by=__name__)
