"""Hippocampus on AWS: the Python client."""

__version__ = "0.1.0"
