"""Lambda's DynamoDB stream event source mapping for the events function, played against moto's stream.

One thread reads every shard of the memory table's stream and hands each batch of up to `BATCH_SIZE`
records to the events function as the deployed mapping does (infra/functions.py `_events_trigger`):
- only the records of items whose changes can be events (`event_item`: the mapping's filter on the
  sort key); Lambda drops the others before the function is invoked;
- as `{"Records": [...]}`, each record with its values in JSON and the stream's ARN as
  `eventSourceARN` (`events.dynamodb_stream_record`), a shard one batch at a time, in order;
- with `ReportBatchItemFailures`, as Lambda reads the answer: no (or an empty) `batchItemFailures`
  and the whole batch is done; failures, and the records before the one with the lowest failed
  sequence number are done, the shard read again from that one after a pause (`RETRY_DELAYS_S`);
  an unhandled error, or an `itemIdentifier` that names no record of the batch, fails the whole
  batch, and after an unhandled error the next attempt reads half as many records (Lambda's
  bisect);
- after `RETRY_ATTEMPTS` retries in a row the batch is given up: its description (shard, sequence
  numbers, stream; never its records) goes to the events DLQ, as Lambda's on-failure destination
  gets it, and an error line says so.

Where it reads: from the stream's start when the stack starts (the state a restart puts back is
replayed without stream records, `moto_state.py`, so the start is the first change served), then
after the last sequence number handled. An iterator that read nothing is not used again: the next
read takes a new one after that sequence number, so the poller finds a shard moto replaced by its id
(plain moto's transaction rollback puts back a copy of the table, stream shard included) and goes
on where it was. The stream is described again every `DESCRIBE_EVERY_S` for new shards. Between
reads that found nothing it waits `IDLE_WAIT_S`. What it has read is not kept across a restart
(docs/operations.md "Local stack").
"""

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hippocampus.contracts import names
from hippocampus.contracts.names import TABLE_SORT_KEY
from local_stack.events import dynamodb_stream_record
from local_stack.runtime import FunctionError

# The deployed mapping's settings, shared with infra/functions.py.
BATCH_SIZE = names.EVENTS_BATCH_SIZE
RETRY_ATTEMPTS = names.EVENTS_RETRY_ATTEMPTS
EVENT_SORT_KEYS = names.EVENT_SORT_KEYS
EVENT_SORT_KEY_PREFIXES = names.EVENT_SORT_KEY_PREFIXES
IDLE_WAIT_S = 0.5
# Lambda retries a stream's batch at once; locally, pauses growing to 5 s: about 40 s in all.
RETRY_DELAYS_S = tuple(min(0.5 * 2**attempt, 5.0) for attempt in range(RETRY_ATTEMPTS))
DESCRIBE_EVERY_S = 10.0
# How long a stop keeps handing over what the stream holds already.
STOP_DRAIN_S = 3.0
JOIN_GRACE_S = 5.0

log = logging.getLogger("local_stack.stream_source")

Invoke = Callable[[dict[str, Any]], Any]
DeadLetter = Callable[[dict[str, Any]], None]


def event_item(record: Mapping[str, Any]) -> bool:
    """Whether the mapping's filter lets a stream record through: a user's memory, a job, a deletion
    receipt or a record (by the item's sort key); facts, episodes, indexes and the rest are dropped."""
    sort_key = (record.get("dynamodb") or {}).get("Keys", {}).get(TABLE_SORT_KEY, {}).get("S", "")
    return sort_key in EVENT_SORT_KEYS or sort_key.startswith(EVENT_SORT_KEY_PREFIXES)


def first_failed(result: Any, sequence_numbers: Sequence[str]) -> int | None:
    """The index of the record Lambda reads the shard again from, given the function's answer to a
    batch; None: the whole batch succeeded."""
    if not isinstance(result, Mapping) or not result.get("batchItemFailures"):
        return None  # no (or an empty) failure list: the whole batch succeeded
    failures = result["batchItemFailures"]
    if not isinstance(failures, list):
        log.error("invalid batchItemFailures %r: the whole batch fails", failures)
        return 0
    found: list[int] = []
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, Mapping) else None
        if not identifier or identifier not in sequence_numbers:
            log.error("invalid itemIdentifier %r: the whole batch fails", identifier)
            return 0
        found.append(sequence_numbers.index(identifier))
    return min(found)  # records are in sequence order: the lowest sequence number


@dataclass
class _Shard:
    shard_id: str
    # Where the next iterator starts: (ShardIteratorType, SequenceNumber or None).
    position: tuple[str, str | None]
    iterator: str | None = None
    limit: int = BATCH_SIZE
    failures: int = 0  # failed attempts in a row at `position`
    retry_at: float = 0.0
    expected: int | None = field(default=None, repr=False)  # the next sequence number, once known


