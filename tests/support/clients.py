"""A boto3 client stand-in that answers some operations itself: failures and races, injected."""

from collections.abc import Callable
from typing import Any


class ClientProxy:
    """Forwards every call to `client`, except the operations given to `intercept`."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._overrides: dict[str, Callable[..., Any]] = {}

    def intercept(self, operation: str, answer: Callable[..., Any]) -> None:
        self._overrides[operation] = answer

    def __getattr__(self, name: str) -> Any:
        return self._overrides.get(name) or getattr(self._client, name)
