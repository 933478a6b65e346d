"""Lambda SnapStart's hooks for the read functions (`hippocampus.snapstart`, docs/configuration.md).

Under SnapStart a handler's import runs once per published version and is snapshotted; the hooks
registered here run just before the snapshot and after each restore. Outside a snapshotting
runtime (tests, the local stack) `snapshot_restore_py` is absent and nothing is registered.
"""

import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from hippocampus.adapters import aws_clients

if TYPE_CHECKING:  # the ports' module loads the models, which get_memory's fast lane never does
    from hippocampus.contracts.ports import Embedder

# Providers whose model runs in the function: embedding a text before the snapshot sends nothing.
IN_PROCESS_EMBEDDINGS = ("offline", "hashed")


def prime_clients(*services: str) -> Callable[[], None]:
    """What the first request would build otherwise: the clients (service model, endpoint rules,
    credentials). No request is sent: a connection opened now would be a dead one in every
    restored environment."""

    def prime() -> None:
        for service in services:
            aws_clients.client(service)

    return prime


def prime_copy_reader() -> Callable[[], None]:
    """The S3 client recall reads users' stored copies of episodes with (adapters/episode_snapshots.py)."""

    def prime() -> None:
        aws_clients.client("s3", optional_reads=True)

    return prime


def prime_embedder(embedder: "Embedder | None") -> Callable[[], None]:
    """The offline model's tokenizer and token table loaded (~50 ms of the first query otherwise);
    nothing for a provider behind an API, whose first call would be a request."""

    def prime() -> None:
        if embedder is not None and embedder.provider in IN_PROCESS_EMBEDDINGS:
            embedder.embed(["loaded before the snapshot"])

    return prime


def around_snapshot(*primes: Callable[[], object]) -> None:
    """Each of `primes` before the snapshot (what one returns is dropped); after each restore, a seed of its own for `random`."""
    try:  # part of the Lambda Python runtime, which calls the hooks only around a snapshot
        from snapshot_restore_py import (  # type: ignore[import-not-found]
            register_after_restore,
            register_before_snapshot,
        )
    except ImportError:
        return
    for prime in primes:
        register_before_snapshot(prime)
    # Every environment restored from one snapshot would share its `random` state (botocore's retry
    # jitter among others): each draws a seed of its own from os.urandom.
    register_after_restore(random.seed)
