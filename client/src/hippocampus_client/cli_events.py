"""`hippocampus events`: print the change events of a queue subscribed to the bus, one line each
(client/README.md "events"; docs/api.md "Events").

    hippocampus events --follow                  # the local stack's queue, hippocampus-dev-events
    hippocampus --json events                    # what is there, one event's JSON a line, then exit
    hippocampus events --follow --queue-url https://sqs.eu-west-1.amazonaws.com/123456789012/my-events

It receives the queue's messages, prints each event and then deletes it: a follower (two followers
share the events between them, each printing its own). Without --follow it stops at the first
receive that finds nothing. The local stack serves SQS's API on its own port (`--local`, or a
plain-http `--endpoint`), so the local queue is found by its name there; a deployment's bus has no
queue of its own, so a deployment needs `--queue-url` (a queue the user subscribed to the bus), read
with the environment's AWS credentials. Ctrl-C and SIGTERM stop it cleanly: after the event being
printed, or at once while it waits (a receive cut short leaves its messages on the queue, visible
again after the queue's visibility timeout).
"""

import json
import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

import click

from .aws import new_session, region_of
from .cli_output import count, note
from .cli_settings import LOCAL_ENDPOINT, LOCAL_EVENTS_QUEUE, CliState, pass_state
from .errors import (
    ConnectionFailedError,
    HippocampusError,
    NotFoundError,
    RequestTimeoutError,
    TransportError,
    api_error,
)
from .invoke import LOCAL_REGION

# SQS's longest long poll: the fewest requests while nothing happens.
FOLLOW_WAIT_S = 20
# Without --follow: long enough that SQS looks at every server (a short poll samples a few).
ONCE_WAIT_S = 1
BATCH = 10  # SQS's most messages per receive
DEPLOYMENT_HINT = (
    'a deployment\'s bus has no queue of its own: subscribe one to it (client/README.md "events") '
    "and pass --queue-url URL"
)


@dataclass(frozen=True)
class Source:
    """Where the events are: the queue (None: found by its name on the local stack), and the endpoint."""

    queue_url: str | None
    endpoint_url: str | None  # None: AWS's own for the region
    region: str | None
    local: bool

    def describe(self) -> str:
        return self.queue_url or f"{LOCAL_EVENTS_QUEUE} on {self.endpoint_url}"


class _Interrupted(BaseException):
    """A stop signal arrived while the follower waited for messages (a BaseException, as
    KeyboardInterrupt is: no `except Exception` on the way keeps it)."""


@click.command()
@click.option("--follow", "-f", is_flag=True, help="Keep printing events as they come, until Ctrl-C.")
@click.option(
    "--queue-url",
    metavar="URL",
    help="The SQS queue subscribed to the bus (default: the local stack's hippocampus-dev-events).",
)
@pass_state
def events(state: CliState, follow: bool, queue_url: str | None) -> None:
    """Print the change events on the queue, one line each (the events themselves, one JSON document a
    line, with --json), and delete what was printed (docs/api.md "Events").

    \b
    hippocampus events --follow
    hippocampus --json events --follow --queue-url https://sqs.eu-west-1.amazonaws.com/123456789012/my-events
    """
    source = _source(state, queue_url)
    follower = Follower(source, state.timeout)
    try:
        with _stop_signals(follower):
            follower.run(follow, state.as_json)
    finally:
        follower.close()


def _source(state: CliState, queue_url: str | None) -> Source:
    if queue_url:
        parts = urlsplit(queue_url)
        if parts.scheme not in ("http", "https") or not parts.netloc or not parts.path.strip("/"):
            raise click.BadParameter(f"{queue_url!r} is not a queue URL", param_hint="--queue-url")
        if parts.scheme == "http":  # never AWS: a local stack's (or moto's) queue
            return Source(queue_url, f"http://{parts.netloc}", state.region or LOCAL_REGION, local=True)
        return Source(queue_url, None, state.region or _queue_region(parts.hostname or ""), local=False)
    if state.stack:
        raise click.UsageError(f"--stack names a deployment: {DEPLOYMENT_HINT}")
    endpoint = state.local_endpoint()
    if endpoint is None and state.endpoint:
        raise click.UsageError(f"{state.endpoint} is a deployment: {DEPLOYMENT_HINT}")
    return Source(None, (endpoint or LOCAL_ENDPOINT).rstrip("/"), state.region or LOCAL_REGION, local=True)


