"""Vectors packed compactly in DynamoDB items: half-precision floats, little-endian, as Binary.

256 dimensions take 512 bytes; half precision keeps cosine similarity to about 1e-3, far finer
than what separates a relevant item from another.
"""

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from hippocampus.contracts.recall_ports import Vector

VECTOR_ATTRIBUTE = "vector"
VECTOR_MODEL_ATTRIBUTE = "vector_model"


def pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(vector)}e", *vector)


def unpack(data: bytes) -> tuple[float, ...]:
    return struct.unpack(f"<{len(data) // 2}e", data)


def stored_vector(item: Mapping[str, Any]) -> Vector | None:
    """The vector on a stored document (a fact's, an episode's, a record's), if it has one."""
    if VECTOR_ATTRIBUTE not in item or VECTOR_MODEL_ATTRIBUTE not in item:
        return None
    return Vector(item[VECTOR_MODEL_ATTRIBUTE], unpack(item[VECTOR_ATTRIBUTE]))
