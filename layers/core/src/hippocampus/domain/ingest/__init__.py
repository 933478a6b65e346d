"""Ingest (POST …/memory): facts stored at once, without a lock (docs/architecture.md "Fact limits"), turns
queued for the condenser."""
