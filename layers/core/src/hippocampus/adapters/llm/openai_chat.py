"""Any OpenAI-compatible chat-completions endpoint, through the official SDK.

The SDK costs ~0.4 s to import, so it is loaded on the first call, never at module import: only the
condenser pays for it, and only when it actually condenses.
"""

import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from hippocampus.contracts.errors import ConfigurationError
from hippocampus.contracts.ports import LlmResult
from hippocampus.settings import Settings

if TYPE_CHECKING:
    from openai import OpenAI

SecretReader = Callable[[str], str]

TEMPERATURE = 0.1
MAX_RETRIES = 1  # SQS redelivery is the outer retry
SECRET_MAX_AGE_S = 300
_SECRET_JSON_KEYS = ("api_key", "apiKey", "OPENAI_API_KEY")


class OpenAIChat:
    name = "openai"

    def __init__(
        self,
        *,
        model: str,
        api_key: str | Callable[[], str],
        timeout_s: float,
        base_url: str | None = None,
        max_retries: int = MAX_RETRIES,
    ) -> None:
        self.model = model
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._base_url = base_url
        self._max_retries = max_retries
        self._client: OpenAI | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, secret_reader: SecretReader | None = None) -> "OpenAIChat":
        return cls(
            model=settings.model,
            api_key=api_key_source(settings, secret_reader),
            timeout_s=settings.llm_timeout_s,
            base_url=settings.openai_base_url,
        )

    def client(self) -> "OpenAI":
        """Created once, on first use, and reused (connection pooling across invocations)."""
        with self._lock:
            if self._client is None:
                from openai import OpenAI

                self._client = OpenAI(
                    api_key=self._api_key,
                    base_url=self._base_url,
                    timeout=self._timeout_s,
                    max_retries=self._max_retries,
                )
            return self._client

    def complete(self, system: str, prompt: str) -> LlmResult:
        response = self.client().chat.completions.create(
            model=self.model,
            temperature=TEMPERATURE,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
        )
        text = (response.choices[0].message.content or "") if response.choices else ""
        usage = response.usage
        return LlmResult(
            text=text,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
        )


def api_key_source(settings: Settings, secret_reader: SecretReader | None = None) -> str | Callable[[], str]:
    """The key itself (local use), or a callable reading the secret (cached, so rotation is picked up)."""
    if settings.openai_api_key is not None and settings.openai_api_key.get_secret_value():
        return settings.openai_api_key.get_secret_value()
    secret_name = settings.llm_api_key_secret
    if not secret_name:
        raise ConfigurationError(
            "MEMORY_LLM_PROVIDER=openai needs an API key: set OPENAI_API_KEY (local use) or "
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
