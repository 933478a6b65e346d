"""What the embedding adapters share: the bounds of what one request carries, and unit vectors.

The bounds are in UTF-8 bytes because a token covers at least one character, hence at least one
byte, for every tokenizer these providers use: a text of n bytes is never more than n tokens, so
the limits hold without shipping a tokenizer on the Lambda layer.
"""

import math
from collections.abc import Callable, Iterator, Sequence

from hippocampus.contracts.errors import ConfigurationError

# Both OpenAI's embedding models and Titan Text Embeddings V2 take at most 8,192 tokens per input
# (Titan also 50,000 characters): a longer text is embedded by its beginning instead of failing
# every retry. Lexical scoring still sees the whole text.
MAX_INPUT_BYTES = 8_000
# OpenAI takes at most 2,048 inputs and 300,000 tokens per request; we stay well below both.
MAX_BATCH_TEXTS = 256
MAX_BATCH_BYTES = 250_000
# One attempt of an embedding call (each call is retried once at most). The recall function embeds
# one query on the request path: two attempts and the pause must stay far below API Gateway's 29 s.
EMBEDDING_TIMEOUT_S = 10.0


def clip(text: str, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """`text`, or its longest beginning of at most `max_bytes` UTF-8 bytes (no character split)."""
    encoded = text.encode("utf-8", "replace")
    if len(encoded) <= max_bytes:
        return text
    return encoded[:max_bytes].decode("utf-8", "ignore")


def embed_non_blank(
    texts: Sequence[str], dimensions: int, embed_many: Callable[[list[str]], list[list[float]]]
) -> list[list[float]]:
    """`embed_many` of the clipped texts that hold more than whitespace; all zeros for the others.

    Providers refuse an empty input, and a blank text has nothing to match: it gets the zero vector,
    as with the offline provider, instead of failing its condensation's every retry.
    """
    vectors = [[0.0] * dimensions for _ in texts]
    wanted = [index for index, text in enumerate(texts) if text.strip()]
    for index, vector in zip(wanted, embed_many([clip(texts[i]) for i in wanted]), strict=True):
        vectors[index] = vector
    return vectors


def batches(
    texts: Sequence[str], max_texts: int = MAX_BATCH_TEXTS, max_bytes: int = MAX_BATCH_BYTES
) -> Iterator[list[str]]:
    """Consecutive runs of `texts` (already clipped), each within both bounds, in order."""
    batch: list[str] = []
    size = 0
    for text in texts:
        length = len(text.encode("utf-8", "replace"))
        if batch and (len(batch) >= max_texts or size + length > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(text)
        size += length
    if batch:
        yield batch


def unit(vector: Sequence[float], dimensions: int) -> list[float]:
    """`vector` scaled to length 1, after checking it has `dimensions` finite components.

    OpenAI's own models already answer unit vectors, but other compatible servers (and reduced
    dimensions there) may not, and ranking compares vectors by their dot product.
    """
    if len(vector) != dimensions:
        raise ConfigurationError(
            f"MEMORY_EMBEDDING_DIMENSIONS={dimensions}, but the embedding model answered "
            f"{len(vector)} dimensions: check MEMORY_EMBEDDING_MODEL and that the server honours `dimensions`"
        )
    norm = math.hypot(*vector)
    if not math.isfinite(norm) or norm == 0.0:
        raise ValueError("the embedding model answered a zero or non-finite vector")
    return [float(component) / norm for component in vector]
