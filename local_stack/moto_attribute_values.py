"""moto's DynamoDB answers written as DynamoDB writes them, without walking the API model for each value.

moto 5.2 serializes every answer through the service model: each attribute value of each item is
a structure of ten members (S, N, B, ... M, L), and for each member moto looks up several aliases of
its name. Most of a Query's or BatchGetItem's time went there (a Query of 100 facts: ~4x slower
than the rest of the request). An attribute value is already in its wire form once moto has turned
it into a dict, but for binary values (base64 on the wire): this writes that form directly and
leaves every other shape to moto. The answer is byte-for-byte moto's (tests/integration/
test_local_moto_answers.py compares them, and fails when moto no longer needs this).
"""

import base64
from collections.abc import Callable
from typing import Any

from moto.core import serialize

from local_stack.moto_patching import replace

# The one shape written directly: DynamoDB's (and DynamoDB Streams') attribute value.
ATTRIBUTE_VALUE_SHAPE = "AttributeValue"
_TEXT = {"S", "N"}
_TEXT_SETS = {"SS", "NS"}


def wire_value(value: dict[str, Any]) -> dict[str, Any]:
    """An attribute value (`{"S": "x"}`, `{"M": {...}}`, ...) as DynamoDB's JSON protocol writes it."""
    ((kind, inner),) = value.items()
    if kind == "M":
        return {"M": {name: wire_value(member) for name, member in inner.items()}}
    if kind == "L":
        return {"L": [wire_value(member) for member in inner]}
    if kind == "B":
        return {"B": _base64(inner)}
    if kind == "BS":
        return {"BS": [_base64(member) for member in inner]}
    if kind in _TEXT:
        return {kind: _text(inner)}
    if kind in _TEXT_SETS:
        return {kind: [_text(member) for member in inner]}
    return {kind: inner}  # BOOL, NULL


def _text(value: Any) -> Any:
    # As moto's `_serialize_type_string`: numbers are strings on the wire.
    return str(value) if value not in (None, {}, []) else value


def _base64(value: str | bytes) -> str:
    # As moto's own `ResponseSerializer._base64`.
    raw = value.encode("utf-8") if isinstance(value, str) else value
    return base64.b64encode(raw).strip().decode("utf-8")


StructureWriter = Callable[[Any, dict[str, Any], Any, Any, str], None]


def _direct(original: StructureWriter) -> StructureWriter:
    def _serialize_type_structure(
        self: Any, serialized: dict[str, Any], value: Any, shape: Any, key: str
    ) -> None:
        if shape.name != ATTRIBUTE_VALUE_SHAPE or not isinstance(value, dict) or len(value) != 1:
            original(self, serialized, value, shape, key)
        elif key:
            serialized[self.get_serialized_name(shape, key)] = wire_value(value)
        else:
            serialized.update(wire_value(value))

    return _serialize_type_structure


def fix_moto_attribute_values() -> None:
    """Install once (moto's original is kept as `moto_serialize_type_structure`, for the tests)."""
    parameters = ("self", "serialized", "value", "shape", "key")
    replace(serialize.BaseJSONSerializer, "_serialize_type_structure", parameters, _direct, by=__name__)
