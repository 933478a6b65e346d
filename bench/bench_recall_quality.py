"""Retrieval quality of recall on LoCoMo, against a plain BM25 baseline, in one run.

Reads the 10 LoCoMo conversations (Maharana et al., ACL 2024; CC BY-NC 4.0, licence beside the
data) from ../shared/datasets/locomo/locomo10.json at run time; nothing of them is copied into
the repository. Without the file it says so and exits 0.

Per conversation, the documents are its turns, one per turn ("Speaker: text", id = its dialogue
id; image captions left out) as the service keeps episodes: dated by their session, in their
order, and the questions are its QA items of categories 1-4 with evidence
(category 5 is adversarial: its answer is not in the conversation). Evidence ids are read as
written, with the dataset's few typos mended ("D:11:26", "D30:05", several ids in one string);
ids that name no turn are dropped. Every question is used (no subsampling).

Printed for each ranking, top 10 of the conversation's turns:
- recall@k: the share of a question's evidence turns found in its top k, averaged over questions;
- hit@k: the share of questions with at least one evidence turn in the top k (the dataset
  README's "retrieval recall@k");
- each as a ratio to the baseline: plain BM25 (k1=1.2, b=0.75, Lucene idf) over lowercase \\w+
  words, no stopwords dropped, no stemming, written here independently of the service's code.
The rankings are hippocampus.domain.recall.ranking.rank (neighbours included) with the offline
model's vectors (256 dimensions) of the dated turns: alpha 0 is the service's lexical ranking, 1 its
vectors alone; then the hashed provider's vectors at the default alpha.
Then the time of one rank() over 2,200 synthetic documents (the largest user corpus).

Printed last, for scripts: `recall@10 shipped=<x> lexical=<y> bm25=<z> questions=<n>` (the service's
default ranking, its lexical ranking alone and plain BM25), after recall@10 by LoCoMo category.

Run: .venv/bin/python -m bench.bench_recall_quality [--dataset PATH] [--conversations N] [--k 5,10]
"""

import argparse
import functools
import json
import math
import random
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hippocampus.adapters.embeddings.hashed import HashedEmbedder
from hippocampus.adapters.embeddings.offline import OfflineEmbedder
from hippocampus.contracts.ports import Embedder
from hippocampus.contracts.recall_ports import Vector
from hippocampus.domain.recall import lexical
from hippocampus.domain.recall.dates import dated, searched
from hippocampus.domain.recall.ranking import DEFAULT_ALPHA, Document, rank, unit

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT.parent / "shared/datasets/locomo/locomo10.json"
KS: tuple[int, ...] = (5, 10)
ALPHAS = (0.0, 0.3, 0.5, 0.7, 1.0)
NOW = datetime(2024, 1, 1, tzinfo=UTC)
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")
_PLAIN_WORD = re.compile(r"\w+")

Ranker = Callable[[str], list[str]]


@dataclass(frozen=True)
class Question:
    text: str
    evidence: frozenset[str]
    category: int = 0


@dataclass(frozen=True)
class Turn:
    id: str  # the dialogue id
    text: str  # "Speaker: text"
    occurred_at: datetime  # its session's date and time


@dataclass(frozen=True)
class Conversation:
    turns: list[Turn]
    questions: list[Question]


def load(path: Path) -> list[Conversation]:
    return [conversation(sample) for sample in json.loads(path.read_text())]


def conversation(sample: dict[str, Any]) -> Conversation:
    sessions = sample["conversation"]
    numbers = sorted(int(key.split("_")[1]) for key in sessions if re.fullmatch(r"session_\d+", key))
    # Every turn of a session at the session's time, as `hippocampus backfill` sends them: the
    # dataset dates sessions, not turns; their order is their place in the session.
    turns = [
        Turn(turn["dia_id"], f"{turn['speaker']}: {turn['text']}", session_time(sessions, number))
        for number in numbers
        for turn in sessions[f"session_{number}"]
    ]
    known = {turn.id for turn in turns}
    questions = []
    for item in sample["qa"]:
        evidence = frozenset(evidence_ids(item.get("evidence") or [])) & known
        if item.get("category") != 5 and evidence:
            questions.append(Question(str(item["question"]), evidence, int(item.get("category") or 0)))
    return Conversation(turns, questions)


