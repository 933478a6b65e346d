"""Recall (the recall function): rank a user's facts, episodes and current records for a query,
and build the context block an application prepends to its prompt (docs/api.md "Recall").

Per user the corpus is small (at most 200 facts, MEMORY_MAX_EPISODES episodes and
MEMORY_MAX_RECORDS records), so it is read in one pass over the user's partition and ranked here
(docs/architecture.md "Recall").
"""

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from hippocampus.contracts.models import Fact
from hippocampus.contracts.ports import Embedder, Tracing
from hippocampus.contracts.recall import (
    ContextRequest,
    ContextResponse,
    ContextSource,
    DocumentType,
    Episode,
    QueryRequest,
    QueryResponse,
    QueryResult,
    Retrieval,
    ScopeName,
    TimeRange,
)
from hippocampus.contracts.recall_ports import Corpus, Indexed, RecallStore
from hippocampus.contracts.records import MemoryRecord
from hippocampus.contracts.scopes import split_scope
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.privacy.masking import Masker
from hippocampus.domain.recall.context_block import build_context
from hippocampus.domain.recall.dates import searched
from hippocampus.domain.recall.indexing import model_key
from hippocampus.domain.recall.lexical import plain_text
from hippocampus.domain.recall.ranking import DEFAULT_ALPHA, Document, Ranked, rank
from hippocampus.observability import MetricName, logger, record_metric

# The most documents the context block considers: more could never fit 2,000 words.
CONTEXT_CANDIDATES = 50

# What a ranked document is: a fact, an episode or a record of the user.
Source = Fact | Episode | MemoryRecord


@dataclass(frozen=True)
class _Ranking:
    """How one answer ranks its documents (docs/api.md "Recall")."""

    top_k: int
    alpha: float = DEFAULT_ALPHA
    recency_bias: float = 0.0
    filters: Mapping[str, Any] = field(default_factory=dict)


