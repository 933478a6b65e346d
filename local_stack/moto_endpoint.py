"""moto's server on loopback: the AWS endpoint of the local stack.

moto plays DynamoDB, S3, SQS and Secrets Manager in memory. Its DynamoDB handles one request at a
time here (`SerializedDynamoDB`): moto's tables are plain dicts without locks, so under concurrent
requests a conditional write could pass against a state another request is changing, a failed
transaction's rollback could restore a copy taken before another request's acknowledged write,
and a copy could fail half-way ("dictionary changed size during iteration", a 500). DynamoDB itself
applies each conditional write atomically; one lock gives moto the same. The other promises the
service relies on, and a cost per request that stays flat, come from fixes of moto's internals,
one module each (docs/architecture.md "Local stack"): `moto_fifo.py`, `moto_dispatch.py`,
`moto_dynamodb.py`, `moto_attribute_values.py`, `moto_conditions.py`, `moto_item_size.py`,
`moto_sqs.py` (its lock), `moto_sqs_counts.py`.
With a data directory, what moto changes is journaled before moto answers and replayed at the
next start (`durable.py`, `moto_state.py`, docs/operations.md "Local stack"); without one, it lives
in memory only.
"""

import logging
import socket
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

from local_stack import moto_state
from local_stack.durable import DurableState, RecordChanges, Restored, SyncBeforeAnswer
from local_stack.moto_attribute_values import fix_moto_attribute_values
from local_stack.moto_conditions import fix_moto_condition_parsing
from local_stack.moto_dispatch import fix_moto_dispatch
from local_stack.moto_dynamodb import fix_moto_dynamodb_costs
from local_stack.moto_fifo import fix_moto_fifo_ordering
from local_stack.moto_item_size import fix_moto_item_size
from local_stack.moto_sqs_counts import fix_moto_sqs_counts
from local_stack.paths import LOOPBACK


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


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
        fix_moto_condition_parsing()
        fix_moto_item_size()
        fix_moto_sqs_counts()
        moto_state.install()  # the records of moto's changes, and moto_sqs.py's lock
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