def session_time(sessions: dict[str, Any], number: int) -> datetime:
    """When session `number` took place ("1:56 pm on 8 May, 2023"), as the turns' occurred_at."""
    written = str(sessions[f"session_{number}_date_time"])
    return datetime.strptime(written, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def evidence_ids(raw: Sequence[str]) -> list[str]:
    """Dialogue ids as the turns spell them ("D30:05" -> "D30:5", "D:11:26" -> "D11:26")."""
    return [f"D{int(a)}:{int(b)}" for entry in raw for a, b in _EVIDENCE_ID.findall(entry)]


def plain_bm25(turns: list[Turn]) -> Ranker:
    """The baseline: textbook BM25 over lowercase words, nothing dropped, nothing stemmed (and no date)."""
    ids = [turn.id for turn in turns]
    docs = [_PLAIN_WORD.findall(turn.text.lower()) for turn in turns]
    average = sum(map(len, docs)) / len(docs)
    frequencies: dict[str, int] = {}
    for doc in docs:
        for word in set(doc):
            frequencies[word] = frequencies.get(word, 0) + 1

    def ranked(query: str) -> list[str]:
        scores = [0.0] * len(docs)
        for word in set(_PLAIN_WORD.findall(query.lower())):
            df = frequencies.get(word, 0)
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            for index, doc in enumerate(docs):
                if tf := doc.count(word):
                    norm = 1.2 * (1 - 0.75 + 0.75 * len(doc) / average)
                    scores[index] += idf * tf * 2.2 / (tf + norm)
        order = sorted(range(len(docs)), key=lambda index: -scores[index])
        return [ids[index] for index in order[: max(KS)] if scores[index] > 0]

    return ranked


def hybrid(turns: list[Turn], embedder: Embedder, alpha: float) -> Ranker:
    """The service's ranking of the turns as episodes, searched and embedded with their dates as
    the service does (domain/recall/dates.py), in their order in the conversation."""
    vectors = embedder.embed([dated(turn.text, turn.occurred_at) for turn in turns])
    documents = [
        Document(
            "episode",
            turn.id,
            turn.text,
            {},
            turn.occurred_at,
            Vector.of(embedder.model, vector),  # as stored: a byte a dimension
            searched=searched(turn.text, turn.occurred_at),
            place=(turn.occurred_at, position),
        )
        for position, (turn, vector) in enumerate(zip(turns, vectors, strict=True))
    ]

    def ranked(query: str) -> list[str]:
        [query_vector] = embedder.embed([query])
        results = rank(query, query_vector, documents, alpha=alpha, recency_bias=0.0, now=NOW, top_k=max(KS))
        return [result.document.id for result in results]

    return ranked


def measure(conversations: list[Conversation], build: Callable[[list[Turn]], Ranker]) -> dict[str, float]:
    """recall@k and hit@k over every question, then recall@k of each category (`recall@10 c2`)."""
    recalls: dict[str, list[float]] = {f"{name}@{k}": [] for name in ("recall", "hit") for k in KS}
    for conv in conversations:
        ranker = build(conv.turns)
        for question in conv.questions:
            top = ranker(question.text)
            for k in KS:
                found = len(question.evidence & set(top[:k]))
                recalls[f"recall@{k}"].append(found / len(question.evidence))
                recalls[f"hit@{k}"].append(1.0 if found else 0.0)
                recalls.setdefault(f"recall@{k} c{question.category}", []).append(
                    found / len(question.evidence)
                )
    return {name: statistics.fmean(values) for name, values in recalls.items()}


def print_table(rows: list[tuple[str, dict[str, float], float]], baseline: dict[str, float]) -> None:
    names = [name for name in baseline if " c" not in name]
    print(f"{'ranking':<34}" + "".join(f"{name:>17}" for name in names) + f"{'seconds':>9}")
    for label, scores, seconds in rows:
        cells = "".join(f"{scores[n]:>8.3f} ({scores[n] / baseline[n]:.2f}x)" for n in names)
        print(f"{label:<34}{cells}{seconds:>9.1f}")


def quality(conversations: list[Conversation]) -> None:
    embedder = OfflineEmbedder()
    systems: list[tuple[str, Callable[[list[Turn]], Ranker]]] = [("baseline: plain BM25", plain_bm25)]
    for alpha in ALPHAS:
        label = {0.0: "lexical (alpha 0)", 1.0: "offline vectors only (alpha 1)"}.get(
            alpha, f"hybrid alpha {alpha}"
        )
        label += " [default]" if alpha == DEFAULT_ALPHA else ""
        systems.append((label, functools.partial(hybrid, embedder=embedder, alpha=alpha)))
    hashed = functools.partial(hybrid, embedder=HashedEmbedder(), alpha=DEFAULT_ALPHA)
    systems.append((f"hashed vectors, alpha {DEFAULT_ALPHA}", hashed))
    rows = []
    for label, build in systems:
        started = time.perf_counter()
        rows.append((label, measure(conversations, build), time.perf_counter() - started))
    print_table(rows, rows[0][1])
    by_label = {label: scores for label, scores, _ in rows}
    shipped = next(scores for label, scores, _ in rows if label.endswith("[default]"))
    lexical_scores, bm25 = by_label["lexical (alpha 0)"], by_label["baseline: plain BM25"]
    k = 10 if 10 in KS else max(KS)
    categories = sorted({question.category for conv in conversations for question in conv.questions})
    print(f"\nrecall@{k} by category (LoCoMo: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop)")
    for category in categories:
        name = f"recall@{k} c{category}"
        print(
            f"  category {category}: shipped {shipped[name]:.3f}  lexical {lexical_scores[name]:.3f}"
            f"  bm25 {bm25[name]:.3f}"
        )
    questions = sum(len(conv.questions) for conv in conversations)
    # The last line, for scripts (docs: issue 20's protocol).
    print(
        f"recall@{k} shipped={shipped[f'recall@{k}']:.3f} lexical={lexical_scores[f'recall@{k}']:.3f} "
        f"bm25={bm25[f'recall@{k}']:.3f} questions={questions}"
    )


def timing(documents_count: int = 2200, dimensions: int = 256, runs: int = 20) -> None:
    """One rank() over a user's largest corpus: first query (words never seen), then warm."""
    rng = random.Random(10)
    vocabulary = [f"{rng.choice('bcdfgklmnprst')}{rng.choice('aeiou')}{i}x" for i in range(8000)]
    weights = [1 / (rank_ + 1) for rank_ in range(len(vocabulary))]  # Zipf, like words in text

    def text(words: int) -> str:
        return " ".join(rng.choices(vocabulary, weights, k=words))

    documents = [
        Document(
            "fact" if index < 200 else "episode",
            f"d{index}",
            text(12 if index < 200 else 40),
            {},
            NOW - timedelta(hours=index),
            Vector.of("random", unit([rng.gauss(0, 1) for _ in range(dimensions)])),
        )
        for index in range(documents_count)
    ]
    query_vector = unit([rng.gauss(0, 1) for _ in range(dimensions)])

    def once() -> float:
        # CPU time of this thread: the figure stays meaningful on a machine busy with other work.
        started = time.thread_time()
        rank(text(6), query_vector, documents, alpha=0.5, recency_bias=0.1, now=NOW, top_k=10)
        return (time.thread_time() - started) * 1000

    first = once()
    lexical._tokens.cache_clear()  # a new user on a warm function: stems known, tokens not
    new_user = once()
    warm = sorted(once() for _ in range(runs))
    words = sum(len(doc.text.split()) for doc in documents)
    print(
        f"\nrank() over {documents_count} documents ({words} words, {dimensions}-dimension vectors), "
        f"CPU ms: first query of the process {first:.1f}, a new user's first query {new_user:.1f}, "
        f"the same user again p50 {statistics.median(warm):.1f} (max {warm[-1]:.1f} of {runs})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--conversations", type=int, default=None, help="the first N conversations (all: 10)")
    parser.add_argument("--k", type=str, default="5,10", help="the cut-offs, comma-separated (default 5,10)")
    args = parser.parse_args()
    global KS
    KS = tuple(sorted({int(value) for value in args.k.split(",") if value.strip()}))
    if not args.dataset.is_file():
        print(f"LoCoMo not found at {args.dataset}: nothing to measure (see bench/bench_recall_quality.py).")
        return 0
    conversations = load(args.dataset)[: args.conversations]
    questions = sum(len(conv.questions) for conv in conversations)
    turns = sum(len(conv.turns) for conv in conversations)
    print(
        f"LoCoMo: {len(conversations)} conversations, {turns} turns, {questions} questions (categories 1-4)\n"
    )
    timing()
    quality(conversations)  # last: its last line is the one a script reads
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
