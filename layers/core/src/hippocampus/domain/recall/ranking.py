"""Hybrid ranking of one user's facts, episodes and current records for a query (recall:
`memory/query`, `memory/context`), all three alike.

Semantics (docs/api.md "Recall"):

- Filters first: `metadata_filters` keep the documents whose metadata has, for every filter key,
  the filter's value, or one of its values when it is a list (IN). A record has no metadata, so
  any filter leaves records out. The lexical statistics (idf, average length) are those of the
  filtered documents.
- semantic = cosine similarity of the query vector and the document's (unit) vector, clipped to
  [0, 1]. An episode's vector is read with its context: its own plus those of the episodes one
  and two places away among the episodes with a vector (in the order of the neighbour pull below),
  each if it is at most NEIGHBOUR_GAP from it, weighted CONTEXT_WEIGHTS (1, 0.5, 0.25). "By text." alone means little; after "How should I contact
  him?" it answers the question.
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
0.7 0.696. The context weights, measured with the pull at 0.6 and alpha 0.5: none 0.715, one
neighbour each side at 0.3 0.717, at 0.5 0.721, at 1.0 0.720; two each side at 0.5 and 0.25
0.725 (recall@5 0.631 to 0.638), at 0.7 and 0.35 0.724, three at 0.5, 0.25, 0.12 0.723; the
neighbours' cosines averaged instead (no vector summed) 0.720; the conversation's mean vector
added 0.725. All were chosen on this
benchmark, so its figure flatters them a little; the neighbours' gain is broad (every pull from 0.3
to 0.8 adds 4-7 points) and an additive bonus or two neighbours each side measured alike. Tried and
dropped, each against 0.712 or its equivalent without the pull: pseudo-relevance feedback (the
query moved toward its top 3: -0.3 points), reciprocal rank fusion instead of the blend (-8),
stopwords left out of the vectors (-0.3), the corpus's mean vector taken out of every vector
(+0.4), the query's words joined by their nearest words of the corpus by the model (+0.1), a
bonus of the best score of the same conversation (session-level aggregation: +0.4 to +0.8 of
recall@10, none of recall@5). None is worth a rule of its own. Against today's 0.725 (lexical
alone 0.701): relative score fusion, each query's cosines rescaled to [0, 1] between its lowest and
highest (Weaviate's hybrid), 0.729 (+0.6 on conversations 1-5, +0.3 on 6-10), dropped because a
score would no longer say how close the best match is, and `min_score` could not leave an unrelated
query's results out; the same scaled by the best cosine (which keeps that meaning) 0.724; the
model's mean token direction projected out of every vector (all-but-the-top) 0.723; tokens weighted
by their id as a frequency rank (smooth inverse frequency) 0.722-0.725; the episode's own cosine
when above its context's 0.718; the query's stopwords left out of its vector 0.721; the turns
embedded without their date 0.725. Then, with vectors a byte a dimension (0.725 still; alpha 0.3
0.715, 0.7 0.726): relative score fusion at alpha 0.4 and 0.6 0.725, so its 0.729 at 0.5 is a
narrow peak; the same with the range's top at least a cosine of 0.5 (an unrelated query's best
match not lifted to 1) 0.729 at alpha 0.5 and 0.726 at 0.4 and 0.6, at least 0.7 0.727, 0.9 0.725;
each query's cosines less their mean, over 1 less it, 0.726 (less their lowest 0.724); lexical
scores divided by the larger of the best and a floor of 3, 6 or 9 (a weak lexical match then
weighs less against a close vector) 0.725, or of 0.3 or 0.6 of an ideal document's score 0.724;
the offline model's token vectors max-pooled instead of averaged 0.707, both concatenated 0.716.

Cost, pure Python (no numpy on the layer), one core of a 2-core AMD EPYC, CPU time, for 2,200
documents (82,400 words) with 256-dimension vectors (`bench/bench_recall_quality.py` prints it):
~22 ms when the same user is ranked again (tokens cached), ~45 ms for a new user on a warm function
(its words' stems already known). The first query of a process stems ~7,000 distinct words once,
with Snowball's C stemmers (PyStemmer, ~1.6 µs a word): 105-166 ms, against 253-431 ms with the
pure-Python stemmer it replaced, interleaved on a slower day (the same user again: 29-38 ms). The
vectors take ~5.5 ms of it, and the episodes' contexts ~4 ms more when they are
kept (`_contexts`), ~30 ms when made (up to four dot products of vectors per episode); the rest is
tokenizing and BM25.
"""

