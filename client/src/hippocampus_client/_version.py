"""The version of the distribution (client/pyproject.toml)."""

__version__ = "0.1.0"
