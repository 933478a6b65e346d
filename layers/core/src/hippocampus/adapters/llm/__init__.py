"""LLM providers behind the `LanguageModel` port; `make_language_model` picks one from the settings.

Provider modules are imported on demand, so importing this package loads neither openai nor boto3.
"""

from collections.abc import Callable

from hippocampus.contracts.ports import LanguageModel
from hippocampus.settings import Settings


def make_language_model(
    settings: Settings, secret_reader: Callable[[str], str] | None = None
) -> LanguageModel:
    """Build the configured provider's model; fail fast (ConfigurationError) on a missing key."""
    match settings.provider:
        case "openai":
            from hippocampus.adapters.llm.openai_chat import OpenAIChat

            return OpenAIChat.from_settings(settings, secret_reader)
        case "bedrock":
            from hippocampus.adapters.llm.bedrock import BedrockChat

            return BedrockChat(model=settings.model, timeout_s=settings.llm_timeout_s)
        case "offline":
            from hippocampus.adapters.llm.offline import OfflineModel

            return OfflineModel(max_words=settings.max_words)


__all__ = ["make_language_model"]