import itertools
import math
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from hippocampus.contracts.models import Episode
from hippocampus.contracts.recall import DocumentType
from hippocampus.contracts.recall_ports import CODE_ZERO, Indexed, StoredContext, Vector
from hippocampus.domain.recall.dates import with_query_dates
from hippocampus.domain.recall.lexical import lexical_scores

DEFAULT_ALPHA: Final = 0.5
NEIGHBOUR_PULL: Final = 0.6
# An episode's vector, as its semantic score sees it, is its own (weight 1) plus its neighbours'
# one and two places away in the same conversation (0.5, 0.25): a turn's meaning is in its context.
CONTEXT_WEIGHTS: Final = (1.0, 0.5, 0.25)
NEIGHBOUR_GAP: Final = timedelta(minutes=30)
# What a stored context was made under: one made with other weights or another gap is made again.
CONTEXT_RULES: Final = f"{CONTEXT_WEIGHTS}/{NEIGHBOUR_GAP.total_seconds():g}"
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
    vector: Vector | None  # None, or of another model: lexical only for this document
    # What BM25 scores, when more than `text`: an episode's text and its date terms (dates.searched).
    searched: str | None = None
    # An episode's place among the user's episodes (EpisodePlace: when it happened, when it was
    # accepted, its place in its request, its job): its neighbours are the episodes beside it in this order.
    place: tuple[Any, ...] = ()
    # An episode's context as stored with the copy of the user's episodes, of this vector's model:
    # its length is not computed again while its neighbours are the same episodes.
    context: StoredContext | None = None


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


def dot_products(unit_query: Sequence[float], vectors: Sequence[Vector | None]) -> list[float | None]:
    """The query's dot product with each stored vector (None: none, or another size).

    Stored vectors are unit length (the `Embedder` port; the adapters normalise what a model
    answers), so a dot product is the cosine: no norm to compute per document. The products take
    the codes as they are, Σ q·(code - CODE_ZERO)·scale = (Σ q·code - CODE_ZERO·Σ q)·scale, so no
    vector's values are made (contracts/recall_ports.py `Vector`)."""
    size = len(unit_query)
    offset = CODE_ZERO * math.fsum(unit_query)
    return [
        (math.sumprod(unit_query, vector.codes) - offset) * vector.scale
        if vector is not None and vector.dimensions == size
        else None
        for vector in vectors
    ]


def _product(first: Vector | None, second: Vector | None) -> float:
    """The dot product of two stored vectors (0 without either), from their codes: Σ (a - Z)(b - Z)
    = Σ a·b - Z·(Σ a + Σ b) + n·Z², with Z = CODE_ZERO."""
    if first is None or second is None:
        return 0.0
    codes = math.sumprod(first.codes, second.codes) - CODE_ZERO * (first.code_sum + second.code_sum)
    return (codes + CODE_ZERO * CODE_ZERO * first.dimensions) * first.scale * second.scale


def recency(updated_at: datetime, now: datetime) -> float:
    """1 for a document updated now (or later), halving every RECENCY_HALF_LIFE_DAYS."""
    age_days = max(0.0, (now - updated_at).total_seconds() / _SECONDS_PER_DAY)
    return float(0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS))


def relevance(lexical: float, semantic: float | None, alpha: float) -> float:
    """The blend of one document's semantic and lexical scores (lexical for both without a vector)."""
    return lexical if semantic is None else alpha * semantic + (1 - alpha) * lexical


def semantic_scores(
    documents: Sequence[Document], unit_query: Sequence[float] | None, order: Sequence[int] | None = None
) -> list[float | None]:
    """Each document's semantic score (None without a usable vector): the cosine of the query and
    its vector; for an episode, of the query and its vector with its neighbours' added, weighted by
    CONTEXT_WEIGHTS (module docstring). `order`: the episodes' indexes in their order
    (`episode_order`). The cosine with a sum of vectors is the weighted sum of the query's dot
    products with each, over the sum's length, which depends on the episodes only (`_contexts`)."""
    if unit_query is None:
        return [None] * len(documents)
    dots = dot_products(unit_query, [doc.vector for doc in documents])
    scores = [None if dot is None else max(0.0, min(1.0, dot)) for dot in dots]
    ordered = [
        index for index in (episode_order(documents) if order is None else order) if dots[index] is not None
    ]
    for position, (window, inverse_length) in enumerate(_contexts([documents[index] for index in ordered])):
        along = sum(weight * (dots[ordered[position + offset]] or 0.0) for offset, weight in window)
        scores[ordered[position]] = max(0.0, min(1.0, along * inverse_length))
    return scores


Window = tuple[tuple[int, float], ...]  # (offset among the ordered episodes, weight), itself first
_REACH: Final = len(CONTEXT_WEIGHTS) - 1  # how many places away a window reaches


