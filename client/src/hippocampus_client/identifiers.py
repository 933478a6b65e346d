"""The identifier rule of the API, checked before any request (docs/api.md "Routes", identifiers).

Tenant, user, item, fact, job and agent ids match one pattern. The client refuses anything else
itself: an id such as `..` must never reach a URL, where an HTTP library would resolve it as a
dot segment and send the request to another route (client/README.md, "Identifiers").
"""

import re

from .errors import ConfigurationError, InvalidInputError

IDENTIFIER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$"
IDENTIFIER = re.compile(IDENTIFIER_PATTERN)


def is_identifier(value: object) -> bool:
    # fullmatch: `$` alone would also accept a trailing newline, which the API refuses.
    return isinstance(value, str) and IDENTIFIER.fullmatch(value) is not None


def check_identifier(field: str, value: object) -> str:
    """`value` when it is a valid identifier; else `InvalidInputError` naming `field`."""
    if is_identifier(value):
        return str(value)
    shown = repr(value) if isinstance(value, str) and len(value) <= 40 else type(value).__name__
    raise InvalidInputError(
        f"{field} must be 1-128 characters of letters, digits and . _ @ : - starting with a letter "
        f"or digit; got {shown}",
        details=[{"field": field, "message": "not a valid identifier", "type": "identifier"}],
    )


def check_tenant(value: str) -> str:
    """The client's tenant, checked once when the client is made: a `ConfigurationError` if invalid."""
    return _check_setting("tenant", value)


def check_agent(value: object) -> str:
    """The client's agent (docs/api.md "Agent scopes"), checked once when the client is made, as
    the tenant is: a `ConfigurationError` if invalid."""
    return _check_setting("agent", value)


def _check_setting(name: str, value: object) -> str:
    try:
        return check_identifier(name, value)
    except InvalidInputError as error:
        raise ConfigurationError(error.message, details=error.details) from None


def loggable_ids(**ids: object) -> str:
    """`name=value` for the logs; a value that is no identifier is not written (it may be content)."""
    return " ".join(f"{name}={value if is_identifier(value) else '<invalid>'}" for name, value in ids.items())
