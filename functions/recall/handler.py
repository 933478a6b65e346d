"""recall: the query and context routes of the API and the direct-invoke recall actions.

Its own function, so get_memory keeps its cold start and its permissions: this one may call the
embedding model (docs/architecture.md "Recall"). With SnapStart this import is snapshotted, its
client and the offline model primed first (hippocampus/snapshot.py).
"""

from hippocampus.snapshot import around_snapshot, prime_clients, prime_embedder
from hippocampus.wiring import query_embedder, recall_handler

lambda_handler = recall_handler()  # settings parsed and the embedding model configured, or a clear failure
around_snapshot(prime_clients("dynamodb"), prime_embedder(query_embedder()))