@dataclass(frozen=True, eq=False)  # one sequence is itself only (`_RECENT.remove`)
class _Contexts:
    """The windows of one ordered sequence of episodes, and where each episode is in it."""

    episodes: tuple["weakref.ref[Document]", ...]  # not kept alive: a dead one is a changed place
    places: dict[int, int]  # id(episode) -> its position (checked against `episodes`)
    windows: list[tuple[Window, float]]


# The last sequences ranked, newest last. A warm function ranks the same user's episodes again (the
# same objects: service.py's documents, adapters/episode_cache.py), often with a turn added at the
# end or one trimmed at the start: only the windows that reach a change are made again (a window's
# length takes up to 15 dot products of vectors). A few users' worth, of windows only.
_RECENT: list[_Contexts] = []
_RECENT_KEPT: Final = 16


def _contexts(episodes: Sequence[Document]) -> list[tuple[Window, float]]:
    """Each episode's window (itself and its neighbours with a vector, one and two places away in the
    same conversation) and 1 / the length of its weighted vector sum."""
    before, shift = _previous(episodes)
    stale = _stale(episodes, before, shift)
    # A pair's dot product serves up to four windows: by distance (0 to 4 places), then first place.
    pairs = _pairs(len(episodes))
    windows = [
        _stored_or_made(episodes, position, pairs)
        if stale[position] or before is None
        else before.windows[position + shift]
        for position in range(len(episodes))
    ]
    if before is not None:
        _RECENT.remove(before)
    if episodes:
        places = {id(episode): position for position, episode in enumerate(episodes)}
        _RECENT.append(_Contexts(tuple(weakref.ref(episode) for episode in episodes), places, windows))
        del _RECENT[:-_RECENT_KEPT]
    return windows


