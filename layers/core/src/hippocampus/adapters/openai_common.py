"""What the OpenAI-compatible adapters (chat and embeddings) share: the API key and the transient errors.

One key for both (OPENAI_API_KEY, or the Secrets Manager secret MEMORY_LLM_API_KEY_SECRET), so a
deployment configures the endpoint once. Nothing here imports the openai SDK at module import.
"""

import json
from collections.abc import Callable

from hippocampus.contracts.errors import ConfigurationError
from hippocampus.settings import Settings

SecretReader = Callable[[str], str]

SECRET_MAX_AGE_S = 300
_SECRET_JSON_KEYS = ("api_key", "apiKey", "OPENAI_API_KEY")
# The statuses the SDK itself would retry (besides connection errors and timeouts).
_TRANSIENT_STATUSES = frozenset({408, 409, 429})


def api_key_source(
    settings: Settings,
    secret_reader: SecretReader | None = None,
    *,
    needed_by: str = "MEMORY_LLM_PROVIDER=openai",
) -> str | Callable[[], str]:
    """The key itself (local use), or a callable reading the secret (cached, so rotation is picked up).

    `needed_by` names the setting that asked for the key, in the error raised when there is none.
    """
    if settings.openai_api_key is not None and settings.openai_api_key.get_secret_value():
        return settings.openai_api_key.get_secret_value()
    secret_name = settings.llm_api_key_secret
    if not secret_name:
        raise ConfigurationError(
            f"{needed_by} needs an API key: set OPENAI_API_KEY (local use) or "
            "MEMORY_LLM_API_KEY_SECRET (name of the Secrets Manager secret holding it)"
        )
    reader = secret_reader or read_secret
    return lambda: key_from_secret(reader(secret_name))


def read_secret(name: str) -> str:
    """Secrets Manager through Powertools parameters, cached for SECRET_MAX_AGE_S."""
    from aws_lambda_powertools.utilities.parameters import get_secret

    value: object = get_secret(name, max_age=SECRET_MAX_AGE_S)
    return value.decode() if isinstance(value, bytes) else str(value)


def key_from_secret(value: str) -> str:
    """The secret is the key itself, or a JSON object holding it under a usual name."""
    value = value.strip()
    if value.startswith("{"):
        try:
            document = json.loads(value)
        except ValueError:
            document = None
        if isinstance(document, dict):
            value = next((str(document[k]).strip() for k in _SECRET_JSON_KEYS if document.get(k)), "")
    if not value:
        raise ConfigurationError("MEMORY_LLM_API_KEY_SECRET: the secret holds no API key")
    return value


def is_transient(error: Exception) -> bool:
    """What the SDK would retry: connection errors, timeouts, 408, 409, 429 and 5xx."""
    import openai

    if isinstance(error, openai.APIConnectionError):  # timeouts included
        return True
    return isinstance(error, openai.APIStatusError) and (
        error.status_code in _TRANSIENT_STATUSES or error.status_code >= 500
    )
