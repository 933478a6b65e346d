"""Hippocampus on AWS: persistent, per-user memory for LLM applications."""

__version__ = "0.1.0"
