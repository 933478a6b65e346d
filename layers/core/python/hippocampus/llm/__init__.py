"""LLM providers behind the `LlmProvider` port; `make_provider` picks one from the settings.

Provider modules are imported on demand, so importing this package loads neither openai nor boto3.
"""

from collections.abc import Callable

from hippocampus.ports import LlmProvider
from hippocampus.settings import ConfigurationError, Settings

# The settings default model is an OpenAI one; Bedrock needs its own model id.
_OPENAI_DEFAULT_MODEL = "gpt-4o-mini"


def make_provider(settings: Settings, secret_reader: Callable[[str], str] | None = None) -> LlmProvider:
    """Build the configured provider; fail fast (ConfigurationError) on a missing key or model."""
    match settings.provider:
        case "openai":
            from hippocampus.llm.openai_provider import OpenAIProvider

            return OpenAIProvider.from_settings(settings, secret_reader)
        case "bedrock":
            from hippocampus.llm.bedrock import BedrockProvider

            if settings.llm_model == _OPENAI_DEFAULT_MODEL:
                raise ConfigurationError(
                    "MEMORY_LLM_MODEL must be set to a Bedrock model id when MEMORY_LLM_PROVIDER=bedrock"
                )
            return BedrockProvider(model=settings.llm_model, timeout_s=settings.llm_timeout_s)
        case "offline":
            from hippocampus.llm.offline import OfflineProvider

            return OfflineProvider(max_words=settings.max_words)


__all__ = ["make_provider"]
