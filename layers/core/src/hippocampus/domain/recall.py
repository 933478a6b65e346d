"""Recall (the recall function): rank a user's facts and episodes for a query, and build the
context block an application prepends to its prompt (docs/api.md "Recall").

Per user the corpus is small (at most 200 facts and MEMORY_MAX_EPISODES episodes), so it is read
in one pass over the user's partition and ranked here (docs/architecture.md "Recall").
"""

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from hippocampus.contracts.models import Fact
from hippocampus.contracts.ports import Embedder, Tracing
from hippocampus.contracts.recall import (
    ContextRequest,
    ContextResponse,
    ContextSource,
    Episode,
    QueryRequest,
    QueryResponse,
    QueryResult,
    Retrieval,
)
from hippocampus.contracts.recall_ports import Corpus, Indexed, RecallStore
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.context_block import build_context
from hippocampus.domain.indexing import model_key
from hippocampus.domain.lexical import plain_text
from hippocampus.domain.ranking import DEFAULT_ALPHA, Document, Ranked, rank
from hippocampus.observability import MetricName, logger, record_metric

# The most documents the context block considers: more could never fit 2,000 words.
CONTEXT_CANDIDATES = 50


class RecallService:
    def __init__(
        self,
        store: RecallStore,
        embedder: Callable[[], Embedder | None],
        tracing: Tracing,
        clock: Clock = utc_now,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._tracing = tracing
        self._clock = clock

    def query(self, tenant_id: str, user_id: str, request: QueryRequest) -> QueryResponse:
        corpus = self._corpus(tenant_id, user_id)
        documents = [*corpus.facts, *corpus.episodes]
        wanted = [entry for entry in documents if _type(entry.document) in request.types]
        ranked, lexical_only = self._rank(
            request.query, wanted, request.top_k, request, request.metadata_filters
        )
        record_metric(MetricName.QUERIES)
        embedder = self._embedder()
        return QueryResponse(
            memory=corpus.state.memory if request.include_memory else None,
            version=corpus.state.version,
            results=[_result(entry, by_key) for entry, by_key in _with_sources(ranked, documents)],
            retrieval=Retrieval(
                embedding_provider=embedder.provider if embedder else "none",
                model=embedder.model if embedder else None,
                lexical_only=lexical_only,
            ),
        )

    def context(self, tenant_id: str, user_id: str, request: ContextRequest) -> ContextResponse:
        corpus = self._corpus(tenant_id, user_id)
        if request.query is None:
            # Without a question: the summary, then the facts, newest first.
            facts = sorted(corpus.facts, key=_time, reverse=True)
            ranked = [Ranked(_document(entry, None), 1.0) for entry in facts]
        else:
            query = QueryRequest(query=request.query, top_k=CONTEXT_CANDIDATES)
            ranked, _ = self._rank(
                request.query, [*corpus.facts, *corpus.episodes], CONTEXT_CANDIDATES, query, {}
            )
        block = build_context(corpus.state.memory, ranked, request.max_words)
        # Ranked episodes are keyed by job (item ids may repeat); a source names the item.
        item_ids = {
            entry.document.job_id: entry.document.id
            for entry in corpus.episodes
            if isinstance(entry.document, Episode)
        }
        sources = [
            ContextSource(
                type=source["type"],
                id=item_ids.get(source["id"], source["id"])
                if source["type"] == "episode"
                else source.get("id"),
            )
            for source in block.sources
        ]
        return ContextResponse(
            context=block.text,
            word_count=block.word_count,
            memory_version=corpus.state.version,
            sources=sources,
        )

    def _corpus(self, tenant_id: str, user_id: str) -> Corpus:
        with self._tracing.span("dynamodb.read_corpus", tenant_id=tenant_id):
            return self._store.corpus(tenant_id, user_id)

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
        self,
        text: str,
        entries: Sequence[Indexed],
        top_k: int,
        request: QueryRequest,
        filters: Mapping[str, Any],
    ) -> tuple[list[Ranked], bool]:
        embedder = self._embedder()
        model = model_key(embedder) if embedder else None
        query_vector = self._query_vector(embedder, text)
        documents = [_document(entry, model) for entry in entries]
        ranked = rank(
            text,
            query_vector,
            documents,
            alpha=DEFAULT_ALPHA if request.alpha is None else request.alpha,
            recency_bias=request.recency_bias,
            now=self._clock(),
            top_k=top_k,
            filters=filters or None,
        )
        lexical_only = query_vector is None or not any(document.vector for document in documents)
        return ranked, lexical_only


def _time(entry: Indexed) -> datetime:
    document = entry.document
    return document.updated_at if isinstance(document, Fact) else document.created_at


def _type(document: Fact | Episode) -> str:
    return "fact" if isinstance(document, Fact) else "episode"


def _document(entry: Indexed, model: str | None) -> Document:
    """The document ranked: plain text (markdown rendered), the vector only if of `model`."""
    document = entry.document
    text = f"{document.title}\n{document.text}" if document.title else document.text
    vector = entry.vector.values if entry.vector is not None and entry.vector.model == model else None
    return Document(
        type="fact" if isinstance(document, Fact) else "episode",
        id=document.id if isinstance(document, Fact) else document.job_id,
        text=plain_text(text) if document.is_markdown else text,
        metadata=document.metadata,
        updated_at=_time(entry),
        vector=vector,
    )


def _with_sources(ranked: list[Ranked], entries: Sequence[Indexed]) -> list[tuple[Ranked, Fact | Episode]]:
    by_key = {
        (_type(e.document), e.document.id if isinstance(e.document, Fact) else e.document.job_id): e.document
        for e in entries
    }
    return [(entry, by_key[(entry.document.type, entry.document.id)]) for entry in ranked]


def _result(entry: Ranked, source: Fact | Episode) -> QueryResult:
    if isinstance(source, Fact):
        created_at = updated_at = source.updated_at
    else:
        created_at = updated_at = source.created_at
    return QueryResult(
        type=entry.document.type,
        id=source.id,
        text=source.text,
        title=source.title,
        score=round(entry.score, 6),
        metadata=source.metadata,
        additional_metadata=source.additional_metadata,
        created_at=created_at,
        updated_at=updated_at,
    )
