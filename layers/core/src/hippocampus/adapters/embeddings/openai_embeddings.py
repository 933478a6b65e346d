"""Any OpenAI-compatible `/v1/embeddings` endpoint, through the official SDK.

As for the chat adapter, the SDK (~0.4 s to import) is loaded on the first call, and the adapter
retries once itself instead of leaving it to the SDK: the SDK would sleep as long as a server's
`retry-after` asks, which the recall function, embedding a query on the request path, cannot afford.
"""

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hippocampus.adapters.embeddings.common import EMBEDDING_TIMEOUT_S, batches, embed_non_blank, unit
from hippocampus.adapters.llm.attempts import call_in_time
from hippocampus.adapters.openai_common import SecretReader, api_key_source, is_transient
from hippocampus.adapters.sdk_clients import Lazy, openai_client
from hippocampus.contracts.names import DEFAULT_EMBEDDING_DIMENSIONS, DEFAULT_OPENAI_EMBEDDING_MODEL
from hippocampus.settings import Settings

if TYPE_CHECKING:
    from openai import OpenAI

RETRIES = 1  # SQS redelivery (condenser) or the caller (recall) is the outer retry
MIN_ATTEMPT_S = 1.0


class OpenAIEmbedder:
    provider = "openai"

    def __init__(
        self,
        *,
        api_key: str | Callable[[], str],
        model: str = DEFAULT_OPENAI_EMBEDDING_MODEL,
        dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS,
        timeout_s: float = EMBEDDING_TIMEOUT_S,
        base_url: str | None = None,
        retries: int = RETRIES,
    ) -> None:
        self.model = model
        self.dimensions = dimensions
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._base_url = base_url
        self._retries = retries
        self._client: Lazy[OpenAI] = Lazy(lambda: openai_client(api_key, base_url, timeout_s))

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        secret_reader: SecretReader | None = None,
        timeout_s: float = EMBEDDING_TIMEOUT_S,
    ) -> "OpenAIEmbedder":
        """Same key and endpoint as the chat adapter; ConfigurationError when there is no key."""
        return cls(
            api_key=api_key_source(settings, secret_reader, needed_by="MEMORY_EMBEDDING_PROVIDER=openai"),
            model=settings.embedding_model or DEFAULT_OPENAI_EMBEDDING_MODEL,
            dimensions=settings.embedding_dimensions,
            timeout_s=timeout_s,
            base_url=settings.openai_base_url,
        )

    def client(self) -> "OpenAI":
        """Created once, on first use, and reused (connection pooling across invocations)."""
        return self._client()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order (zeros for a blank one); a text over MAX_INPUT_BYTES is
        embedded by its beginning. Batched within MAX_BATCH_TEXTS and MAX_BATCH_BYTES per request."""
        return embed_non_blank(texts, self.dimensions, self._embed_all)

    def _embed_all(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for batch in batches(texts):
            vectors.extend(self._embed_batch(batch))
        return vectors

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        def attempt(seconds: float) -> Any:
            return self.client().embeddings.create(
                model=self.model,
                input=batch,
                dimensions=self.dimensions,
                # The SDK asks for base64 by default, which not every compatible server speaks.
                encoding_format="float",
                timeout=seconds,
            )

        response = call_in_time(
            attempt,
            attempt_timeout_s=self._timeout_s,
            timeout_s=None,
            retries=self._retries,
            is_transient=is_transient,
            min_attempt_s=min(MIN_ATTEMPT_S, self._timeout_s),
        )
        return self._vectors(response, len(batch))

    def _vectors(self, response: Any, expected: int) -> list[list[float]]:
        """The answer's vectors in input order (by `index`: the API does not promise its order)."""
        data = sorted(getattr(response, "data", None) or [], key=lambda item: int(item.index))
        if [int(item.index) for item in data] != list(range(expected)):
            raise ValueError(f"the embedding server answered {len(data)} vectors for {expected} texts")
        return [unit(item.embedding, self.dimensions) for item in data]