def _queue_region(host: str) -> str | None:
    """`sqs.eu-west-1.amazonaws.com` and `eu-west-1.queue.amazonaws.com`: the region in the host."""
    labels = host.split(".")
    if len(labels) >= 4 and labels[0] == "sqs":
        return labels[1]
    if len(labels) >= 4 and labels[1] == "queue":
        return labels[0]
    return None


@contextmanager
def _stop_signals(follower: "Follower") -> Iterator[None]:
    """Ctrl-C and SIGTERM stop the follower, even where SIGINT came ignored (a parent that ignores it)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.getsignal(number) for number in stops}
    for number in stops:
        signal.signal(number, follower.on_signal)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


class Follower:
    """Receives, prints and deletes, until the queue is empty (or forever with `follow`) or stopped."""

    def __init__(self, source: Source, timeout: float) -> None:
        self.source = source
        self.stopped = False
        self._waiting = False
        self._timeout = timeout
        self._client: Any = None
        self._queue_url = source.queue_url

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopped = True
        if self._waiting:
            raise _Interrupted  # out of the receive's wait; nothing of it was printed

    def run(self, follow: bool, as_json: bool) -> None:
        wait_s = FOLLOW_WAIT_S if follow else ONCE_WAIT_S
        try:
            while not self.stopped:
                messages = self._receive(wait_s)
                if not messages and not follow:
                    return
                for message in messages:
                    self._print(message, as_json)
                self._delete(messages)  # what was printed, and what held no event
        except _Interrupted:
            return

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # --- SQS ---------------------------------------------------------------------------------------

    def _sqs(self) -> Any:
        if self._client is None:
            from botocore.config import Config

            session = new_session()
            if self.source.local:
                session.set_credentials("local", "local")  # no signature is checked locally
            region = self.source.region or region_of(None, None, session)
            config = Config(
                connect_timeout=min(self._timeout, 10),
                read_timeout=max(self._timeout, FOLLOW_WAIT_S + 10),
                retries={"mode": "standard", "max_attempts": 3},
            )
            self._client = session.create_client(
                "sqs", region_name=region, endpoint_url=self.source.endpoint_url, config=config
            )
        return self._client

    def _queue(self) -> str:
        if self._queue_url is None:
            answer = self._call("get_queue_url", QueueName=LOCAL_EVENTS_QUEUE)
            self._queue_url = str(answer["QueueUrl"])
        return self._queue_url

    def _receive(self, wait_s: int) -> list[dict[str, Any]]:
        queue_url = self._queue()
        self._waiting = True
        try:
            if self.stopped:
                return []
            answer = self._call(
                "receive_message", QueueUrl=queue_url, MaxNumberOfMessages=BATCH, WaitTimeSeconds=wait_s
            )
        finally:
            self._waiting = False
        return list(answer.get("Messages") or [])

    def _delete(self, messages: list[dict[str, Any]]) -> None:
        if not messages:
            return
        entries = [{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)]
        answer = self._call("delete_message_batch", QueueUrl=self._queue(), Entries=entries)
        for failure in answer.get("Failed") or []:
            note(f"could not delete a message ({failure.get('Code')}): it will be printed again")

    def _call(self, operation: str, **parameters: Any) -> Any:
        try:
            return getattr(self._sqs(), operation)(**parameters)
        except HippocampusError:
            raise
        except Exception as error:
            raise _sqs_error(error, self.source) from None

    # --- printing ----------------------------------------------------------------------------------

    def _print(self, message: Mapping[str, Any], as_json: bool) -> None:
        """Print one message's event (a note on stderr when it holds none)."""
        body = str(message.get("Body", ""))
        try:
            event = json.loads(body)
        except ValueError:
            event = None
        if not isinstance(event, dict) or "detail-type" not in event:
            note(f"not an event, deleted: {' '.join(body.split())[:120]}")
            return
        click.echo(json.dumps(event, ensure_ascii=False) if as_json else event_line(event))


