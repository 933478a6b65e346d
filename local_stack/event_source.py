"""Lambda's SQS event source mapping for the condenser, played against moto's FIFO queue.

One receiver long-polls the queue (batches of up to `CONDENSER_BATCH_SIZE`, every system
attribute), builds the SQS event Lambda would build, and hands the batch to a free condenser
instance (up to the function's concurrency; FIFO keeps a message group locked while its
batch is in flight, so one user's items are still processed in order). With
`ReportBatchItemFailures`:
- records not named in `batchItemFailures` are deleted;
- named records stay on the queue and come back after a short visibility timeout (AWS waits
  for the queue's visibility timeout; locally a failed condensation is retried within 10 s);
- an unhandled error, or a response naming an unknown or empty `itemIdentifier`, fails the
  whole batch, as Lambda does;
- the queue's redrive policy (moto implements it) moves a message to the DLQ once it has
  been received `maxReceiveCount` times.
"""

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hippocampus.contracts.names import CONDENSER_BATCH_SIZE
from local_stack.events import sqs_record
from local_stack.foreground import Foreground
from local_stack.runtime import FunctionError

RETRY_VISIBILITY_S = 2
WAIT_TIME_S = 1

log = logging.getLogger("local_stack.event_source")

Invoke = Callable[[dict[str, Any]], Any]


def failed_message_ids(result: Any, message_ids: Sequence[str]) -> set[str]:
    """The ids Lambda treats as failed, given the function's response to a batch."""
    if not isinstance(result, Mapping) or not result.get("batchItemFailures"):
        return set()  # no (or an empty) failure list: the whole batch succeeded
    failures = result["batchItemFailures"]
    if not isinstance(failures, list):
        log.error("invalid batchItemFailures %r: the whole batch fails", failures)
        return set(message_ids)
    failed: set[str] = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, Mapping) else None
        if not identifier or identifier not in message_ids:
            log.error("invalid itemIdentifier %r: the whole batch fails", identifier)
            return set(message_ids)
        failed.add(identifier)
    return failed


class SqsEventSource:
    """Feeds the FIFO queue to the condenser until stopped."""

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        queue_arn: str,
        region: str,
        invoke: Invoke,
        concurrency: int,
        retry_visibility_s: int = RETRY_VISIBILITY_S,
        foreground: Foreground | None = None,
    ) -> None:
        """`foreground`: the callers' requests a batch lets go first (local_stack/foreground.py)."""
        self._sqs = sqs
        self._queue_url = queue_url
        self._queue_arn = queue_arn
        self._region = region
        self._invoke = invoke
        self._retry_visibility_s = retry_visibility_s
        self._foreground = foreground
        self._slots = threading.Semaphore(concurrency)
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="condenser")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sqs-event-source", daemon=True)
        self.batches = 0

    def start(self) -> None:
        self._thread.start()

    def stop_polling(self) -> None:
        """Receive no more batches (the ones in flight go on)."""
        self._stop.set()
        self._thread.join(timeout=WAIT_TIME_S + 5)

    def wait(self) -> None:
        """Wait for the batches in flight (stop the condenser first for a quick stop)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._slots.acquire(timeout=0.5):
                continue
            try:
                messages = self._receive()
            except Exception:
                self._slots.release()
                raise
            if not messages:
                self._slots.release()
                continue
            self._pool.submit(self._process, messages)

    def _receive(self) -> list[dict[str, Any]]:
        try:
            response = self._sqs.receive_message(
                QueueUrl=self._queue_url,
                MaxNumberOfMessages=CONDENSER_BATCH_SIZE,
                WaitTimeSeconds=WAIT_TIME_S,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
        except (BotoCoreError, ClientError) as exc:
            if not self._stop.is_set():
                log.warning("receiving from the queue failed: %s", exc)
                self._stop.wait(1)
            return []
        return list(response.get("Messages") or [])

    def _process(self, messages: list[dict[str, Any]]) -> None:
        try:
            self.batches += 1
            event = {"Records": [sqs_record(m, self._queue_arn, self._region) for m in messages]}
            ids = [m["MessageId"] for m in messages]
            if self._foreground is not None:
                self._foreground.wait_quiet()
            try:
                result = self._invoke(event)
            except FunctionError:
                failed = set(ids)  # an unhandled error fails the whole batch (traceback already logged)
            else:
                failed = failed_message_ids(result, ids)
            done = [m for m in messages if m["MessageId"] not in failed]
            retry = [m for m in messages if m["MessageId"] in failed]
            if retry:
                log.info(
                    "condenser reported %d of %d records failed; retrying in %d s",
                    len(retry),
                    len(messages),
                    self._retry_visibility_s,
                )
            self._delete(done)
            self._release(retry)
        except Exception:
            log.exception("the event source failed to process a batch")
        finally:
            self._slots.release()

    def _delete(self, messages: list[dict[str, Any]]) -> None:
        if not messages:
            return
        response = self._sqs.delete_message_batch(
            QueueUrl=self._queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )
        for failure in response.get("Failed") or []:
            log.warning("could not delete message: %s", failure)

    def _release(self, messages: list[dict[str, Any]]) -> None:
        if not messages:
            return
        response = self._sqs.change_message_visibility_batch(
            QueueUrl=self._queue_url,
            Entries=[
                {
                    "Id": str(i),
                    "ReceiptHandle": m["ReceiptHandle"],
                    "VisibilityTimeout": self._retry_visibility_s,
                }
                for i, m in enumerate(messages)
            ],
        )
        for failure in response.get("Failed") or []:
            log.warning("could not change the visibility of a message: %s", failure)
