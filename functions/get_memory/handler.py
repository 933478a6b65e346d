"""get_memory: the read routes of the API and the direct-invoke read actions.

Nothing heavy is imported here: no openai, no X-Ray SDK — this is the latency-critical path.
With SnapStart (`hippocampus.snapstart`, docs/configuration.md) this import runs once per
published version and is snapshotted; `prime` runs just before the snapshot.
"""

import random

from hippocampus.adapters import aws_clients
from hippocampus.wiring import get_memory_handler

lambda_handler = get_memory_handler()  # settings parsed (a bad one fails here), models and routes built


def prime() -> None:
    """What the first request would build otherwise: the clients (service model, endpoint rules,
    credentials) and the Query paginator's model. No request is sent: a connection opened now would
    be a dead one in every restored environment."""
    aws_clients.client("dynamodb").get_paginator("query")
    aws_clients.client("s3")


try:  # part of the Lambda Python runtime, which calls the hooks only around a snapshot
    from snapshot_restore_py import (  # type: ignore[import-not-found]
        register_after_restore,
        register_before_snapshot,
    )
except ImportError:  # tests and the local stack: no snapshot
    pass
else:
    register_before_snapshot(prime)
    # Every environment restored from one snapshot would share its `random` state (botocore's retry
    # jitter among others): each draws a seed of its own from os.urandom.
    register_after_restore(random.seed)
