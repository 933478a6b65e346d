"""get_memory: the read routes of the API and the direct-invoke read actions.

A user's memory is answered by the fast lane, which loads neither pydantic nor the resolver; every
other request by the resolver, built on first need (docs/architecture.md "The memory read's fast
lane"). With SnapStart this import is snapshotted, the resolver built and its clients primed first
(hippocampus/snapshot.py).
"""

from hippocampus.snapshot import around_snapshot, prime_clients
from hippocampus.wiring import get_memory_handler, read_api

lambda_handler = get_memory_handler()  # MEMORY_TABLE_NAME and MEMORY_TRACING checked here
around_snapshot(prime_clients("dynamodb", "s3"), read_api)
