"""Deterministic, dependency-free embeddings (MEMORY_EMBEDDING_PROVIDER=hashed): feature hashing.

No model and no package: it joins word variants, not meanings (the `offline` provider's static
model does that, adapters/embeddings/offline.py).

Each text's features are its words' Snowball stems ("payments" and "payment" share one) and the
character trigrams of each stem, with boundary marks ("<pa", "pay", "ay>"), so word variants that
stemming does not join ("paying" → "pay", "payment") still land close. Every feature is hashed
with blake2b — the same in every process, unlike Python's salted hash() — to one of `dimensions`
slots with a sign, so collisions cancel out on average instead of adding up; the sum is
L2-normalised. No numpy: a few hundred floats per text.

The stems are lexical ranking's (domain/recall/lexical.py): both take their tokens from
hippocampus.contracts.words.
"""

import hashlib
import math
from collections.abc import Iterator, Sequence
from typing import Final

from hippocampus.contracts import words
from hippocampus.contracts.names import DEFAULT_EMBEDDING_DIMENSIONS, HASHED_EMBEDDING_MODEL

# A stem's trigrams together weigh as much as the stem itself: "payment" and "paying" (stems
# "payment", "pay") then have a cosine of 0.2 where unrelated words have ~0; on LoCoMo 0.25, 0.5
# and 1 ranked alike (within a point of recall), and 1 brings variants closest.
TRIGRAM_WEIGHT: Final = 1.0


def features(text: str) -> Iterator[tuple[str, float]]:
    """(feature, weight) pairs of a text: each stem, then its trigrams sharing TRIGRAM_WEIGHT."""
    for stem in words.tokens(text):
        yield "w:" + stem, 1.0
        marked = f"<{stem}>"
        trigrams = [marked[start : start + 3] for start in range(len(marked) - 2)]
        weight = TRIGRAM_WEIGHT / math.sqrt(len(trigrams))  # the trigrams' joint norm: TRIGRAM_WEIGHT
        for trigram in trigrams:
            yield "c:" + trigram, weight


class HashedEmbedder:
    """The `Embedder` of the hashed provider: the same vector for the same text, everywhere."""

    provider = "hashed"
    model = HASHED_EMBEDDING_MODEL

    def __init__(self, dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS) -> None:
        if dimensions < 1:
            raise ValueError(f"dimensions must be positive, got {dimensions}")
        self.dimensions = dimensions
        self._slots: dict[str, tuple[int, float]] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """A unit vector per text, in order (all zeros for a text with no words: it matches nothing)."""
        return [self._embed_one(text) for text in texts]

    def _embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for feature, weight in features(text):
            slot, sign = self._slot(feature)
            vector[slot] += sign * weight
        norm = math.sqrt(math.sumprod(vector, vector))
        return [value / norm for value in vector] if norm else vector

    def _slot(self, feature: str) -> tuple[int, float]:
        """The feature's slot and sign, from 8 bytes of blake2b (cached: vocabularies repeat)."""
        cached = self._slots.get(feature)
        if cached is None:
            if len(self._slots) >= 100_000:
                self._slots.clear()
            digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
            cached = self._slots[feature] = (
                (digest >> 1) % self.dimensions,
                1.0 if digest & 1 else -1.0,
            )
        return cached
