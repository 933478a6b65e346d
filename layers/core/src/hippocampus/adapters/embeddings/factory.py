"""`make_embedder` picks the embedding provider of the settings (MEMORY_EMBEDDING_PROVIDER).

Provider modules are imported on demand, so importing this module loads neither openai nor boto3.
"""

from hippocampus.adapters.embeddings.common import EMBEDDING_TIMEOUT_S
from hippocampus.adapters.openai_common import SecretReader
from hippocampus.contracts.names import DEFAULT_BEDROCK_EMBEDDING_MODEL
from hippocampus.contracts.ports import Embedder
from hippocampus.settings import Settings


def make_embedder(
    settings: Settings, secret_reader: SecretReader | None = None, *, timeout_s: float = EMBEDDING_TIMEOUT_S
) -> Embedder | None:
    """The configured provider's embedder, or None for `none` (lexical ranking only).

    Fails fast (ConfigurationError) on a missing OpenAI key, a size the model does not make, or the
    offline model's files missing.
    `timeout_s`: one attempt of a call (each call is retried once at most).
    """
    match settings.embedder:
        case "openai":
            from hippocampus.adapters.embeddings.openai_embeddings import OpenAIEmbedder

            return OpenAIEmbedder.from_settings(settings, secret_reader, timeout_s=timeout_s)
        case "bedrock":
            from hippocampus.adapters.embeddings.bedrock_embeddings import BedrockEmbedder

            return BedrockEmbedder(
                model=settings.embedding_model or DEFAULT_BEDROCK_EMBEDDING_MODEL,
                dimensions=settings.embedding_dimensions,
                timeout_s=timeout_s,
            )
        case "offline":
            from hippocampus.adapters.embeddings.offline import OfflineEmbedder

            return OfflineEmbedder(settings.embedding_dimensions)
        case "hashed":
            from hippocampus.adapters.embeddings.hashed import HashedEmbedder

            return HashedEmbedder(settings.embedding_dimensions)
        case "none":
            return None
