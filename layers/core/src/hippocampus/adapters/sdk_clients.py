"""The SDK clients of the model providers, each created once, on first use.

Importing an SDK is the cost (openai ~0.4 s; boto3's bedrock-runtime model), so a function pays it
on its first model call, never at import. Both make a single attempt: the adapters' `call_in_time`
makes the one retry, within the time the call is given.
"""

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openai import OpenAI


class Lazy[T]:
    """A value built by `build` on first use, once, thread-safely (or given: tests pass stubs)."""

    def __init__(self, build: Callable[[], T], value: T | None = None) -> None:
        self._build = build
        self._value = value
        self._lock = threading.Lock()

    def __call__(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._build()
            return self._value


def openai_client(api_key: str | Callable[[], str], base_url: str | None, timeout_s: float) -> "OpenAI":
    """An OpenAI SDK client without SDK retries (it would sleep as long as `retry-after` asks)."""
    from openai import OpenAI

    return OpenAI(api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0)


def bedrock_runtime(timeout_s: float) -> Any:
    """A `bedrock-runtime` client whose calls each make one attempt of at most `timeout_s`."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=timeout_s,
        read_timeout=timeout_s,
        retries={"total_max_attempts": 1, "mode": "standard"},
    )
    return boto3.client("bedrock-runtime", config=config)