def _sqs_error(error: Exception, source: Source) -> HippocampusError:
    from botocore import exceptions as aws

    where = source.describe()
    if isinstance(error, aws.ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        metadata = error.response.get("ResponseMetadata", {})
        status, request_id = int(metadata.get("HTTPStatusCode") or 500), metadata.get("RequestId")
        if "NonExistentQueue" in code or code == "QueueDoesNotExist":
            hint = " (a local stack from before the events? restart make dev)" if source.local else ""
            return NotFoundError(f"no queue {where}{hint}", status=404, request_id=request_id)
        message = str(error.response.get("Error", {}).get("Message") or code)
        return api_error(code or None, status, f"SQS refused: {message} ({where})", request_id)
    if isinstance(error, aws.ConnectTimeoutError | aws.ReadTimeoutError):
        return RequestTimeoutError(f"SQS did not answer in time ({where})")
    if isinstance(error, aws.EndpointConnectionError | aws.ConnectionClosedError):
        hint = ": is make dev running?" if source.local else ""
        return ConnectionFailedError(f"cannot reach {source.endpoint_url or where}{hint}")
    if isinstance(error, aws.NoCredentialsError | aws.NoRegionError):
        return TransportError(f"{error} (the queue {where} is read with the environment's AWS credentials)")
    return TransportError(f"reading {where} failed ({type(error).__name__}: {error})")


# --- one line per event -----------------------------------------------------------------------------


def event_line(event: Mapping[str, Any]) -> str:
    """`2026-12-05T15:30:00Z Memory Updated acme/alice v4, 27 words (job-…)`: when, what, whose, and
    the ids and counts that matter for the type (docs/api.md "Events" has every field)."""
    detail = event.get("detail")
    detail = detail if isinstance(detail, Mapping) else {}
    kind = str(event.get("detail-type", "?"))
    who = f"{detail.get('tenant_id', '?')}/{detail.get('user_id', '?')}"
    if detail.get("agent_id"):  # a change of an agent's private scope of the user
        who += f" agent {detail['agent_id']}"
    about = _ABOUT.get(kind, _unknown)(detail)
    return f"{event.get('time', '-')} {kind} {who} {about}".rstrip()


def _memory_updated(detail: Mapping[str, Any]) -> str:
    jobs = detail.get("job_ids") or []
    by = ", ".join(str(job) for job in jobs) if jobs else "by hand"
    return f"v{detail.get('version')}, {count(int(detail.get('word_count') or 0), 'word')} ({by})"


def _records_changed(detail: Mapping[str, Any]) -> str:
    notes = [str(detail[name]) for name in ("category", "job_id") if detail.get(name)]
    if detail.get("superseded_by"):
        notes.append(f"superseded by {detail['superseded_by']}")
    line = f"{detail.get('change')} {detail.get('record_id')}"
    return f"{line} ({', '.join(notes)})" if notes else line


def _job_finished(detail: Mapping[str, Any]) -> str:
    parts = [str(detail.get("job_id")), str(detail.get("status"))]
    if detail.get("memory_version") is not None:
        parts.append(f"v{detail['memory_version']}")
    if detail.get("item_id"):
        parts.append(f"item={detail['item_id']}")
    if detail.get("error_code"):
        parts.append(f"error={detail['error_code']}")
    return " ".join(parts)


# What a deletion receipt counts (docs/api.md "Deletion receipts"), as people say it: (one, many).
_ERASED = {
    "dynamodb": {
        "memory": ("summary", "summaries"),
        "facts": ("fact", "facts"),
        "episodes": ("episode", "episodes"),
        "records": ("record", "records"),
        "jobs": ("job", "jobs"),
        "job_references": ("job reference", "job references"),
        "idempotency_records": ("idempotency record", "idempotency records"),
        "pii_placeholders": ("PII placeholder", "PII placeholders"),
        "agent_scopes": ("agent scope", "agent scopes"),
    },
    "s3": {
        "raw_objects": ("raw payload", "raw payloads"),
        "raw_items_blanked": ("raw item blanked", "raw items blanked"),
        "history_objects": ("past summary", "past summaries"),
        "object_versions": ("object version", "object versions"),
    },
    "queue": {
        "messages_skipped": ("queued item skipped", "queued items skipped"),
        "deferred_turns": ("deferred turn", "deferred turns"),
    },
}


def _user_forgotten(detail: Mapping[str, Any]) -> str:
    erased = detail.get("erased")
    erased = erased if isinstance(erased, Mapping) else {}
    counts: list[str] = []
    for store, names in _ERASED.items():
        found = erased.get(store)
        found = found if isinstance(found, Mapping) else {}
        for name, (one, many) in names.items():
            number = found.get(name)
            if isinstance(number, int) and number > 0:
                counts.append(f"{number} {one if number == 1 else many}")
    erased_line = ", ".join(counts) or "nothing was stored"
    return f"receipt {detail.get('receipt_id')} generation {detail.get('generation')} ({erased_line})"


def _unknown(detail: Mapping[str, Any]) -> str:
    return f"event {detail.get('event_id', '?')}"


_ABOUT = {
    "Memory Updated": _memory_updated,
    "Records Changed": _records_changed,
    "Job Finished": _job_finished,
    "User Forgotten": _user_forgotten,
}
