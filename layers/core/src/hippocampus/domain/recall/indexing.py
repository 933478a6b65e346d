"""Vectors of facts and episodes, made off the request path (docs/architecture.md "Recall").

The condenser indexes a user after each condensation, and when ingest asks it to after writing
facts: every current fact, and every episode among the newest RECENT_EPISODES, that has no vector
of the configured model gets one. A failure leaves them lexical-only until the next pass over the
user, which finds them again; the summary never waits for it.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hippocampus.contracts.ports import Embedder
from hippocampus.contracts.recall import IndexMessage
from hippocampus.contracts.recall_ports import RECENT_EPISODES, RecallStore, Unindexed, Vector
from hippocampus.domain.recall.dates import dated
from hippocampus.domain.recall.lexical import plain_text
from hippocampus.observability import MetricName, logger, record_metric

ALL_EPISODES = 10_000  # more than MEMORY_MAX_EPISODES can keep
# Texts per embedding call, so one call stays well inside the provider's request limits.
EMBED_BATCH = 64


# What one more embedding call needs: its attempt and retry, and the vector writes.
INDEX_TIME_MS = 25_000


def embedded_text(document: Unindexed) -> str:
    """What a document's vector is made of: the text recall ranks (markdown as a reader sees it),
    an episode's with its date in words first (domain/recall/dates.py)."""
    text = plain_text(document.text) if document.is_markdown else document.text
    return dated(text, document.occurred_at)


class IndexingCut(Exception):
    """The invocation's time ran short: what is left waits for the next pass over the user."""


def model_key(embedder: Embedder) -> str:
    """What a stored vector records: vectors of another model or size are never compared."""
    return f"{embedder.model}@{embedder.dimensions}"


@dataclass(frozen=True)
class _UserPass:
    """One pass over a user (see `Indexer.index_user`)."""

    tenant_id: str
    user_id: str
    recent_episodes: int
    remaining_ms: Callable[[], int] | None
    generation: int | None

    def out_of_time(self) -> bool:
        return self.remaining_ms is not None and self.remaining_ms() < INDEX_TIME_MS


class Indexer:
    def __init__(self, store: RecallStore, embedder: Callable[[], Embedder | None]) -> None:
        self._store = store
        self._embedder = embedder

    def index_user(
        self,
        tenant_id: str,
        user_id: str,
        recent_episodes: int = RECENT_EPISODES,
        remaining_ms: Callable[[], int] | None = None,
        generation: int | None = None,
    ) -> int:
        """Give the user's unindexed documents a vector, then bring the stored copy of their
        episodes up to date; return how many got a vector. Raises when the embedding provider
        fails, or IndexingCut when the invocation's time (`remaining_ms`) runs short between two
        calls (the caller decides whether that is retried or only logged). `generation`: the one
        the caller just wrote the user's memory at (None: the store reads it)."""
        user_pass = _UserPass(tenant_id, user_id, recent_episodes, remaining_ms, generation)
        embedder = self._embedder()
        # MEMORY_EMBEDDING_PROVIDER=none: lexical ranking only, no vectors to make
        stored = 0 if embedder is None else self._index(user_pass, embedder)
        self._keep_copy(user_pass, model_key(embedder) if embedder else None)
        return stored

    def _index(self, user_pass: _UserPass, embedder: Embedder) -> int:
        model = model_key(embedder)
        due = self._store.unindexed(
            user_pass.tenant_id, user_pass.user_id, model, user_pass.recent_episodes, user_pass.generation
        )
        stored: list[Unindexed] = []
        try:
            for start in range(0, len(due), EMBED_BATCH):
                if user_pass.out_of_time():
                    raise IndexingCut(f"{len(due) - start} documents left for the next pass")
                chunk = due[start : start + EMBED_BATCH]
                vectors = embedder.embed([embedded_text(document) for document in chunk])
                for document, values in zip(chunk, vectors, strict=True):
                    if self._store.set_vector(
                        user_pass.tenant_id, user_pass.user_id, document, Vector.of(model, values)
                    ):
                        stored.append(document)
        except BaseException:
            # Stopped short: what it gave vectors to still makes the copies stale; the reason it
            # stopped is the error to report.
            try:
                self._revise_if_reindexed(user_pass, stored)
            except Exception as error:
                logger.warning("episodes revision not bumped", extra={"error_type": type(error).__name__})
            raise
        self._revise_if_reindexed(user_pass, stored)
        if stored:
            record_metric(MetricName.DOCUMENTS_INDEXED, len(stored))
        return len(stored)

    def _revise_if_reindexed(self, user_pass: _UserPass, stored: list[Unindexed]) -> None:
        """Episodes older than any copy reads again got vectors (a re-index): the copies of the
        user's episodes are stale."""
        if user_pass.recent_episodes > RECENT_EPISODES and any(
            document.kind == "episode" for document in stored
        ):
            self._store.revise_episodes(user_pass.tenant_id, user_pass.user_id)

    def _keep_copy(self, user_pass: _UserPass, model: str | None) -> None:
        """The stored copy of the user's episodes, up to date. A failure, or no time left for it,
        is only logged: a first query then reads the partition whole, and the next pass tries again."""
        if user_pass.out_of_time():
            return
        try:
            self._store.keep_copy(user_pass.tenant_id, user_pass.user_id, model)
        except Exception as error:
            record_metric(MetricName.EPISODE_COPY_FAILED)
            logger.warning("stored copy of the episodes not kept", extra={"error_type": type(error).__name__})


User = tuple[str, str]


def index_users(
    indexer: Indexer,
    condensed: Mapping[User, int | None],
    requested: Mapping[str, IndexMessage],
    remaining_ms: Callable[[], int],
) -> set[str]:
    """After a batch: index the users it condensed (`condensed`: the generation each one's memory
    was written at, if it was; a failure is only logged: their next pass retries) and the users
    asked for by message (`requested`, by message id; a failure, or no time left, makes those
    messages come back). Returns the messages to retry."""
    asked: dict[User, list[str]] = {}
    everything: set[User] = set()
    for message_id, request in requested.items():
        user = (request.tenant_id, request.user_id)
        asked.setdefault(user, []).append(message_id)
        if request.everything:
            everything.add(user)
    retry: set[str] = set()
    for user in dict.fromkeys([*asked, *condensed]):
        if remaining_ms() < INDEX_TIME_MS:
            retry.update(asked.get(user, ()))
            continue
        recent = ALL_EPISODES if user in everything else RECENT_EPISODES
        try:
            indexer.index_user(*user, recent, remaining_ms=remaining_ms, generation=condensed.get(user))
        except Exception as error:
            # A user asked for by message: the message comes back; else the next pass retries.
            record_metric(MetricName.INDEXING_FAILED)
            logger.warning("indexing failed", extra={"error_type": type(error).__name__})
            retry.update(asked.get(user, ()))
    return retry
