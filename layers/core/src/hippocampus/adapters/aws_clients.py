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
# For a read that only saves work, with a fallback when it fails (recall's stored copy of a user's
# episodes): given up on quickly rather than retried into the function's timeout.
_OPTIONAL_READ = Config(
    connect_timeout=1,
    read_timeout=2,
    retries={"mode": "standard", "max_attempts": 1},
    tcp_keepalive=True,
)
_clients: dict[tuple[str, bool], Any] = {}
_session: list[boto3.session.Session] = []  # one per process: clients share its loaders and credentials
_lock = threading.Lock()


def client(service: str, optional_reads: bool = False) -> Any:
    """The process-wide client for `service` (thread-safe; boto3 clients themselves are);
    `optional_reads`: one with short timeouts and a single attempt."""
    key = (service, optional_reads)
    existing = _clients.get(key)
    if existing is not None:
        return existing
    with _lock:
        if key not in _clients:
            if not _session:
                _session.append(boto3.session.Session())
            created = _session[0].client(service, config=_OPTIONAL_READ if optional_reads else _CONFIG)
            if service == "dynamodb":
                parse_query_items_once(created)  # a large Query's items, parsed by json, not walked
            _clients[key] = created
        return _clients[key]


def made(service: str, optional_reads: bool = False) -> bool:
    """Whether this process has made that client yet (what using it first would cost is paid)."""
    return (service, optional_reads) in _clients


def reset_clients() -> None:
    """Forget every client (tests switch endpoints between runs)."""
    with _lock:
        _clients.clear()
        _session.clear()
