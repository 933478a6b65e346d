"""recall: the query and context routes of the API and the direct-invoke recall actions.

Its own function, so get_memory keeps its cold start and its permissions: this one may call the
embedding model (docs/architecture.md "Recall"). With SnapStart (`hippocampus.snapstart`,
docs/configuration.md) this import runs once per published version and is snapshotted; `prime`
runs just before the snapshot.
"""

import random

from hippocampus.adapters import aws_clients
from hippocampus.wiring import recall_handler

lambda_handler = recall_handler()  # settings parsed and the embedding model configured, or a clear failure


def prime() -> None:
    """The DynamoDB client and the Query paginator's model, which the first query would build.
    No request is sent: a connection opened now would be a dead one in every restored environment."""
    aws_clients.client("dynamodb").get_paginator("query")


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