class StreamEventSource:
    """Feeds the table's stream to the events function until stopped."""

    def __init__(
        self,
        dynamodb: Any,
        streams: Any,
        table_name: str,
        region: str,
        invoke: Invoke,
        *,
        batch_size: int = BATCH_SIZE,
        idle_wait_s: float = IDLE_WAIT_S,
        retry_delays_s: Sequence[float] = RETRY_DELAYS_S,
        wanted: Callable[[Mapping[str, Any]], bool] | None = None,
        dead_letter: DeadLetter | None = None,
        function_arn: str = "",
    ) -> None:
        """`dynamodb`, `streams`: boto3 clients of DynamoDB and DynamoDB Streams (every shard is read
        from its start: module docstring). `retry_delays_s`: the pause
        before each retry of a failed batch, as many as there are retries. `wanted`: the mapping's
        filter (None: every record). `dead_letter`: where a given-up batch's description goes, and
        `function_arn` the function it names."""
        self._dynamodb = dynamodb
        self._streams = streams
        self._table_name = table_name
        self._region = region
        self._invoke = invoke
        self._batch_size = batch_size
        self._idle_wait_s = idle_wait_s
        self._retry_delays_s = tuple(retry_delays_s)
        self._wanted = wanted
        self._dead_letter = dead_letter
        self._function_arn = function_arn
        self._shards: dict[str, _Shard] = {}
        self._finished: set[str] = set()  # closed shards read to their end
        self.stream_arn = ""
        self._next_describe = 0.0
        self._stop = threading.Event()
        self._drain_until = 0.0
        self._thread = threading.Thread(target=self._run, name="stream-event-source", daemon=True)
        self.skipped = 0  # records given up on, or trimmed before they were read

    def start(self, thread: bool = True) -> None:
        """Find the stream and its shards (a table without a stream fails here), then read them on the
        thread (`thread` False: a test calls `poll_once` itself)."""
        self._describe()
        if thread:
            self._thread.start()

    def stop(self, drain_s: float = 0.0) -> None:
        """Read no more, after handing over, for at most `drain_s`, what the stream holds already;
        returns once the thread ended, or after the drain and a grace period (a batch in flight ends
        with the events function: stop it next, then `wait`)."""
        self._drain_until = time.monotonic() + drain_s
        self._stop.set()
        self.wait(drain_s + JOIN_GRACE_S)

    def wait(self, timeout_s: float = JOIN_GRACE_S) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout=timeout_s)

    # --- the loop ------------------------------------------------------------------------------

    def _run(self) -> None:
        while not (self._stop.is_set() and time.monotonic() >= self._drain_until):
            try:
                busy = self.poll_once()
            except (BotoCoreError, ClientError) as exc:
                busy = False
                if not self._stop.is_set():
                    log.warning("reading the table's stream failed: %s", exc)
                    self._next_describe = 0.0  # the stream or a shard may be gone: look again
            except Exception:
                busy = False
                log.exception("the stream event source failed")
            if not busy:
                if self._stop.is_set():
                    return  # drained: the stream holds nothing more to hand over
                self._stop.wait(self._idle_wait_s)

    def poll_once(self) -> bool:
        """One read of each shard that is due; whether any handed over records (the thread's loop,
        and a test's step)."""
        if time.monotonic() >= self._next_describe:
            self._describe()
        busy = False
        for shard in list(self._shards.values()):
            if shard.retry_at <= time.monotonic():
                busy = self._read(shard) or busy
        return busy

    def _describe(self) -> None:
        table = self._dynamodb.describe_table(TableName=self._table_name)["Table"]
        stream_arn = str(table.get("LatestStreamArn") or "")
        if not stream_arn:
            raise RuntimeError(f"the table {self._table_name} has no stream")
        first = not self.stream_arn
        if stream_arn != self.stream_arn:
            if not first:
                log.warning("the table's stream changed (%s): reading the new one from its start", stream_arn)
            self.stream_arn, self._shards, self._finished = stream_arn, {}, set()
        arguments: dict[str, Any] = {"StreamArn": stream_arn}
        while True:
            description = self._streams.describe_stream(**arguments)["StreamDescription"]
            for shard in description.get("Shards") or []:
                shard_id = str(shard["ShardId"])
                if shard_id not in self._shards and shard_id not in self._finished:
                    self._shards[shard_id] = _Shard(shard_id, ("TRIM_HORIZON", None), limit=self._batch_size)
            last = description.get("LastEvaluatedShardId")
            if not last:
                break
            arguments["ExclusiveStartShardId"] = last
        self._next_describe = time.monotonic() + DESCRIBE_EVERY_S

    def _read(self, shard: _Shard) -> bool:
        if shard.iterator is None:
            kind, sequence_number = shard.position
            where = {"SequenceNumber": sequence_number} if sequence_number else {}
            shard.iterator = self._streams.get_shard_iterator(
                StreamArn=self.stream_arn, ShardId=shard.shard_id, ShardIteratorType=kind, **where
            )["ShardIterator"]
        try:
            page = self._streams.get_records(ShardIterator=shard.iterator, Limit=shard.limit)
        except ClientError:
            shard.iterator = None  # expired or trimmed: a new one at the position next time
            raise
        records = list(page.get("Records") or [])
        next_iterator = page.get("NextShardIterator")
        if not records:
            shard.iterator = None  # a new one next time: it finds a shard moto replaced
            if next_iterator is None:  # a closed shard, read to its end
                self._finished.add(shard.shard_id)
                del self._shards[shard.shard_id]
            return False
        self._hand_over(shard, records, next_iterator)
        return True

    def _hand_over(self, shard: _Shard, records: list[dict[str, Any]], next_iterator: str | None) -> None:
        self._note_gap(shard, int(records[0]["dynamodb"]["SequenceNumber"]))
        last = str(records[-1]["dynamodb"]["SequenceNumber"])
        if self._wanted is not None:
            records = [record for record in records if self._wanted(record)]
        if not records:  # the filter dropped them all: nothing to invoke
            self._done(shard, last, next_iterator)
            return
        numbers = [str(record["dynamodb"]["SequenceNumber"]) for record in records]
        event = {"Records": [dynamodb_stream_record(r, self.stream_arn, self._region) for r in records]}
        unhandled = False
        try:
            result = self._invoke(event)
        except FunctionError:
            failed: int | None = 0  # the traceback is logged already
            unhandled = True
        else:
            failed = first_failed(result, numbers)
        if failed is None:
            self._done(shard, last, next_iterator)
            return
        shard.failures = 1 if failed > 0 else shard.failures + 1
        if shard.failures > len(self._retry_delays_s):
            self._give_up(shard, records[failed:], unhandled)
            self._done(shard, last, next_iterator)
            return
        delay = self._retry_delays_s[shard.failures - 1]
        log.info(
            "the events function failed %d of %d records; reading the stream again from %s in %.1f s",
            len(numbers) - failed,
            len(numbers),
            numbers[failed],
            delay,
        )
        shard.position = ("AT_SEQUENCE_NUMBER", numbers[failed])
        shard.expected = int(numbers[failed])
        shard.iterator = None
        shard.limit = max(1, (len(numbers) - failed) // 2) if unhandled else self._batch_size
        shard.retry_at = time.monotonic() + delay

    def _give_up(self, shard: _Shard, records: list[dict[str, Any]], unhandled: bool) -> None:
        """What Lambda does once a batch used its retries: its description to the on-failure destination."""
        self.skipped += len(records)
        first, last = records[0]["dynamodb"], records[-1]["dynamodb"]
        log.error(
            "the events function failed records %s to %s of the stream %d times: given up, no event for "
            "these %d changes%s",
            first["SequenceNumber"],
            last["SequenceNumber"],
            shard.failures,
            len(records),
            "; their description is on the events DLQ" if self._dead_letter else "",
        )
        if self._dead_letter is None:
            return
        description = {
            "requestContext": {
                "requestId": str(uuid.uuid4()),
                "functionArn": self._function_arn,
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": shard.failures,
            },
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"}
            | ({"functionError": "Unhandled"} if unhandled else {}),
            "version": "1.0",
            "timestamp": _iso(datetime.now(UTC)),
            "DDBStreamBatchInfo": {
                "shardId": shard.shard_id,
                "startSequenceNumber": str(first["SequenceNumber"]),
                "endSequenceNumber": str(last["SequenceNumber"]),
                "approximateArrivalOfFirstRecord": _iso(first.get("ApproximateCreationDateTime")),
                "approximateArrivalOfLastRecord": _iso(last.get("ApproximateCreationDateTime")),
                "batchSize": len(records),
                "streamArn": self.stream_arn,
            },
        }
        try:
            self._dead_letter(description)
        except Exception:
            log.exception("the description of a given-up batch could not be sent to the events DLQ")

    def _done(self, shard: _Shard, last: str, next_iterator: str | None) -> None:
        shard.position = ("AFTER_SEQUENCE_NUMBER", last)
        shard.expected = int(last) + 1
        shard.iterator = next_iterator
        shard.failures = 0
        shard.limit = self._batch_size
        shard.retry_at = 0.0

    def _note_gap(self, shard: _Shard, first: int) -> None:
        """Records trimmed before they were read (moto_streams.py keeps the newest ones) get no event. moto
        numbers a shard's records one after the other, so a gap is what was trimmed."""
        if shard.expected is not None and first > shard.expected:
            self.skipped += first - shard.expected
            log.error(
                "%d changes were trimmed from the stream before the events function read them: no event "
                "for them",
                first - shard.expected,
            )


def _iso(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return None if value is None else str(value)
