"""Plain JSON values in requests (metadata): their compact size, and the validator that bounds them."""

import json
import math
from typing import Any

from pydantic import AfterValidator

from hippocampus.contracts.limits import MAX_METADATA_DEPTH


def compact_json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _check_json_value(value: Any, depth: int = 1) -> None:
    """Plain JSON only: bounded nesting (it is echoed back in every read) and finite numbers."""
    if depth > MAX_METADATA_DEPTH:
        raise ValueError(f"must be nested at most {MAX_METADATA_DEPTH} levels deep")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("numbers must be finite (no NaN or Infinity)")
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        _check_json_value(child, depth + 1)


def max_json_bytes(limit: int) -> AfterValidator:
    def check(value: dict[str, Any]) -> dict[str, Any]:
        _check_json_value(value)
        if compact_json_size(value) > limit:
            raise ValueError(f"must be at most {limit} bytes as compact JSON")
        return value

    return AfterValidator(check)
