"""Hybrid ranking of one user's facts, episodes and current records for a query (recall:
`memory/query`, `memory/context`), all three alike.

Semantics (docs/api.md "Recall"):

- Filters first: `metadata_filters` keep the documents whose metadata has, for every filter key,
  the filter's value, or one of its values when it is a list (IN). A record has no metadata, so
  any filter leaves records out. The lexical statistics (idf, average length) are those of the
  filtered documents.
- semantic = cosine similarity of the query vector and the document's (unit) vector, clipped to [0, 1].
- lexical = BM25 of the document's plain text, normalised to [0, 1] (hippocampus.domain.recall.lexical).
- relevance = alpha * semantic + (1 - alpha) * lexical: alpha = 1 is semantic only, alpha = 0
  lexical only. A document without a vector (None, or a vector of another size; the caller passes
  None for a vector of another model), or every document when the query has no vector, uses its
  lexical score in place of the semantic part: it is ranked lexically, at any alpha. An episode
  is scored with its date terms and embedded with its date in words (domain/recall/dates.py).
- Neighbours: an episode's relevance is pulled NEIGHBOUR_PULL of the way up to its more relevant
  neighbour's, when that one is more relevant (relevance += 0.6 * (neighbour - relevance)). Its
  neighbours are the episodes just before and after it in their order (`place`: when each
  happened, then when accepted, then its place in its request), at most NEIGHBOUR_GAP apart: the
  same conversation. A question's answer is often the turn after the one its words match ("what
  did she recommend?" matches the question turn, the recommendation is the reply). Facts and
  records have no neighbours.
- recency = 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS) from `updated_at` (a fact's last change, an
  episode's occurred_at, a record's valid_from; 1 now, 0.5 after 30 days, a future time counts
  as now); score = (1 - recency_bias) * relevance + recency_bias * recency, in [0, 1].
- With recency_bias = 0, a document of zero relevance (after the pull) is left out: nothing that
  shares neither a word, nor a meaning, nor a conversation with the query is returned.
  With recency_bias > 0 every filtered document can be returned (recency_bias = 1: newest first).
- Order: score descending, then updated_at descending, then id (and type); the first top_k.

DEFAULT_ALPHA = 0.5 and NEIGHBOUR_PULL = 0.6, from LoCoMo (bench/bench_recall_quality.py, all ten
conversations, 1,536 questions, recall@10 of the evidence turns, the offline model's vectors; the
sweep with the turns' dates in words in their text, before the date terms): no pull 0.646, pull
0.3 0.687, 0.5 0.708, 0.6 0.712, 0.7 0.713, 0.8 0.710; at pull 0.6, alpha 0 (lexical alone)
0.702, 0.4 0.711, 0.5 0.712, 0.6 0.708. With the date terms: alpha 0 0.701, 0.3 0.710, 0.5 0.715,
0.7 0.696. Both were chosen on this
benchmark, so its figure flatters them a little; the neighbours' gain is broad (every pull from 0.3
to 0.8 adds 4-7 points) and an additive bonus or two neighbours each side measured alike. Tried and
dropped, each against 0.712 or its equivalent without the pull: pseudo-relevance feedback (the
query moved toward its top 3: -0.3 points), reciprocal rank fusion instead of the blend (-8),
stopwords left out of the vectors (-0.3), the corpus's mean vector taken out of every vector
(+0.4), the query's words joined by their nearest words of the corpus by the model (+0.1), a
bonus of the best score of the same conversation (session-level aggregation: +0.4 to +0.8 of
recall@10, none of recall@5). None is worth a rule of its own.

Cost, pure Python (no numpy on the layer), one core of a 2-core AMD EPYC, CPU time, for 2,200
documents (82,400 words) with 256-dimension vectors: ~18 ms when the same user is ranked again
(tokens cached), ~45 ms for a new user on a warm function (its words' stems already known), ~140 ms
for the first query of a process (stemming ~7,000 distinct words once, ~17 µs each in pure
Python). The vectors take ~5.5 ms of it; the rest is tokenizing and BM25.
"""

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from hippocampus.contracts.recall import DocumentType
from hippocampus.domain.recall.dates import with_query_dates
from hippocampus.domain.recall.lexical import lexical_scores

DEFAULT_ALPHA: Final = 0.5
NEIGHBOUR_PULL: Final = 0.6
NEIGHBOUR_GAP: Final = timedelta(minutes=30)
RECENCY_HALF_LIFE_DAYS: Final = 30.0
_SECONDS_PER_DAY: Final = 86_400.0


