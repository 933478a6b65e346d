"""Amazon Titan Text Embeddings V2 on Bedrock, through `invoke_model` (IAM auth, no API key).

Titan V2 embeds one text per call; each call gets the first attempt and at most one retry, as the
chat adapter's (botocore makes a single attempt: it has no per-call timeout to bound a retry).
"""

import json
from collections.abc import Sequence
from typing import Any

from hippocampus.adapters.embeddings.common import EMBEDDING_TIMEOUT_S, embed_non_blank, unit
from hippocampus.adapters.llm.attempts import call_in_time
from hippocampus.adapters.llm.bedrock import _is_transient as is_transient
from hippocampus.adapters.sdk_clients import Lazy, bedrock_runtime
from hippocampus.contracts.errors import ConfigurationError
from hippocampus.contracts.names import (
    DEFAULT_BEDROCK_EMBEDDING_MODEL,
    DEFAULT_EMBEDDING_DIMENSIONS,
    TITAN_V2_DIMENSIONS,
)

RETRIES = 1
# The only output sizes Titan Text Embeddings V2 offers.


class BedrockEmbedder:
    provider = "bedrock"

    def __init__(
        self,
        *,
        model: str = DEFAULT_BEDROCK_EMBEDDING_MODEL,
        dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS,
        timeout_s: float = EMBEDDING_TIMEOUT_S,
        client: Any = None,
    ) -> None:
        if dimensions not in TITAN_V2_DIMENSIONS:
            # Found at cold start, not at the first embedding: the request body would be refused.
            sizes = ", ".join(map(str, TITAN_V2_DIMENSIONS))
            raise ConfigurationError(
                f"MEMORY_EMBEDDING_DIMENSIONS={dimensions}: Titan Text Embeddings V2 "
                f"(MEMORY_EMBEDDING_PROVIDER=bedrock) offers {sizes} only"
            )
        self.model = model
        self.dimensions = dimensions
        self._timeout_s = timeout_s
        self._client: Lazy[Any] = Lazy(lambda: bedrock_runtime(timeout_s), client)

    def client(self) -> Any:
        """The `bedrock-runtime` client, created once on first use (tests pass a stubbed one)."""
        return self._client()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order (zeros for a blank one); a text over MAX_INPUT_BYTES is
        embedded by its beginning."""
        return embed_non_blank(texts, self.dimensions, lambda wanted: [self._embed_one(t) for t in wanted])

    def _embed_one(self, text: str) -> list[float]:
        body = json.dumps({"inputText": text, "dimensions": self.dimensions, "normalize": True})

        def attempt(_seconds: float) -> Any:
            # The client's read timeout bounds the attempt: botocore cannot shorten one call.
            return self.client().invoke_model(
                modelId=self.model, body=body, contentType="application/json", accept="application/json"
            )

        response = call_in_time(
            attempt,
            attempt_timeout_s=self._timeout_s,
            timeout_s=None,
            retries=RETRIES,
            is_transient=is_transient,
            min_attempt_s=self._timeout_s,
        )
        answer = json.loads(response["body"].read())
        # Titan already normalises (`normalize`); `unit` checks the size and guards against rounding.
        return unit(answer.get("embedding") or [], self.dimensions)
