"""Recall: vectors made off the request path, hybrid ranking, and the context block an application
prepends (docs/architecture.md "Recall")."""
