"""What a stored vector's codes stand for, for tests that check ranking against its definition."""

from hippocampus.contracts.recall_ports import CODE_ZERO, Vector


def values(vector: Vector) -> list[float]:
    """The values of `vector`: (code - CODE_ZERO) * scale each (contracts/recall_ports.py)."""
    return [(code - CODE_ZERO) * vector.scale for code in vector.codes]