def _previous(episodes: Sequence[Document]) -> tuple["_Contexts | None", int]:
    """The sequence ranked before that shares episodes with this one, and how far they moved in it."""
    probes = {0, len(episodes) // 2, len(episodes) - 1} if episodes else set()
    for before in reversed(_RECENT):
        for position in probes:
            place = before.places.get(id(episodes[position]))
            if place is not None and before.episodes[place]() is episodes[position]:
                return before, place - position
    return None, 0


def _stale(episodes: Sequence[Document], before: "_Contexts | None", shift: int) -> list[bool]:
    """Whether each position's window must be made again: it reaches a place where this sequence and
    `before` (moved by `shift`) differ, its end included."""
    if before is None:
        return [True] * len(episodes)
    old = before.episodes

    def differs(position: int) -> bool:
        inside, was_inside = 0 <= position < len(episodes), 0 <= position + shift < len(old)
        if not inside or not was_inside:
            return inside != was_inside
        return episodes[position] is not old[position + shift]()

    stale = [False] * len(episodes)
    for position in range(-_REACH, len(episodes) + _REACH):
        if differs(position):
            for near in range(max(0, position - _REACH), min(len(episodes), position + _REACH + 1)):
                stale[near] = True
    return stale


def stored_contexts(episodes: Sequence[Indexed], model: str) -> list[StoredContext | None]:
    """The context of each of a user's episodes with a vector of `model` (None for the others), for
    the stored copy of the episodes (adapters/episode_snapshots.py): a first query of the user
    computes none of them again while their neighbours are the same episodes (`_stored_or_made`)."""
    ordered = sorted(
        (
            Document(
                "episode",
                entry.document.id,
                "",
                {},
                entry.document.occurred_at,
                entry.vector,
                place=entry.document.place,
            )
            for entry in episodes
            if isinstance(entry.document, Episode)
            and entry.vector is not None
            and entry.vector.model == model
        ),
        key=lambda document: document.place,
    )
    pairs = _pairs(len(ordered))
    by_job = {
        document.place[-1]: _stored(model, ordered, position, _context(ordered, position, pairs))
        for position, document in enumerate(ordered)
    }
    return [
        by_job.get(entry.document.place.job_id) if isinstance(entry.document, Episode) else None
        for entry in episodes
    ]


def _stored(
    model: str, episodes: Sequence[Document], position: int, context: tuple[Window, float]
) -> StoredContext:
    window, inverse_length = context
    offsets = tuple(offset for offset, _ in window)
    return StoredContext(model, CONTEXT_RULES, _neighbours(episodes, position), offsets, inverse_length)


def _stored_or_made(
    episodes: Sequence[Document], position: int, pairs: list[list[float | None]]
) -> tuple[Window, float]:
    """An episode's window and length as stored, when the same episodes surround it (they decide
    both: their vectors and their times); else made."""
    stored = episodes[position].context
    if (
        stored is not None
        and stored.rules == CONTEXT_RULES
        and stored.neighbours == _neighbours(episodes, position)
    ):
        window = tuple((offset, CONTEXT_WEIGHTS[abs(offset)]) for offset in stored.offsets)
        return window, stored.inverse_length
    return _context(episodes, position, pairs)


def _neighbours(episodes: Sequence[Document], position: int) -> tuple[str | None, ...]:
    """The jobs of the episodes 2 and 1 places before `position` and 1 and 2 after (None: none
    there): an episode's job is unique to it, and the last of its place."""
    count = len(episodes)
    return (
        _job(episodes[position - 2]) if position >= 2 else None,
        _job(episodes[position - 1]) if position >= 1 else None,
        _job(episodes[position + 1]) if position + 1 < count else None,
        _job(episodes[position + 2]) if position + 2 < count else None,
    )


def _job(episode: Document) -> str | None:
    return episode.place[-1] if episode.place else None


def _pairs(count: int) -> list[list[float | None]]:
    """Room for the dot products of `count` episodes' vectors with those up to 4 places after."""
    return [[None] * count for _ in range(2 * _REACH + 1)]


def _members(episodes: Sequence[Document], position: int) -> list[tuple[int, float]]:
    """The places of an episode's window and their weights: itself, then its neighbours one and two
    places away in the same conversation."""
    here = episodes[position]
    members = [(position, CONTEXT_WEIGHTS[0])]
    for distance, weight in enumerate(CONTEXT_WEIGHTS[1:], start=1):
        for other in (position - distance, position + distance):
            if 0 <= other < len(episodes) and _same_conversation(here, episodes[other]):
                members.append((other, weight))
    return members


def _context(
    episodes: Sequence[Document], position: int, pairs: list[list[float | None]]
) -> tuple[Window, float]:
    members = _members(episodes, position)
    # |Σ w·v|²: each vector's weighted square (1 for a unit vector, 0 for a zero one) plus twice
    # each pair's weights times its dot product (written out: this runs for every episode of a
    # user ranked for the first time, up to 15 products each).
    squared = 0.0
    for index, (first, first_weight) in enumerate(members):
        for second, second_weight in members[index:]:
            low, high = (first, second) if first <= second else (second, first)
            row = pairs[high - low]
            dot = row[low]
            if dot is None:
                dot = row[low] = _product(episodes[low].vector, episodes[high].vector)
            squared += first_weight * second_weight * (dot if low == high else 2 * dot)
    window = tuple((other - position, weight) for other, weight in members)
    return window, 1 / math.sqrt(squared) if squared > 0 else 0.0


def _same_conversation(first: Document, second: Document) -> bool:
    return abs(first.updated_at - second.updated_at) <= NEIGHBOUR_GAP


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
    order = episode_order(candidates)
    semantic = semantic_scores(candidates, unit_query, order)
    relevances = [
        relevance(lexical_score, semantic_score, alpha)
        for semantic_score, lexical_score in zip(semantic, lexical, strict=True)
    ]
    results: list[Ranked] = []
    for doc, score in zip(candidates, pulled_by_neighbours(candidates, relevances, order), strict=True):
        if recency_bias:
            score = (1 - recency_bias) * score + recency_bias * recency(doc.updated_at, now)
        elif score <= 0.0:
            continue
        results.append(Ranked(doc, max(0.0, min(1.0, score))))
    results.sort(key=_order)
    return results[: max(0, top_k)]


def pulled_by_neighbours(
    documents: Sequence[Document], relevances: Sequence[float], order: Sequence[int] | None = None
) -> list[float]:
    """Each episode's relevance pulled toward its more relevant neighbour's (module docstring);
    `order`: the episodes' indexes in their order (`episode_order`)."""
    pulled = list(relevances)
    for before, after in itertools.pairwise(episode_order(documents) if order is None else order):
        if documents[after].updated_at - documents[before].updated_at > NEIGHBOUR_GAP:
            continue  # another conversation
        for index, neighbour in ((before, after), (after, before)):
            lift = NEIGHBOUR_PULL * (relevances[neighbour] - relevances[index])
            pulled[index] = max(pulled[index], relevances[index] + lift)
    return pulled


def episode_order(documents: Sequence[Document]) -> list[int]:
    """The indexes of the episodes among `documents`, in their order (`place`)."""
    return sorted(
        (index for index, doc in enumerate(documents) if doc.type == "episode"),
        key=lambda index: documents[index].place or (documents[index].updated_at, documents[index].id),
    )


def _order(ranked: Ranked) -> tuple[float, float, str, str]:
    document = ranked.document
    return (-ranked.score, -document.updated_at.timestamp(), document.id, document.type)


def _check_unit(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, got {value}")
