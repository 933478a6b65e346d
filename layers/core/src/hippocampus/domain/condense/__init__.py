"""The condenser: queued turns folded into each user's summary, exactly once, within its budget
(docs/architecture.md "Condensation", "The condenser"); dead letters and redrive."""
