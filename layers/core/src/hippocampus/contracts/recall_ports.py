"""Ports of recall: the documents (facts, episodes and current records) of a user with their
vectors, as ranked.

Adapters implement them (adapters/dynamodb_recall.py); tests hand in the fakes of tests/support/fakes.py.
"""

import functools
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

from hippocampus.contracts.memory_state import MemoryState
from hippocampus.contracts.models import Episode, Fact
from hippocampus.contracts.records import MemoryRecord

# How far back among a user's episodes the indexer looks for ones without a vector (a condensation
# writes 30 at most; the rest of the history waits for a re-index: docs/operations.md "Recall"),
# and so how far back a store that keeps episodes between queries must expect vectors to arrive.
RECENT_EPISODES: Final = 100


# Value i of a stored vector is (codes[i] - CODE_ZERO) * scale: one unsigned byte a dimension.
CODE_ZERO: Final = 128
_CODE_MAX: Final = 127


@dataclass(frozen=True)
class Vector:
    """A stored embedding, one byte a dimension, and the model (and size) that made it.

    Kept as bytes, not floats: a user's first query in a recall function reads 2,000 episodes'
    vectors, and 512,000 Python floats took ~26 ms to make where the bytes take none (their values
    are Python's cached small ints; domain/recall/ranking.py multiplies them as they are). Each
    value is within scale / 2 of the model's (scale = the largest value / 127): a cosine of two
    256-dimension unit vectors moves by 0.0003 (median; 0.0012 at most of 300 pairs), and recall
    on LoCoMo is the same to three decimals (docs/architecture.md "Recall")."""

    model: str
    codes: bytes
    scale: float

    @classmethod
    def of(cls, model: str, values: Sequence[float]) -> "Vector":
        """The vector of `values`, rounded to a byte a dimension (the scale to a 32-bit float, as
        stored, so a vector read back is the one made)."""
        largest = max(map(abs, values), default=0.0)
        scale = _float32(largest / _CODE_MAX) if largest else 1.0
        # Rounded half up (int() of a positive float is its floor): ~30 µs for 256 values, a third
        # of round(). A 32-bit scale is within 6e-8 of the exact one: the largest stays at 127.
        inverse, shifted = 1 / scale, CODE_ZERO + 0.5
        return cls(model, bytes([int(value * inverse + shifted) for value in values]), scale)

    @property
    def dimensions(self) -> int:
        return len(self.codes)

    @functools.cached_property
    def code_sum(self) -> int:
        """The sum of the codes: what a dot product of two vectors' codes takes back out."""
        return sum(self.codes)


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


@dataclass(frozen=True)
class StoredContext:
    """An episode's context as the condenser made it for the stored copy of the episodes
    (domain/recall/ranking.py `stored_contexts`): 1 / the length of its weighted vector sum with its
    neighbours', which holds while the episodes around it are the same ones."""

    model: str  # of the vectors it was made of
    rules: str  # the weights and gap it was made with (domain/recall/ranking.py CONTEXT_RULES)
    neighbours: tuple[str | None, ...]  # the jobs of the episodes 2 and 1 places before, 1 and 2 after
    offsets: tuple[int, ...]  # of the episodes in its window (itself first), those in its conversation
    inverse_length: float


@dataclass(frozen=True)
class Indexed:
    """A fact, an episode or a record as recall ranks it: the document and its vector, if it has one."""

    document: Fact | Episode | MemoryRecord
    vector: Vector | None
    context: StoredContext | None = None  # an episode's, from the stored copy


# What makes the stored contexts of a user's episodes (in their order) for a model.
ContextMaker = Callable[[Sequence[Indexed], str], list[StoredContext | None]]


@dataclass(frozen=True)
class Corpus:
    """Everything recall ranks for one user, read in one pass over the user's partition."""

    state: MemoryState
    facts: list[Indexed]
    episodes: list[Indexed]
    records: list[Indexed]  # the current ones only (not invalidated)


@dataclass(frozen=True)
class Unindexed:
    """A document without a vector of the current model: where it is, what to embed."""

    kind: str  # "fact", "episode" or "record"
    key: str  # its place in the user's partition
    text: str  # with its title first, if it has one
    version: str  # a fact's updated_at (a replaced fact is not given the old one's vector)
    occurred_at: datetime | None = None  # an episode's: its text is embedded with its date
    is_markdown: bool = False  # embedded as a reader sees it, as it is ranked


class RecallStore(Protocol):
    """The recall side of a user's partition: its documents with their vectors."""

    def corpus(self, tenant_id: str, user_id: str, model: str | None) -> Corpus:
        """The user's documents; `model` is the one whose vectors count (None: no vectors wanted),
        so a store that keeps documents between calls knows which still wait for a vector."""
        ...

    def unindexed(
        self, tenant_id: str, user_id: str, model: str, recent_episodes: int, generation: int | None = None
    ) -> list[Unindexed]:
        """The facts, the current records, and the episodes among the newest `recent_episodes`, of
        the user's `generation` (None: the current one, read) lacking a vector of `model` as
        stored today (one stored in an older form is made again)."""
        ...

    def set_vector(self, tenant_id: str, user_id: str, document: Unindexed, vector: Vector) -> bool:
        """Store it unless the document has gone or changed since it was read (then False): a fact
        replaced, a record invalidated (an invalidated record keeps no vector: it is not ranked)."""
        ...

    def revise_episodes(self, tenant_id: str, user_id: str) -> None:
        """Mark the user's episodes changed in a way their count does not show (old ones given new
        vectors): a copy of them made before is read whole again."""
        ...

    def keep_copy(self, tenant_id: str, user_id: str, model: str | None) -> None:
        """Bring the stored copy of the user's episodes, which a function's first query of the user
        starts from, up to date with the partition (`model`: the one whose vectors count)."""
        ...
