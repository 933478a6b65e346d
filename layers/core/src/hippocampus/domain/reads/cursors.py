"""Opaque page cursors: a position as URL-safe base64 of compact JSON, refused unless well formed."""

import base64
import json
from typing import Any

from hippocampus.contracts.errors import ValidationFailed


def encode_position(position: list[Any]) -> str:
    raw = json.dumps(position, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_position(cursor: str, shape: tuple[type, ...]) -> list[Any]:
    """The position a cursor holds, of the types `shape`; 422 naming `cursor` for anything else."""
    try:
        position = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError):  # binascii.Error is a ValueError
        position = None
    valid = (
        isinstance(position, list)
        and len(position) == len(shape)
        and all(type(value) is kind for value, kind in zip(position, shape, strict=True))
    )
    if not valid:
        raise invalid_cursor()
    return list(position)


def invalid_cursor() -> ValidationFailed:
    return ValidationFailed(
        "cursor is not one this service gave",
        [{"field": "cursor", "message": "not a cursor of this list", "type": "value_error"}],
    )