class RecallService:
    def __init__(
        self,
        store: RecallStore,
        embedder: Callable[[], Embedder | None],
        tracing: Tracing,
        clock: Clock = utc_now,
        masker: Masker | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._tracing = tracing
        self._clock = clock
        self._masker = masker
        self._documents = _DocumentMemo()

    def query(self, tenant_id: str, user_id: str, request: QueryRequest) -> QueryResponse:
        """`user_id` is a scope key: an agent's query searches the user's shared memory and the
        agent's own (docs/api.md "Agent scopes")."""
        text, filters = self._masked(tenant_id, user_id, [request.query, request.metadata_filters])
        searched = self._searched(tenant_id, user_id)
        corpus = searched.corpus
        everything = _within(request.time_range, (*corpus.facts, *corpus.episodes, *corpus.records))
        wanted = [entry for entry in everything if _type(entry.document) in request.types]
        alpha = DEFAULT_ALPHA if request.alpha is None else request.alpha
        ranking = _Ranking(request.top_k, alpha, request.recency_bias, filters)
        ranked, lexical_only = self._rank(text, wanted, ranking)
        record_metric(MetricName.QUERIES)
        embedder = self._embedder()
        return QueryResponse(
            memory=corpus.state.memory if request.include_memory else None,
            version=corpus.state.version,
            results=[
                searched.scoped(_result(entry, source), source)
                for entry, source in ranked
                if entry.score >= request.min_score
            ],
            retrieval=Retrieval(
                embedding_provider=embedder.provider if embedder else "none",
                model=embedder.model if embedder else None,
                lexical_only=lexical_only,
            ),
            shared_version=searched.shared_version,
        )

    def context(self, tenant_id: str, user_id: str, request: ContextRequest) -> ContextResponse:
        searched = self._searched(tenant_id, user_id)
        corpus = searched.corpus
        if request.time_range is not None:
            corpus = Corpus(
                corpus.state,
                _within(request.time_range, corpus.facts),
                _within(request.time_range, corpus.episodes),
                _within(request.time_range, corpus.records),
            )
        if request.query is None:
            # Without a question: the summary, then the facts, then the current records, newest first.
            facts = sorted(corpus.facts, key=lambda entry: _time(entry.document), reverse=True)
            # A record's id begins with when it was recorded: the later of two as old comes first.
            records = sorted(
                corpus.records, key=lambda entry: (_time(entry.document), entry.document.id), reverse=True
            )
            pairs = [(Ranked(_document(entry, None), 1.0), entry.document) for entry in (*facts, *records)]
        else:
            [text] = self._masked(tenant_id, user_id, [request.query])
            entries = [*corpus.facts, *corpus.episodes, *corpus.records]
            pairs, _ = self._rank(text, entries, _Ranking(CONTEXT_CANDIDATES))
        block = build_context(corpus.state.memory, searched.qualified(pairs), request.max_words)
        return ContextResponse(
            context=block.text,
            word_count=block.word_count,
            memory_version=corpus.state.version,
            sources=[searched.source(source) for source in block.sources],
            shared_memory_version=searched.shared_version,
        )

    def _searched(self, tenant_id: str, user_id: str) -> "_Searched":
        """The corpus a request searches: its scope's; for an agent's scope, the user's shared
        corpus and the agent's together (the summary: the shared one, then the agent's)."""
        user, agent_id = split_scope(user_id)
        if agent_id is None:
            return _Searched(self._corpus(tenant_id, user_id), {}, None)
        shared, own = self._corpus(tenant_id, user), self._corpus(tenant_id, user_id)
        scope_of: dict[int, ScopeName] = {}
        named: tuple[tuple[ScopeName, Corpus], ...] = (("shared", shared), ("agent", own))
        for name, corpus in named:
            for entry in (*corpus.facts, *corpus.episodes, *corpus.records):
                scope_of[id(entry.document)] = name
        summaries = [
            text.strip() for text in (shared.state.memory, own.state.memory) if text and text.strip()
        ]
        state = replace(own.state, memory="\n\n".join(summaries) or None)
        merged = Corpus(
            state,
            [*shared.facts, *own.facts],
            [*shared.episodes, *own.episodes],
            [*shared.records, *own.records],
        )
        return _Searched(merged, scope_of, shared.state.version)

    def _masked(self, tenant_id: str, user_id: str, parts: list[Any]) -> list[Any]:
        """The query's parts (its text, its metadata filters) as the stored memory spells them: with
        masking, their values become the user's placeholders before anything is embedded or
        compared (docs/architecture.md "PII masking")."""
        if self._masker is None:
            return parts
        with self._tracing.span("pii.mask", tenant_id=tenant_id):
            masked: list[Any] = self._masker.mask_query(tenant_id, user_id, parts)
            return masked

    def _corpus(self, tenant_id: str, user_id: str) -> Corpus:
        embedder = self._embedder()
        with self._tracing.span("dynamodb.read_corpus", tenant_id=tenant_id):
            return self._store.corpus(tenant_id, user_id, model_key(embedder) if embedder else None)

    def _query_vector(self, embedder: Embedder | None, text: str) -> list[float] | None:
        """The query's vector; None without a model, or when the provider fails: the answer is
        then ranked by words alone (`lexical_only`), never an error."""
        if embedder is None:
            return None
        try:
            with self._tracing.span("embedding.query"):
                return embedder.embed([text])[0]
        except Exception as error:
            record_metric(MetricName.QUERY_EMBEDDING_FAILED)
            logger.warning(
                "query embedding failed; ranked by words", extra={"error_type": type(error).__name__}
            )
            return None

    def _rank(
        self, text: str, entries: Sequence[Indexed], ranking: _Ranking
    ) -> tuple[list[tuple[Ranked, Source]], bool]:
        """The top documents with the fact, episode or record each one is, and whether no vector
        took part."""
        embedder = self._embedder()
        model = model_key(embedder) if embedder else None
        query_vector = self._query_vector(embedder, text)
        documents = [self._documents.document(entry, model) for entry in entries]
        # `rank` hands back the documents it was given: each one's source by identity.
        sources = {id(document): entry.document for document, entry in zip(documents, entries, strict=True)}
        ranked = rank(
            text,
            query_vector,
            documents,
            alpha=ranking.alpha,
            recency_bias=ranking.recency_bias,
            now=self._clock(),
            top_k=ranking.top_k,
            filters=ranking.filters or None,
        )
        lexical_only = query_vector is None or not any(document.vector for document in documents)
        return [(entry, sources[id(entry.document)]) for entry in ranked], lexical_only


# A ranked document's id on an agent's route, `<scope>/<id>` (no id holds a `/`): the same id may be
# in both scopes, and the context block names its sources by id.
_SCOPE_MARK = "/"


@dataclass(frozen=True)
class _Searched:
    corpus: Corpus
    scope_of: Mapping[int, ScopeName]  # each document's scope, by identity (empty: a user's route)
    shared_version: int | None  # an agent's route: the shared memory's version

    def scoped(self, result: QueryResult, source: Source) -> QueryResult:
        scope = self.scope_of.get(id(source))
        return result.model_copy(update={"scope": scope}) if scope else result

    def qualified(self, pairs: Sequence[tuple[Ranked, Source]]) -> list[Ranked]:
        """The ranked documents; on an agent's route, each id with its scope (see `source`)."""
        if not self.scope_of:
            return [item for item, _ in pairs]
        return [
            Ranked(
                replace(item.document, id=f"{self.scope_of[id(source)]}{_SCOPE_MARK}{item.document.id}"),
                item.score,
            )
            for item, source in pairs
        ]

    def source(self, source: Mapping[str, str]) -> ContextSource:
        """A source of the context block; on an agent's route with its scope (the summary, which
        joins both scopes' summaries, has none)."""
        item_id = source.get("id")
        if self.scope_of and item_id is not None:
            scope, _, plain = item_id.partition(_SCOPE_MARK)
            return ContextSource.model_validate({**source, "id": plain, "scope": scope})
        return ContextSource.model_validate(source)


def _time(document: Source) -> datetime:
    """What recency counts from: a fact's last change, when an episode's turn happened, or since
    when a record is true."""
    if isinstance(document, Fact):
        return document.updated_at
    if isinstance(document, MemoryRecord):
        return document.valid_from
    return document.occurred_at


def _type(document: Source) -> DocumentType:
    if isinstance(document, Fact):
        return "fact"
    return "record" if isinstance(document, MemoryRecord) else "episode"


class _DocumentMemo:
    """Each episode's ranked document, for as long as its entry lives: a warm function's copy of a
    user's episodes hands back the same entries (adapters/episode_cache.py), and making their
    documents again (the date terms, markdown as text) cost ~10 ms a query for 2,000 episodes. A
    fact or a record is read anew for each query: its document is made each time."""

    def __init__(self) -> None:
        # By the entry's identity, while it lives (its weak reference drops the document with it,
        # before its id can be reused): the memo holds no more than the episodes' copy does.
        self._by_entry: dict[int, tuple[weakref.ref[Indexed], str | None, Document]] = {}

    def document(self, entry: Indexed, model: str | None) -> Document:
        if not isinstance(entry.document, Episode):
            return _document(entry, model)
        key = id(entry)
        kept = self._by_entry.get(key)
        if kept is not None and kept[0]() is entry and kept[1] == model:
            return kept[2]
        made = _document(entry, model)
        self._by_entry[key] = (weakref.ref(entry, lambda _: self._by_entry.pop(key, None)), model, made)
        return made


def _document(entry: Indexed, model: str | None) -> Document:
    """The document ranked: plain text (markdown rendered), the vector only if of `model`."""
    document = entry.document
    vector = entry.vector if entry.vector is not None and entry.vector.model == model else None
    if isinstance(document, MemoryRecord):  # plain text, no title, no metadata: any filter leaves it out
        return Document("record", document.id, document.text, {}, document.valid_from, vector)
    text = f"{document.title}\n{document.text}" if document.title else document.text
    text = plain_text(text) if document.is_markdown else text
    if isinstance(document, Fact):
        return Document("fact", document.id, text, document.metadata, document.updated_at, vector)
    return Document(
        type="episode",
        id=document.id,
        text=text,
        metadata=document.metadata,
        updated_at=document.occurred_at,
        vector=vector,
        searched=searched(text, document.occurred_at),
        place=document.place,
        context=entry.context
        if vector is not None and entry.context and entry.context.model == model
        else None,
    )


def _result(entry: Ranked, source: Source) -> QueryResult:
    score = round(entry.score, 6)
    if isinstance(source, MemoryRecord):
        return QueryResult(
            type="record",
            id=source.id,
            text=source.text,
            score=score,
            metadata={},
            additional_metadata={},
            created_at=source.recorded_at,
            updated_at=source.recorded_at,
            occurred_at=source.valid_from,
            category=source.category,
            valid_from=source.valid_from,
            valid_to=source.valid_to,
        )
    return QueryResult(
        type=entry.document.type,
        id=source.id,
        text=source.text,
        title=source.title,
        score=score,
        metadata=source.metadata,
        additional_metadata=source.additional_metadata,
        created_at=source.updated_at if isinstance(source, Fact) else source.created_at,
        updated_at=source.updated_at if isinstance(source, Fact) else source.created_at,
        occurred_at=None if isinstance(source, Fact) else source.occurred_at,
    )


def _within(time_range: TimeRange | None, entries: Sequence[Indexed]) -> list[Indexed]:
    """Those that happened in the range (docs/api.md "Query"): an episode by its `occurred_at`, a
    record by its validity; a fact says nothing of when, and is left out of a dated question."""
    if time_range is None:
        return list(entries)
    kept: list[Indexed] = []
    for entry in entries:
        document = entry.document
        if isinstance(document, MemoryRecord):
            if time_range.overlaps(document.valid_from, document.valid_to):
                kept.append(entry)
        elif isinstance(document, Episode) and time_range.holds(document.occurred_at):
            kept.append(entry)
    return kept
