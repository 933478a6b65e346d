"""boto3 clients, created lazily and once per process, with explicit timeouts.

boto3 also honours AWS_ENDPOINT_URL, which the local stack uses to point every client at moto.
"""

import threading
from typing import Any

import boto3
from botocore.config import Config

from hippocampus.adapters.dynamodb_wire import parse_query_items_once

_CONFIG = Config(
    connect_timeout=2,
    read_timeout=5,
    retries={"mode": "standard", "max_attempts": 3},
    tcp_keepalive=True,
)
_clients: dict[str, Any] = {}
_session: list[boto3.session.Session] = []  # one per process: clients share its loaders and credentials
_lock = threading.Lock()


def client(service: str) -> Any:
    """The process-wide client for `service` (thread-safe; boto3 clients themselves are)."""
    existing = _clients.get(service)
    if existing is not None:
        return existing
    with _lock:
        if service not in _clients:
            if not _session:
                _session.append(boto3.session.Session())
            created = _session[0].client(service, config=_CONFIG)
            if service == "dynamodb":
                parse_query_items_once(created)  # a large Query's items, parsed by json, not walked
            _clients[service] = created
        return _clients[service]


def reset_clients() -> None:
    """Forget every client (tests switch endpoints between runs)."""
    with _lock:
        _clients.clear()
        _session.clear()
