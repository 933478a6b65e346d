"""Any OpenAI-compatible chat-completions endpoint, through the official SDK.

The SDK costs ~0.4 s to import, so it is loaded on the first call, never at module import: only the
condenser pays for it, and only when it actually condenses.
"""

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hippocampus.adapters.llm.attempts import call_in_time
from hippocampus.adapters.openai_common import (
    SECRET_MAX_AGE_S,
    SecretReader,
    api_key_source,
    is_transient,
    key_from_secret,
    read_secret,
)
from hippocampus.adapters.sdk_clients import Lazy, openai_client
from hippocampus.contracts.ports import LlmResult
from hippocampus.observability import logger
from hippocampus.settings import Settings

if TYPE_CHECKING:
    from openai import OpenAI

# The key and secret helpers moved to adapters/openai_common.py (shared with the embeddings); their
# old import path keeps working.
__all__ = [
    "SECRET_MAX_AGE_S",
    "OpenAIChat",
    "SecretReader",
    "api_key_source",
    "key_from_secret",
    "read_secret",
]

TEMPERATURE = 0.1
# The name OpenAI's structured outputs give the schema of an answer.
SCHEMA_NAME = "structured_answer"
MAX_RETRIES = 1  # SQS redelivery is the outer retry
# An attempt can be shortened to fit the time left, but not below this: it could hardly succeed.
MIN_ATTEMPT_S = 1.0


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
        self._client: Lazy[OpenAI] = Lazy(lambda: openai_client(api_key, base_url, timeout_s))
        # False once the model or server refused structured outputs: this process asks in text.
        self._structured = True

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
        return self._client()

    def complete(
        self,
        system: str,
        prompt: str,
        timeout_s: float | None = None,
        schema: Mapping[str, Any] | None = None,
    ) -> LlmResult:
        # Structured outputs in strict mode: the model's answer follows the schema.
        extra: dict[str, Any] = {}
        if schema is not None and self._structured:
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": SCHEMA_NAME, "schema": dict(schema), "strict": True},
            }

        def attempt(seconds: float) -> Any:
            return self.client().chat.completions.create(
                model=self.model,
                temperature=TEMPERATURE,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                timeout=seconds,
                **extra,
            )

        try:
            response = call_in_time(
                attempt,
                attempt_timeout_s=self._timeout_s,
                timeout_s=timeout_s,
                retries=self._max_retries,
                is_transient=is_transient,
                min_attempt_s=min(MIN_ATTEMPT_S, self._timeout_s),
            )
        except Exception as error:
            if not extra or not refuses_structured_outputs(error):
                raise
            # An older model, or a server that only claims compatibility: ask again in text, and from
            # now on (its plain answer is the summary alone: docs/architecture.md "Records").
            logger.warning("structured outputs refused; asking in text", extra={"model": self.model})
            self._structured = False
            return self.complete(system, prompt, timeout_s, schema)
        return _result(response)


def _result(response: Any) -> LlmResult:
    """Text and usage of a completion; a reply without choices, message or content is empty text.

    Servers that merely claim compatibility send such replies with a 200, and the SDK does not
    validate them: the condenser tells an empty answer from a real one.
    """
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    content = getattr(message, "content", None)
    usage = getattr(response, "usage", None)
    return LlmResult(
        text=content if isinstance(content, str) else "",
        prompt_tokens=getattr(usage, "prompt_tokens", None) or 0,
        completion_tokens=getattr(usage, "completion_tokens", None) or 0,
    )


def refuses_structured_outputs(error: Exception) -> bool:
    """A 400 whose message names the structured-output request (`response_format`, `json_schema`)."""
    status = getattr(error, "status_code", None)
    text = str(error).lower()
    return status == 400 and ("response_format" in text or "json_schema" in text)
