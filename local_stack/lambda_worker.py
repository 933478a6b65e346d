"""One Lambda execution environment: import the handler once, then serve one event at a time.

Started by `local_stack.runtime` as `python -m local_stack.lambda_worker '<json>'` with a socket
(`fd`) to the parent; messages are `(event, context fields)` in, `(status, value)` out, and
`None` asks the worker to exit. Standard output and error are the parent's: the handlers'
logs appear in the local stack's output, as they would in CloudWatch Logs.
"""

import importlib.util
import json
import os
import signal
import sys
import time
import traceback
import warnings
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from local_stack.lambda_context import LambdaContext


def _load(name: str, handler_path: Path) -> Any:
    module_spec = importlib.util.spec_from_file_location(f"{name}_handler", handler_path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot import {handler_path}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    module_spec.loader.exec_module(module)
    handler = getattr(module, "lambda_handler", None)
    if not callable(handler):
        raise ImportError(f"{handler_path} has no callable lambda_handler")
    return handler


def _serve(connection: Connection, name: str, handler_path: Path) -> None:
    started = time.monotonic()
    try:
        handler = _load(name, handler_path)
    except BaseException as exc:
        traceback.print_exc()
        connection.send(("init_error", f"{type(exc).__name__}: {exc}"))
        return
    connection.send(("ready", (time.monotonic() - started) * 1000))
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return  # the parent went away
        if message is None:
            return
        event, context_fields = message
        try:
            result = handler(event, LambdaContext(**context_fields))
        except Exception as exc:
            traceback.print_exc()
            reply: tuple[str, Any] = ("error", f"{type(exc).__name__}: {exc}")
        else:
            reply = ("ok", result)
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            connection.send(reply)
        except Exception as exc:
            connection.send(("error", f"Runtime.MarshalError: {type(exc).__name__}: {exc}"))


def main() -> None:
    # Ctrl-C reaches the whole process group: the parent stops the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.getenv("POWERTOOLS_METRICS_DISABLED", "").lower() == "true":
        # Metrics are off locally (see environment.py): Powertools' "nothing to publish" warning is noise.
        warnings.filterwarnings("ignore", message="No application metrics to publish")
    arguments = json.loads(sys.argv[1])
    connection = Connection(int(arguments["fd"]))
    try:
        _serve(connection, arguments["name"], Path(arguments["handler_path"]))
    finally:
        connection.close()


if __name__ == "__main__":
    main()
