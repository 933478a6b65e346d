"""recall: the query and context routes of the API and the direct-invoke recall actions.

Its own function, so get_memory keeps its cold start and its permissions: this one may call the
embedding model (docs/architecture.md "Recall"). With SnapStart this import is snapshotted, its
clients and the offline model primed first (hippocampus/snapshot.py).
"""

from hippocampus.snapshot import around_snapshot, prime_clients, prime_copy_reader, prime_embedder
from hippocampus.wiring import query_embedder, recall_handler

lambda_handler = recall_handler()  # settings parsed and the embedding model configured, or a clear failure
# The S3 client too: a first query then reads the user's stored copy of episodes beside the table.
around_snapshot(prime_clients("dynamodb"), prime_copy_reader(), prime_embedder(query_embedder()))
