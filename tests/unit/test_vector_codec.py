"""Vectors as items hold them (adapters/vector_codec.py): a byte a dimension after the scale, and
half-precision floats in items written before."""

import random
import struct

from hippocampus.adapters.vector_codec import (
    HALF_FLOAT_VECTOR_ATTRIBUTE,
    VECTOR_ATTRIBUTE,
    VECTOR_MODEL_ATTRIBUTE,
    pack,
    stored_vector,
    unpack,
)
from hippocampus.contracts.recall_ports import Vector
from hippocampus.domain.recall.ranking import unit
from tests.support.vectors import values


def random_vector(rng: random.Random, dimensions: int = 256) -> Vector:
    return Vector.of("m@256", unit([rng.gauss(0, 1) for _ in range(dimensions)]))


def test_a_vector_is_read_back_as_it_was_stored() -> None:
    rng = random.Random(2)
    for _ in range(20):
        vector = random_vector(rng)
        data = pack(vector)
        assert len(data) == 4 + 256
        assert unpack("m@256", data) == vector
        assert stored_vector({VECTOR_ATTRIBUTE: data, VECTOR_MODEL_ATTRIBUTE: "m@256"}) == vector


def test_half_floats_written_before_are_read_as_bytes_within_a_step_of_their_values() -> None:
    rng = random.Random(3)
    model_values = unit([rng.gauss(0, 1) for _ in range(256)])
    half = struct.pack("<256e", *model_values)
    read = stored_vector({HALF_FLOAT_VECTOR_ATTRIBUTE: half, VECTOR_MODEL_ATTRIBUTE: "m@256"})
    assert read is not None and read.model == "m@256" and read.dimensions == 256
    exact = struct.unpack("<256e", half)
    assert all(abs(a - b) <= read.scale / 2 + 1e-9 for a, b in zip(values(read), exact, strict=True))


def test_an_item_without_a_model_or_a_vector_has_none() -> None:
    data = pack(random_vector(random.Random(4)))
    assert stored_vector({VECTOR_ATTRIBUTE: data}) is None  # a vector of no known model is not compared
    assert stored_vector({VECTOR_MODEL_ATTRIBUTE: "m@256"}) is None
    assert stored_vector({}) is None
