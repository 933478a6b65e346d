"""Vectors packed compactly in DynamoDB items: a byte a dimension (contracts/recall_ports.py
`Vector`), after the scale as a little-endian 32-bit float, as Binary.

256 dimensions take 260 bytes. Items written before vectors were kept as bytes hold 16-bit floats
under `vector` instead: they are read by rounding those to bytes (`Vector.of`, ~30 µs a vector),
and the indexer gives them vectors anew (adapters/dynamodb_recall.py `unindexed`): the facts and
records, and the newest episodes, at the user's next pass; every episode at a re-index
(tools/reindex.py).
"""

import struct
from collections.abc import Mapping
from typing import Any, Final

from hippocampus.contracts.recall_ports import Vector

VECTOR_ATTRIBUTE: Final = "vector_codes"
VECTOR_MODEL_ATTRIBUTE: Final = "vector_model"
# Half-precision floats, little-endian: what items written before held (read, never written).
HALF_FLOAT_VECTOR_ATTRIBUTE: Final = "vector"
# Every attribute of an item's vector, its model's too: a rewrite without its vector drops them all.
VECTOR_ATTRIBUTES: Final = (VECTOR_ATTRIBUTE, HALF_FLOAT_VECTOR_ATTRIBUTE, VECTOR_MODEL_ATTRIBUTE)
_SCALE: Final = struct.Struct("<f")


def pack(vector: Vector) -> bytes:
    return _SCALE.pack(vector.scale) + vector.codes


def unpack(model: str, data: bytes) -> Vector:
    return Vector(model, data[_SCALE.size :], _SCALE.unpack_from(data)[0])


def stored_vector(item: Mapping[str, Any]) -> Vector | None:
    """The vector on a stored document (a fact's, an episode's, a record's), if it has one."""
    model = item.get(VECTOR_MODEL_ATTRIBUTE)
    if model is None:
        return None
    if VECTOR_ATTRIBUTE in item:
        return unpack(model, item[VECTOR_ATTRIBUTE])
    if HALF_FLOAT_VECTOR_ATTRIBUTE in item:
        data = item[HALF_FLOAT_VECTOR_ATTRIBUTE]
        return Vector.of(model, struct.unpack(f"<{len(data) // 2}e", data))
    return None
