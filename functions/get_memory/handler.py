"""get_memory: the read routes of the API and the direct-invoke read actions.

Nothing heavy is imported here: no openai, no X-Ray SDK — this is the latency-critical path.
With SnapStart this import is snapshotted, its clients primed first (hippocampus/snapshot.py).
"""

from hippocampus.snapshot import around_snapshot, prime_clients
from hippocampus.wiring import get_memory_handler

lambda_handler = get_memory_handler()  # settings parsed (a bad one fails here), models and routes built
around_snapshot(prime_clients("dynamodb", "s3"))
