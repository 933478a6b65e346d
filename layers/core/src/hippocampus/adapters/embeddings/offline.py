"""Offline semantic embeddings (MEMORY_EMBEDDING_PROVIDER=offline): WordLlama's static model.

WordLlama (MIT) ships its model inside its PyPI wheel: a 32,000 by 256 table of token vectors
(float16, 16 MB, trained from Llama 2's token embeddings) and Llama 2's tokenizer. A text's
vector is the mean of its tokens' rows, L2-normalised — what `WordLlama.embed` computes. It relates
topics with no word in common ("What instrument does he play?" and "Plays the cello in an
orchestra.": cosine 0.31, against 0.06 at most for six unrelated facts), but seldom a question to
its answer: "How should I contact him?" and "Prefers SMS over email." score 0.05, hardly above
unrelated facts (0.02 at most). Nothing is downloaded: the files are read from where the wheel
installed them (the stack's `embeddings` layer carries only these two files, docs/configuration.md).

No numpy (WordLlama's own inference needs it, ~40 MB and its import on every cold start): the
table is memory-mapped and a row is unpacked with `struct` when a token first needs it, so a
function pays for the rows its texts use, not for loading the table. The tokenizer is Hugging
Face's `tokenizers` (Rust): loading it takes ~50 ms, once per process, on the first text.
"""

import functools
import importlib.util
import json
import math
import mmap
import operator
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from hippocampus.adapters.embeddings.common import embed_non_blank
from hippocampus.contracts.errors import ConfigurationError
from hippocampus.contracts.names import (
    DEFAULT_EMBEDDING_DIMENSIONS,
    OFFLINE_EMBEDDING_DIMENSIONS,
    OFFLINE_EMBEDDING_MODEL,
)

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# Where the wheel of wordllama==0.4.0.post1 (layers/embeddings/requirements.txt) puts its model.
MODEL_PACKAGE: Final = "wordllama"
WEIGHTS_FILE: Final = "weights/l2_supercat_256.safetensors"
TOKENIZER_FILE: Final = "tokenizers/l2_supercat_tokenizer_config.json"
WEIGHTS_TENSOR: Final = "embedding.weight"
# Token rows kept decoded per process, the most used first: a decoded row is a tuple of 256 floats,
# ~8 KB, so 2,048 of them take ~17 MB; a hit saves the unpack, ~6 us of the ~15 us a token costs.
CACHED_ROWS: Final = 2_048


def model_folder() -> Path:
    """The folder of the model's files, found without importing the package (whose code needs numpy)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / WEIGHTS_FILE).is_file() and (Path(folder) / TOKENIZER_FILE).is_file():
            return Path(folder)
    raise ConfigurationError(
        "MEMORY_EMBEDDING_PROVIDER=offline needs the model files of wordllama==0.4.0.post1 "
        "(in AWS the stack's embeddings layer carries them; locally `make venv` installs them): "
        "install them, or set MEMORY_EMBEDDING_PROVIDER=hashed (no model) or none"
    )


class TokenTable:
    """The safetensors file's one float16 matrix, memory-mapped; rows decoded on first use."""

    def __init__(self, path: Path) -> None:
        with path.open("rb") as file:
            self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        (header_size,) = struct.unpack_from("<Q", self._map, 0)
        tensor = json.loads(self._map[8 : 8 + header_size])[WEIGHTS_TENSOR]
        if tensor["dtype"] != "F16" or len(tensor["shape"]) != 2:
            raise ConfigurationError(
                f"{path}: expected a 2-d F16 tensor, found {tensor['dtype']} {tensor['shape']}"
            )
        self.rows, self.width = tensor["shape"]
        self._start = 8 + header_size + tensor["data_offsets"][0]
        self._row = struct.Struct(f"<{self.width}e")
        if len(self._map) < self._start + self.rows * self._row.size:  # cut short: fail now, not mid-query
            raise ConfigurationError(f"{path}: {len(self._map)} bytes, too short for its {self.rows} rows")

    @functools.lru_cache(maxsize=CACHED_ROWS)  # noqa: B019 -- one table per process, kept for its life
    def row(self, token: int) -> tuple[float, ...]:
        """Token `token`'s vector (an out-of-range id is clamped, as WordLlama does)."""
        token = min(max(token, 0), self.rows - 1)
        return self._row.unpack_from(self._map, self._start + token * self._row.size)


@functools.cache
def load_model(folder: Path) -> tuple["Tokenizer", TokenTable]:
    """The tokenizer and the token table, once per process (both are read-only)."""
    from tokenizers import Tokenizer  # the Rust extension: imported by the first text only

    tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer, TokenTable(folder / WEIGHTS_FILE)


class OfflineEmbedder:
    """The `Embedder` of the offline provider: WordLlama's mean-pooled token vectors.

    `dimensions` below 256 keeps each vector's first components, which the model was trained to
    make a smaller embedding of their own (Matryoshka), then normalises them again.
    """

    provider = "offline"
    model = OFFLINE_EMBEDDING_MODEL

    def __init__(self, dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS, folder: Path | None = None) -> None:
        if dimensions not in OFFLINE_EMBEDDING_DIMENSIONS:
            sizes = ", ".join(map(str, OFFLINE_EMBEDDING_DIMENSIONS))
            raise ConfigurationError(
                f"MEMORY_EMBEDDING_DIMENSIONS={dimensions}: the offline model makes {sizes} dimensions"
            )
        self.dimensions = dimensions
        self._folder = folder or model_folder()  # a missing model fails the cold start, not a request

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """A unit vector per text, in order (all zeros for a blank text: it matches nothing)."""
        return embed_non_blank(texts, self.dimensions, self._embed_many)

    def _embed_many(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        tokenizer, table = load_model(self._folder)
        encodings = tokenizer.encode_batch(texts, add_special_tokens=False)
        return [self._pooled(encoding.ids, table) for encoding in encodings]

    def _pooled(self, tokens: Sequence[int], table: TokenTable) -> list[float]:
        total = [0.0] * self.dimensions
        for token in tokens:
            total = list(map(operator.add, total, table.row(token)[: self.dimensions]))
        norm = math.sqrt(math.sumprod(total, total))
        return [value / norm for value in total] if norm else total
