"""Storage and queue layout shared by the adapters, the CDK app and the local stack.

One place for every name and setting that the deployed resources and the local stack
must agree on, so the two can never drift apart.
"""

from typing import Final

# DynamoDB main table: single-table design.
TABLE_PARTITION_KEY: Final = "pk"
TABLE_SORT_KEY: Final = "sk"
TABLE_TTL_ATTRIBUTE: Final = "expires_at"

# Idempotency table used by Powertools idempotency (its default attribute names).
IDEMPOTENCY_PARTITION_KEY: Final = "id"
IDEMPOTENCY_TTL_ATTRIBUTE: Final = "expiration"

# S3 archive bucket prefixes, each with its own lifecycle expiration.
RAW_PREFIX: Final = "raw/"
HISTORY_PREFIX: Final = "history/"

# SQS FIFO: the condenser's event source and its dead-letter queue.
DLQ_MAX_RECEIVE_COUNT: Final = 5
CONDENSER_BATCH_SIZE: Final = 10
# Visibility timeout must cover six condenser timeouts (AWS guidance for SQS triggers).
VISIBILITY_TO_TIMEOUT_RATIO: Final = 6
# Room for the worst case of one user's condensation: two LLM calls (the budget retry), each with
# one SDK retry, at the default 20 s timeout — plus the reads and the conditional write.
CONDENSER_TIMEOUT_S: Final = 120
# The worst case of one user's condensation, in LLM timeouts, and the margin for its I/O.
LLM_TIMEOUTS_PER_CONDENSATION: Final = 4
CONDENSATION_IO_MARGIN_S: Final = 5
QUEUE_VISIBILITY_TIMEOUT_S: Final = CONDENSER_TIMEOUT_S * VISIBILITY_TO_TIMEOUT_RATIO
QUEUE_RETENTION_DAYS: Final = 4
DLQ_RETENTION_DAYS: Final = 14

# Resource base names (the CDK app prefixes them with the stage, the local stack uses them as they are).
TABLE_NAME: Final = "hippocampus-memory"
IDEMPOTENCY_TABLE_NAME: Final = "hippocampus-idempotency"
BUCKET_NAME: Final = "hippocampus-archive"
QUEUE_NAME: Final = "hippocampus-ingest.fifo"
DLQ_NAME: Final = "hippocampus-ingest-dlq.fifo"

# Metrics namespace and service name (Powertools).
METRICS_NAMESPACE: Final = "Hippocampus"
SERVICE_NAME: Final = "hippocampus"
