"""moto's server on loopback: the AWS endpoint of the local stack.

moto plays DynamoDB (and its streams), S3, SQS, EventBridge and Secrets Manager in memory. Its
DynamoDB handles one request at a time here (`SerializedDynamoDB`): moto's tables are plain dicts
without locks, so under concurrent requests a conditional write could pass against a state another
request is changing, a failed transaction's rollback could restore a copy taken before another
request's acknowledged write, and a copy could fail half-way ("dictionary changed size during
iteration", a 500). DynamoDB itself applies each conditional write atomically; one lock gives moto
the same. A stream read takes the same lock: it never sees the record of a write whose transaction
is about to be rolled back. The other promises the
service relies on, and a cost per request that stays flat, come from fixes of moto's internals,
one module each (docs/architecture.md "Local stack"): `moto_fifo.py`, `moto_dispatch.py`,
`moto_dynamodb.py`, `moto_attribute_values.py`, `moto_conditions.py`, `moto_item_size.py`,
`moto_streams.py`, `moto_sqs.py` (its lock), `moto_sqs_counts.py`.
With a data directory, what moto changes is journaled before moto answers and replayed at the
next start (`durable.py`, `moto_state.py`, docs/operations.md "Local stack"); without one, it lives
in memory only.

moto's app is served by waitress, not by werkzeug's development server as moto's own
`ThreadedMotoServer` does: werkzeug closes the connection after every answer, so each boto3 call
of a function paid a new TCP connection and a new thread, about a quarter of the endpoint's CPU
under a burst of writers. waitress keeps boto3's connections alive and answers from a pool of
threads. The pool is sized for every function environment's calls plus the event source's SQS long
polls at once, each holding a thread while it waits. One difference from moto's server: waitress
drops request headers whose names contain `_`. Only S3 user metadata could have them, and the
service stores none.
"""

import socket
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import waitress
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from waitress import wasyncore
from waitress.server import BaseWSGIServer

from local_stack import moto_state
from local_stack.durable import DurableState, RecordChanges, Restored, SyncBeforeAnswer
from local_stack.moto_attribute_values import fix_moto_attribute_values
from local_stack.moto_conditions import fix_moto_condition_parsing
from local_stack.moto_dispatch import fix_moto_dispatch
from local_stack.moto_dynamodb import fix_moto_dynamodb_costs
from local_stack.moto_fifo import fix_moto_fifo_ordering
from local_stack.moto_item_size import fix_moto_item_size
from local_stack.moto_sqs_counts import fix_moto_sqs_counts
from local_stack.moto_streams import fix_moto_stream_memory
from local_stack.paths import LOOPBACK


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
# The JSON protocol of DynamoDB names the operation in this header (`DynamoDB_20120810.PutItem`), as
# its streams' does (`DynamoDBStreams_20120810.GetRecords`).
_DYNAMODB_TARGETS = ("DynamoDB_", "DynamoDBStreams_")
# Threads answering at once: far more than the functions' environments and the event source's long
# polls together (tens); an idle thread costs only its stack.
_SERVER_THREADS = 64
# Open connections: each boto3 client of every environment keeps a few (botocore's pool holds 10).
_CONNECTION_LIMIT = 1000


class SerializedDynamoDB:
    """WSGI middleware: DynamoDB (and stream) requests run one at a time; S3, SQS (long polls) and the
    rest do not wait."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith(_DYNAMODB_TARGETS):
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
        self._connections: dict[int, Any] = {}  # what the server's loop polls: listener, connections
        self._thread: threading.Thread | None = None
        self.state = DurableState(data_dir) if data_dir is not None else None
        self.url = ""

    def start(self) -> str:
        fix_moto_fifo_ordering()
        fix_moto_dispatch()
        fix_moto_dynamodb_costs()
        fix_moto_attribute_values()
        fix_moto_condition_parsing()
        fix_moto_item_size()
        fix_moto_stream_memory()
        fix_moto_sqs_counts()
        moto_state.install()  # the records of moto's changes, and moto_sqs.py's lock
        if self.state is not None:
            self.state.open()  # before binding: a directory in use fails at once
        # A map of its own for each server: a stopped server's loop that ends late (its close_all
        # runs on its own thread) must not close what a restarted one polls, its trigger included.
        self._connections = {}
        # Port 0: the server binds a free port itself (no race with another process).
        server = waitress.create_server(
            self._app(),
            map=self._connections,
            host=LOOPBACK,
            port=self._requested_port,
            threads=_SERVER_THREADS,
            connection_limit=_CONNECTION_LIMIT,
            asyncore_use_poll=True,  # select() fails past 1,024 descriptors
            ident="moto",
        )
        assert isinstance(server, BaseWSGIServer)  # one host and port: one server, not several
        self._server = server
        self._thread = threading.Thread(target=server.run, name="moto", daemon=True)
        self._thread.start()
        self.url = f"http://{LOOPBACK}:{server.effective_port}"
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
            # The loop closes the listener and every connection itself (its own thread owns them),
            # and ends with nothing left to poll. An answer still being made is dropped, as a
            # stopped AWS endpoint would drop it; its thread ends after it (threads are daemons).
            connections = self._connections
            try:
                self._server.trigger.pull_trigger(lambda: wasyncore.close_all(connections))
            except OSError:
                # The trigger is closed already: the map was closed (the trigger is in it), so the
                # loop has ended and owns nothing left; closing what remains here is safe.
                wasyncore.close_all(connections)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._server is not None:
            self._server.task_dispatcher.set_thread_count(0)
            self._server = None
        if self.state is not None:
            self.state.close()