@dataclass(frozen=True)
class Document:
    """A fact, an episode or a record, as ranked: its plain text (markdown already rendered) and vector."""

    type: DocumentType
    id: str
    text: str
    metadata: Mapping[str, Any]  # a record's: empty
    # What recency counts from: a fact's updated_at, an episode's occurred_at, a record's valid_from.
    updated_at: datetime
    vector: Sequence[float] | None  # None, or of another model: lexical only for this document
    # What BM25 scores, when more than `text`: an episode's text and its date terms (dates.searched).
    searched: str | None = None
    # An episode's place among the user's episodes (EpisodePlace: when it happened, when it was
    # accepted, its place in its request): its neighbours are the episodes beside it in this order.
    place: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Ranked:
    document: Document
    score: float  # in [0, 1]


def matches(metadata: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    """Every filter key is in `metadata` with the filter's value, or one of its values (a list: IN)."""
    for key, wanted in filters.items():
        if key not in metadata:
            return False
        value = metadata[key]
        if isinstance(wanted, list | tuple):
            if not any(_same(value, option) for option in wanted):
                return False
        elif not _same(value, wanted):
            return False
    return True


def _same(value: Any, wanted: Any) -> bool:
    # True == 1 in Python; a filter on a boolean must not match a number, nor the reverse.
    if isinstance(value, bool) or isinstance(wanted, bool):
        return value is wanted
    return bool(value == wanted)


def unit(vector: Sequence[float]) -> list[float]:
    """The vector scaled to length 1 (a zero vector stays zero)."""
    norm = math.hypot(*vector)
    return [value / norm for value in vector] if norm else list(vector)


def cosine(unit_query: Sequence[float], vector: Sequence[float]) -> float:
    """Cosine similarity of a unit query vector and a stored vector, clipped to [0, 1].

    Stored vectors are unit length (the `Embedder` port; the adapters normalise what a model
    answers), so the cosine is their dot product: no norm to compute per document (a third of
    the vector cost). A vector packed with a small loss only moves its score by as much."""
    return max(0.0, min(1.0, math.sumprod(unit_query, vector)))


def recency(updated_at: datetime, now: datetime) -> float:
    """1 for a document updated now (or later), halving every RECENCY_HALF_LIFE_DAYS."""
    age_days = max(0.0, (now - updated_at).total_seconds() / _SECONDS_PER_DAY)
    return float(0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS))


def relevance(lexical: float, document: Document, unit_query: Sequence[float] | None, alpha: float) -> float:
    """The blend of one document's semantic and lexical scores (lexical for both without a vector)."""
    vector = document.vector
    if unit_query is None or vector is None or len(vector) != len(unit_query):
        return lexical
    return alpha * cosine(unit_query, vector) + (1 - alpha) * lexical


def rank(
    query: str,
    query_vector: Sequence[float] | None,
    documents: Sequence[Document],
    *,
    alpha: float,
    recency_bias: float,
    now: datetime,
    top_k: int,
    filters: Mapping[str, Any] | None = None,
) -> list[Ranked]:
    """The top_k documents for the query, best first (the module docstring gives the semantics)."""
    _check_unit("alpha", alpha)
    _check_unit("recency_bias", recency_bias)
    candidates = [doc for doc in documents if matches(doc.metadata, filters)] if filters else documents
    texts = [doc.text if doc.searched is None else doc.searched for doc in candidates]
    lexical = lexical_scores(with_query_dates(query), texts)
    unit_query = unit(query_vector) if query_vector is not None else None
    relevances = [
        relevance(lexical_score, doc, unit_query, alpha)
        for doc, lexical_score in zip(candidates, lexical, strict=True)
    ]
    results: list[Ranked] = []
    for doc, score in zip(candidates, pulled_by_neighbours(candidates, relevances), strict=True):
        if recency_bias:
            score = (1 - recency_bias) * score + recency_bias * recency(doc.updated_at, now)
        elif score <= 0.0:
            continue
        results.append(Ranked(doc, max(0.0, min(1.0, score))))
    results.sort(key=_order)
    return results[: max(0, top_k)]


def pulled_by_neighbours(documents: Sequence[Document], relevances: Sequence[float]) -> list[float]:
    """Each episode's relevance pulled toward its more relevant neighbour's (module docstring)."""
    pulled = list(relevances)
    episodes = sorted(
        (index for index, doc in enumerate(documents) if doc.type == "episode"),
        key=lambda index: documents[index].place or (documents[index].updated_at, documents[index].id),
    )
    for before, after in itertools.pairwise(episodes):
        if documents[after].updated_at - documents[before].updated_at > NEIGHBOUR_GAP:
            continue  # another conversation
        for index, neighbour in ((before, after), (after, before)):
            lift = NEIGHBOUR_PULL * (relevances[neighbour] - relevances[index])
            pulled[index] = max(pulled[index], relevances[index] + lift)
    return pulled


def _order(ranked: Ranked) -> tuple[float, float, str, str]:
    document = ranked.document
    return (-ranked.score, -document.updated_at.timestamp(), document.id, document.type)


def _check_unit(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, got {value}")
