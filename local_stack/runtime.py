"""A small Lambda runtime: the real handler modules, invoked with a Lambda-like context.

Lambda runs one event at a time per execution environment, and a handler module may keep
per-invocation state in module globals (a Powertools batch processor does). So each
function here is a pool of "instances": an instance is a separately imported copy of the
handler module (a unique module name) with its own lock, created on demand (a cold start)
up to the function's concurrency, and reused afterwards (warm). The domain package
`hippocampus` is imported once per process, as a layer is shared within one environment.
"""

import importlib.util
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

ACCOUNT_ID = "123456789012"
log = logging.getLogger("local_stack.runtime")


@dataclass
class LambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools use."""

    function_name: str
    memory_limit_in_mb: int
    invoked_function_arn: str
    aws_request_id: str
    deadline_epoch_s: float
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = ""
    identity: Any = None
    client_context: Any = None
    tenant_id: str | None = None

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline_epoch_s - time.time()) * 1000))


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    handler_path: Path
    timeout_s: int
    memory_mb: int
    region: str


@dataclass
class _Instance:
    module: ModuleType
    handler: Callable[[dict[str, Any], LambdaContext], Any]
    lock: threading.Lock = field(default_factory=threading.Lock)
    invocations: int = 0


class FunctionError(RuntimeError):
    """The function could not be loaded, or raised: Lambda reports an unhandled error."""


class LocalFunction:
    """One function: a pool of handler instances, at most `concurrency` in use at a time."""

    def __init__(self, spec: FunctionSpec, concurrency: int) -> None:
        self.spec = spec
        self.arn = f"arn:aws:lambda:{spec.region}:{ACCOUNT_ID}:function:hippocampus-local-{spec.name}"
        self._slots = threading.BoundedSemaphore(concurrency)
        self._free: list[_Instance] = []
        self._pool_lock = threading.Lock()
        self._created = 0

    @property
    def instances(self) -> int:
        return self._created

    def invoke(self, event: dict[str, Any]) -> Any:
        """Run the handler on `event`; raise FunctionError when it fails as Lambda would report."""
        with self._slots:
            instance = self._take()
            try:
                with instance.lock:
                    context = self._context()
                    instance.invocations += 1
                    started = time.monotonic()
                    try:
                        return instance.handler(event, context)
                    except Exception as exc:
                        log.exception("%s raised (request %s)", self.spec.name, context.aws_request_id)
                        raise FunctionError(f"{type(exc).__name__}: {exc}") from exc
                    finally:
                        elapsed = time.monotonic() - started
                        if elapsed > self.spec.timeout_s:
                            log.warning(
                                "%s took %.1f s, over its %d s timeout: Lambda would have stopped it",
                                self.spec.name,
                                elapsed,
                                self.spec.timeout_s,
                            )
            finally:
                with self._pool_lock:
                    self._free.append(instance)

    def warm_up(self) -> None:
        """Load one instance now, so a broken handler fails at start-up rather than on a request."""
        with self._slots:
            instance = self._take()
            with self._pool_lock:
                self._free.append(instance)

    def _take(self) -> _Instance:
        with self._pool_lock:
            if self._free:
                return self._free.pop()
            self._created += 1
            number = self._created
        try:
            return self._load(number)
        except BaseException:
            with self._pool_lock:
                self._created -= 1
            raise

    def _load(self, number: int) -> _Instance:
        path = self.spec.handler_path
        if not path.is_file():
            raise FunctionError(f"{self.spec.name}: handler file {path} does not exist")
        module_name = f"_hippocampus_local_{self.spec.name}_{number}"
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        if module_spec is None or module_spec.loader is None:
            raise FunctionError(f"{self.spec.name}: cannot import {path}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        started = time.monotonic()
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(module_name, None)
            log.exception("%s failed to initialise", self.spec.name)
            raise FunctionError(f"{self.spec.name}: init failed: {type(exc).__name__}: {exc}") from exc
        handler = getattr(module, "lambda_handler", None)
        if not callable(handler):
            raise FunctionError(f"{self.spec.name}: {path} has no callable lambda_handler")
        log.debug("%s instance %d ready (init %.0f ms)", self.spec.name, number, (time.monotonic() - started) * 1e3)
        return _Instance(module=module, handler=handler)

    def _context(self) -> LambdaContext:
        request_id = str(uuid.uuid4())
        return LambdaContext(
            function_name=f"hippocampus-local-{self.spec.name}",
            memory_limit_in_mb=self.spec.memory_mb,
            invoked_function_arn=self.arn,
            aws_request_id=request_id,
            deadline_epoch_s=time.time() + self.spec.timeout_s,
            log_group_name=f"/aws/lambda/hippocampus-local-{self.spec.name}",
            log_stream_name=time.strftime("%Y/%m/%d/[$LATEST]") + uuid.uuid4().hex,
        )
