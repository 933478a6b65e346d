"""The identifier rule of the API, checked before any request (docs/api.md "Routes", identifiers).

Tenant, user, item, fact, job and agent ids match one pattern. The client refuses anything else
itself: an id such as `..` must never reach a URL, where an HTTP library would resolve it as a
dot segment and send the request to another route (client/README.md, "Identifiers").
"""

import re

from .errors import InvalidInputError

IDENTIFIER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$"
IDENTIFIER = re.compile(IDENTIFIER_PATTERN)


def check_identifier(field: str, value: object) -> str:
    """`value` when it is a valid identifier; else `InvalidInputError` naming `field`."""
    if isinstance(value, str) and IDENTIFIER.fullmatch(value):
        return value
    shown = repr(value) if isinstance(value, str) and len(value) <= 40 else type(value).__name__
    raise InvalidInputError(
        f"{field} must be 1-128 characters of letters, digits and . _ @ : - starting with a letter "
        f"or digit; got {shown}",
        details=[{"field": field, "message": "not a valid identifier", "type": "identifier"}],
    )
