"""Embedding providers behind the `Embedder` port (OpenAI-compatible, Bedrock, offline)."""
