"""Limits of the API (docs/api.md "Limits"): identifiers, item sizes, facts per user, body size, history."""

from typing import Final

IDENTIFIER_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$"

MAX_ITEMS: Final = 100
MAX_PAIRS: Final = 50
MAX_TEXT_CHARS: Final = 32_000
MAX_METADATA_BYTES: Final = 16 * 1024
MAX_ADDITIONAL_METADATA_BYTES: Final = 1024
MAX_CUSTOM_INSTRUCTIONS_CHARS: Final = 2_000
MAX_USER_NAME_CHARS: Final = 128
MAX_TITLE_CHARS: Final = 256
MAX_FACTS_PER_USER: Final = 200
MAX_BODY_BYTES: Final = 1024 * 1024
# Facts come back in every read: together they must fit Lambda's 6 MB response with room to spare.
MAX_FACT_BYTES_PER_USER: Final = 4 * 1024 * 1024
MAX_METADATA_DEPTH: Final = 32
MAX_HISTORY_LIMIT: Final = 100
DEFAULT_HISTORY_LIMIT: Final = 20
MAX_IDEMPOTENCY_KEY_CHARS: Final = 256
# One page of an export stays under Lambda's 6 MB response limit, whatever it escapes.
EXPORT_PAGE_BYTES: Final = 4 * 1024 * 1024
MAX_CURSOR_CHARS: Final = 1024
# How far ahead of the API's clock an item's `occurred_at` may be (clocks of callers drift).
MAX_OCCURRED_AT_AHEAD_S: Final = 5 * 60
