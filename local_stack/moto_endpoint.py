"""moto's server on loopback: the AWS endpoint of the local stack.

moto plays DynamoDB, S3, SQS and Secrets Manager in memory. These fixes make it keep the promises
the service relies on (docs/architecture.md "Local stack") at a cost per request that stays flat:
- its FIFO queues deliver a message group in order across retries, as SQS does;
- its DynamoDB handles one request at a time. moto's tables are plain dicts without locks: under
  concurrent requests a conditional write can pass against a state another request is changing,
  a failed transaction's rollback can restore a copy taken before another request's acknowledged
  write, and a copy can fail half-way ("dictionary changed size during iteration", a 500).
  DynamoDB itself applies each conditional write atomically; one lock gives moto the same.
  With one request at a time, a transaction's rollback and a query need only the items they
  touch, not the whole table (`moto_dynamodb.py`).
- its SQS queues change their message lists under a lock (`moto_sqs.py`).
- its server lists its own services once, not on every request (`fix_moto_dispatch`);
- its DynamoDB answers carry attribute values in their wire form without walking the API model
  for each one (`moto_attribute_values.py`).
With a data directory, what moto changes is journaled before moto answers and replayed at the
next start (`durable.py`, docs/operations.md "Local stack"); without one, it lives in memory only.
"""

import logging
import socket
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from moto import backends as moto_backends
from moto.core.utils import unix_time_millis
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.sqs import models as sqs_models
from werkzeug.serving import BaseWSGIServer, make_server

from local_stack import moto_state
from local_stack.durable import DurableState, RecordChanges, Restored, SyncBeforeAnswer
from local_stack.moto_attribute_values import fix_moto_attribute_values
from local_stack.moto_dynamodb import fix_moto_dynamodb_costs
from local_stack.paths import LOOPBACK


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _deliverable(queue: Any) -> list[Any]:
    """Messages SQS would deliver now: visible and not delayed; from a FIFO queue, in order, per group,
    up to the first in flight. One clock read for the whole scan: moto's `visible` and `delayed` read
    the clock for each message, and the long poll runs this scan after every send."""
    now = unix_time_millis()
    blocked: set[str] = set()
    deliverable = []
    for message in queue._messages:
        if now < message.delayed_until:
            continue
        group = message.group_id if queue.fifo_queue else None
        if group is not None and group in blocked:
            continue
        if now > message.visible_at:
            deliverable.append(message)
        elif group is not None:
            blocked.add(group)  # in flight: later messages of its group wait
    return deliverable


def fix_moto_fifo_ordering() -> None:
    """Make moto 5.2's FIFO queues keep the order of a message group across retries.

    moto blocks a group while any of its received messages is "pending", and clears a
    pending message only when its receive loop reaches it. When several messages of one
    group come back at once (a failed batch whose visibility expires), the first ones are
    skipped because the later ones still look pending, and a later message is delivered
    alone, ahead of the earlier ones. SQS instead delivers a group's messages in order, up
    to the first one still in flight. This computes that rule in `Queue.messages`, which the
    receive loop and the long-poll wait use, and leaves moto's own group bookkeeping empty
    for FIFO queues.
    """
    queue_class: Any = sqs_models.Queue
    if getattr(queue_class, "_hippocampus_fifo_fix", False):
        return
    visible = queue_class.messages.fget
    groups = queue_class.pending_message_groups.fget

    def pending_message_groups(queue: Any) -> set[str]:
        return set() if queue.fifo_queue else set(groups(queue))

    def approximate_number_of_messages(queue: Any) -> int:
        return len(visible(queue))

    queue_class.messages = property(_deliverable)
    queue_class.pending_message_groups = property(pending_message_groups)
    queue_class.approximate_number_of_messages = property(approximate_number_of_messages)
    queue_class._hippocampus_fifo_fix = True


def fix_moto_dispatch() -> None:
    """List moto's services once, not on every request.

    moto 5.2's server picks each request's service under one global lock, and on the way lists
    the directory of its own package, checking each of its ~200 entries on disk: a few percent of
    the local stack's whole time under load, with every request waiting on that lock. The
    package does not change while the stack runs.
    """
    backends: Any = moto_backends
    if getattr(backends, "_hippocampus_dispatch_fix", False):
        return
    modules = tuple(backends.list_of_moto_modules())
    backends.moto_list_of_moto_modules = backends.list_of_moto_modules  # for the test that moto needs it
    backends.list_of_moto_modules = lambda: modules
    backends._hippocampus_dispatch_fix = True


WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
# The JSON protocol of DynamoDB names the operation in this header (`DynamoDB_20120810.PutItem`).
_DYNAMODB_TARGET = "DynamoDB_"


class SerializedDynamoDB:
    """WSGI middleware: DynamoDB requests run one at a time; S3, SQS (long polls) and the rest do not wait."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith(_DYNAMODB_TARGET):
            return self._app(environ, start_response)
        with self._lock:
            # The body is produced inside the lock: moto builds its whole answer before returning it.
            return list(self._app(environ, start_response))


class MotoEndpoint:
    """moto's server (as moto's ThreadedMotoServer builds it) on loopback, on a free port.

    `data_dir` None: everything in memory, gone when the process ends; else `start()` locks that
    directory and `restore()` (once the resources are provisioned) replays what it holds.
    """

    def __init__(self, port: int = 0, data_dir: Path | None = None) -> None:
        self._requested_port = port
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self.state = DurableState(data_dir) if data_dir is not None else None
        self.url = ""

    def start(self) -> str:
        # werkzeug logs every request to stderr unless told otherwise; the stack has its own access log.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        fix_moto_fifo_ordering()
        fix_moto_dispatch()
        fix_moto_dynamodb_costs()
        fix_moto_attribute_values()
        moto_state.install()
        if self.state is not None:
            self.state.open()  # before binding: a directory in use fails at once
        # Port 0: the server binds a free port itself (no race with another process).
        self._server = make_server(
            LOOPBACK, self._requested_port, self._app(), threaded=True, request_handler=MotoRequestHandler
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto", daemon=True)
        self._thread.start()
        self.url = f"http://{LOOPBACK}:{self._server.port}"
        return self.url

    def _app(self) -> WsgiApp:
        moto: WsgiApp = DomainDispatcherApplication(create_backend_app)
        if self.state is None:
            return SerializedDynamoDB(moto)
        return SyncBeforeAnswer(SerializedDynamoDB(RecordChanges(moto, self.state)), self.state)

    def restore(self) -> Restored | None:
        """Replay the data directory into moto, then journal every change (None: in memory)."""
        return self.state.restore() if self.state is not None else None

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self.state is not None:
            self.state.close()
