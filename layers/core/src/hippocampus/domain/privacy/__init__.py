"""Privacy: personal data masked before any model sees it or anything stores it
(docs/architecture.md "PII masking")."""
