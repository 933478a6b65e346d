"""Hybrid ranking: alpha's extremes are pure, recency and filters work, nothing irrelevant returned."""

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from hippocampus.adapters.embeddings.offline import OfflineEmbedder
from hippocampus.contracts.models import Episode
from hippocampus.contracts.recall_ports import Indexed, Vector
from hippocampus.domain.recall.lexical import lexical_scores
from hippocampus.domain.recall.ranking import (
    DEFAULT_ALPHA,
    NEIGHBOUR_GAP,
    NEIGHBOUR_PULL,
    RECENCY_HALF_LIFE_DAYS,
    Document,
    matches,
    pulled_by_neighbours,
    rank,
    recency,
    semantic_scores,
    stored_contexts,
    unit,
)
from tests.support.vectors import values

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)


def stored(vector):
    """A vector as the store keeps it (a byte a dimension), None for none."""
    return None if vector is None else Vector.of("m", vector)


def cosine(unit_query, values):
    return max(0.0, min(1.0, sum(q * v for q, v in zip(unit_query, values, strict=True))))


def doc(doc_id, text, vector=None, days_old=0.0, doc_type="fact", **metadata):
    return Document(doc_type, doc_id, text, metadata, NOW - timedelta(days=days_old), stored(vector))


def ids(results):
    return [result.document.id for result in results]


def run(query, query_vector, documents, alpha=DEFAULT_ALPHA, recency_bias=0.0, top_k=10, filters=None):
    return rank(
        query,
        query_vector,
        documents,
        alpha=alpha,
        recency_bias=recency_bias,
        now=NOW,
        top_k=top_k,
        filters=filters,
    )


# Vectors chosen by hand so semantic and lexical disagree: "sem" is close to the query vector
# without sharing its words; "lex" shares the words with an orthogonal vector.
# Stored vectors are unit length (the Embedder port); a query vector is normalised by rank().
QUERY_VECTOR = [2.0, 0.0, 0.0]
DOCS = [
    doc("lex", "Alice pays with Stripe", [0.0, 1.0, 0.0]),
    doc("sem", "Card processing is handled by a provider", unit([0.9, 0.1, 0.0])),
    doc("mid", "Stripe dashboard for Alice", [0.6, 0.8, 0.0]),
]


def test_alpha_0_is_lexical_only():
    results = run("stripe payments", QUERY_VECTOR, DOCS, alpha=0.0)
    lexical = dict(
        zip([d.id for d in DOCS], lexical_scores("stripe payments", [d.text for d in DOCS]), strict=True)
    )
    assert ids(results) == ["lex", "mid"]  # "sem" shares no word: dropped, its vector ignored
    assert [r.score for r in results] == [lexical["lex"], lexical["mid"]]


def test_alpha_1_is_semantic_only():
    results = run("stripe payments", QUERY_VECTOR, DOCS, alpha=1.0)
    assert ids(results) == ["sem", "mid"]  # "lex" has cosine 0: dropped despite its words
    assert results[0].score == pytest.approx(cosine(unit(QUERY_VECTOR), values(DOCS[1].vector)))
    assert results[0].score == pytest.approx(0.9 / (0.9**2 + 0.1**2) ** 0.5)  # its largest value: exact
    assert results[1].score == pytest.approx(0.6, abs=0.8 / 127 / 2)  # stored within half a step


def test_a_stored_vector_is_within_half_a_step_of_the_models_and_its_products_are_its_values():
    rng = random.Random(5)
    for _ in range(20):
        exact = unit([rng.gauss(0, 1) for _ in range(64)])
        vector = Vector.of("m", exact)
        assert vector.dimensions == 64 and len(vector.codes) == 64
        assert all(abs(a - b) <= vector.scale / 2 + 1e-12 for a, b in zip(values(vector), exact, strict=True))
        query = unit([rng.gauss(0, 1) for _ in range(64)])
        assert semantic_scores([doc("d", "d", exact)], query) == pytest.approx(
            [cosine(query, values(vector))]
        )
    assert values(Vector.of("m", [0.0, 0.0])) == [0.0, 0.0]  # an empty text's zero vector stays zero


def test_in_between_is_a_linear_blend():
    lexical = lexical_scores("stripe payments", [d.text for d in DOCS])
    results = {r.document.id: r.score for r in run("stripe payments", QUERY_VECTOR, DOCS, alpha=0.3)}
    mid = cosine(unit(QUERY_VECTOR), values(DOCS[2].vector))
    assert results["mid"] == pytest.approx(0.3 * mid + 0.7 * lexical[2])
    assert results["lex"] == pytest.approx(0.7 * lexical[0])


def test_a_document_without_a_vector_of_the_model_is_ranked_lexically():
    # vector None (another model's vector, or not embedded yet) or of another size: lexical only.
    documents = [doc("none", "Alice pays with Stripe"), doc("other", "Stripe for Alice", [1.0, 0.0])]
    for alpha in (0.0, 0.5, 1.0):
        results = {
            r.document.id: r.score for r in run("stripe payments", QUERY_VECTOR, documents, alpha=alpha)
        }
        expected = lexical_scores("stripe payments", [d.text for d in documents])
        assert results == {"none": expected[0], "other": expected[1]}
    no_query_vector = run("stripe payments", None, DOCS, alpha=1.0)
    assert ids(no_query_vector) == ids(run("stripe payments", QUERY_VECTOR, DOCS, alpha=0.0))


def test_the_right_item_first_with_offline_vectors_for_exact_and_variant_words():
    embedder = OfflineEmbedder()
    texts = {
        "pay": "Alice takes payments through Stripe.",
        "order": "She ordered 40 jars of soy wax.",
        "ui": "Prefers dark mode.",
        "ship": "Ships to Canada and the US.",
    }
    vectors = embedder.embed(list(texts.values()))
    documents = [doc(key, text, vector) for (key, text), vector in zip(texts.items(), vectors, strict=True)]
    for query, expected in [
        ("What payment provider?", "pay"),
        ("how many orders of wax", "order"),
        ("dark mode", "ui"),
        ("where does she ship", "ship"),
        ("paying", "pay"),  # stems differ (pay / payment): the model's vectors relate them
    ]:
        [query_vector] = embedder.embed([query])
        assert ids(run(query, query_vector, documents))[0] == expected, query


def test_recency_halves_every_half_life_and_a_future_time_counts_as_now():
    assert recency(NOW, NOW) == 1.0
    assert recency(NOW - timedelta(days=RECENCY_HALF_LIFE_DAYS), NOW) == pytest.approx(0.5)
    assert recency(NOW - timedelta(days=2 * RECENCY_HALF_LIFE_DAYS), NOW) == pytest.approx(0.25)
    assert recency(NOW + timedelta(days=3), NOW) == 1.0


def test_recency_bias_brings_newer_items_forward():
    documents = [
        doc("old", "Alice uses Stripe for payments", days_old=90),
        doc("new", "Alice uses Stripe", days_old=1),
    ]
    assert ids(run("stripe payments", None, documents, recency_bias=0.0)) == ["old", "new"]
    assert ids(run("stripe payments", None, documents, recency_bias=0.5)) == ["new", "old"]


def test_recency_bias_1_orders_by_time_and_keeps_irrelevant_items():
    documents = [doc("a", "tea", days_old=5), doc("b", "coffee", days_old=1), doc("c", "stripe", days_old=9)]
    results = run("stripe", None, documents, recency_bias=1.0)
    assert ids(results) == ["b", "a", "c"]
    assert results[0].score == pytest.approx(recency(NOW - timedelta(days=1), NOW))


def test_without_recency_bias_nothing_irrelevant_is_returned():
    documents = [doc("a", "Prefers dark mode"), doc("b", "Lives in Lyon", [0.0, 1.0, 0.0])]
    assert run("stripe payments", [1.0, 0.0, 0.0], documents) == []
    assert run("", None, documents) == []


def test_filters_exact_and_in_are_applied_before_ranking():
    documents = [
        doc("web-billing", "stripe payments", channel="web", topic="billing"),
        doc("app-billing", "stripe payments stripe", channel="app", topic="billing"),
        doc("web-orders", "stripe orders", channel="web", topic="orders"),
        doc("web-none", "stripe"),
    ]
    assert ids(run("stripe", None, documents, filters={"channel": "web"})) == ["web-billing", "web-orders"]
    in_filter = {"channel": "web", "topic": ["billing", "orders"]}
    assert sorted(ids(run("stripe", None, documents, filters=in_filter))) == ["web-billing", "web-orders"]
    assert run("stripe", None, documents, filters={"channel": "email"}) == []
    # Before ranking: top_k=1 still finds the filtered item, even though "app-billing" scores best.
    assert ids(run("stripe", None, documents, top_k=1, filters={"topic": "orders"})) == ["web-orders"]


def test_matches_compares_values_exactly():
    assert matches({"a": 1, "b": "x"}, {"a": 1, "b": ["x", "y"]})
    assert not matches({"a": 1}, {"a": 1, "b": "x"})  # every key must match
    assert not matches({"a": True}, {"a": 1}) and not matches({"a": 1}, {"a": True})
    assert matches({"a": False}, {"a": [False]}) and not matches({"a": "1"}, {"a": 1})
    assert matches({}, {})


def test_ties_go_to_the_newer_item_then_the_id_and_top_k_cuts():
    documents = [
        doc("b", "stripe", days_old=2),
        doc("c", "stripe", days_old=1),
        doc("a", "stripe", days_old=2),
    ]
    assert ids(run("stripe", None, documents)) == ["c", "a", "b"]
    assert ids(run("stripe", None, documents, top_k=2)) == ["c", "a"]


def test_scores_stay_in_0_1_and_are_ordered_on_random_corpora():
    rng = random.Random(3)
    words = ["stripe", "payment", "order", "wax", "candle", "lyon", "canada", "dark", "mode", "tea"]
    for _ in range(50):
        documents = [
            doc(
                f"d{i}",
                " ".join(rng.choices(words, k=rng.randint(1, 8))),
                rng.choice([None, unit([rng.uniform(-1, 1) for _ in range(4)])]),
                days_old=rng.uniform(0, 400),
            )
            for i in range(20)
        ]
        query_vector = rng.choice([None, [rng.uniform(-1, 1) for _ in range(4)]])
        results = run(
            " ".join(rng.choices(words, k=3)),
            query_vector,
            documents,
            alpha=rng.random(),
            recency_bias=rng.choice([0.0, rng.random()]),
        )
        scores = [r.score for r in results]
        assert all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
        assert len(results) <= 10


def test_alpha_and_recency_bias_outside_0_1_are_refused():
    with pytest.raises(ValueError, match="alpha"):
        run("x", None, DOCS, alpha=1.5)
    with pytest.raises(ValueError, match="recency_bias"):
        run("x", None, DOCS, recency_bias=-0.1)


def turn(doc_id, minutes, doc_type="episode"):
    return Document(doc_type, doc_id, doc_id, {}, NOW + timedelta(minutes=minutes), None)


def test_an_episode_is_pulled_toward_its_more_relevant_neighbour_in_the_same_conversation():
    question, answer, later = turn("question", 0), turn("answer", 1), turn("later", 2)
    pulled = pulled_by_neighbours([answer, later, question], [0.1, 0.0, 0.9])
    assert pulled == pytest.approx([0.1 + NEIGHBOUR_PULL * 0.8, NEIGHBOUR_PULL * 0.1, 0.9])


def test_no_pull_across_a_gap_from_a_fact_or_a_record_or_downward():
    documents = [
        turn("monday", 0),
        turn("tuesday", NEIGHBOUR_GAP.total_seconds() / 60 + 1),  # another conversation
        turn("fact", 0.5, "fact"),  # in between in time, but facts have no neighbours
        turn("record", 0.7, "record"),
    ]
    assert pulled_by_neighbours(documents, [0.0, 0.9, 0.8, 0.7]) == [0.0, 0.9, 0.8, 0.7]
    assert pulled_by_neighbours([turn("a", 0), turn("b", 1)], [0.9, 0.2]) == pytest.approx(
        [0.9, 0.2 + NEIGHBOUR_PULL * 0.7]
    )


def test_the_reply_to_a_matching_question_is_returned_with_it():
    documents = [
        Document("episode", "asked", "Alice: Which hotel near the station?", {}, NOW, None),
        Document(
            "episode", "told", "Bob: The Regent, ten minutes on foot.", {}, NOW + timedelta(minutes=1), None
        ),
        Document("episode", "other", "Bob: The weather turned cold.", {}, NOW + timedelta(hours=3), None),
    ]
    assert ids(run("hotel near the station", None, documents)) == ["asked", "told"]


def test_turns_sent_at_one_time_are_neighbours_in_the_order_they_were_sent():
    # A backfill dates every turn of a session alike: the order is their place, not their ids.
    def sent(doc_id, position):
        return Document("episode", doc_id, doc_id, {}, NOW, None, place=(NOW, NOW, position, "job"))

    question, reply, other = sent("z-question", 0), sent("a-reply", 1), sent("m-other", 2)
    pulled = pulled_by_neighbours([other, reply, question], [0.0, 0.0, 0.9])
    assert pulled == pytest.approx([0.0, NEIGHBOUR_PULL * 0.9, 0.9])


def said(doc_id, vector, minutes):
    """An episode `minutes` after NOW minus a week, placed by when it happened."""
    at = NOW - timedelta(days=7) + timedelta(minutes=minutes)
    return Document("episode", doc_id, f"turn {doc_id}", {}, at, stored(vector), place=(at, doc_id))


def test_an_episodes_meaning_is_read_with_its_neighbours():
    # "How should I contact him?" - "By text." : the reply means nothing alone, its question does.
    question, reply = said("question", (1.0, 0.0), 0), said("reply", (0.0, 1.0), 1)
    elsewhere = said("elsewhere", (0.0, 1.0), 3 * 24 * 60)  # the same words days later: no context
    fact = doc("fact", "a fact", (0.0, 1.0))
    scores = dict(
        zip(
            ["question", "reply", "elsewhere", "fact"],
            semantic_scores([question, reply, elsewhere, fact], (1.0, 0.0)),
            strict=True,
        )
    )
    # The reply's vector with its neighbour's at half weight: (0 + 0.5) / |(0.5, 1)|.
    assert scores["reply"] == pytest.approx(0.5 / (1.25**0.5))
    assert scores["question"] == pytest.approx(1 / (1.25**0.5))  # its own, with the reply's beside
    assert scores["elsewhere"] == 0.0 and scores["fact"] == 0.0  # alone: their own cosine
    ranked = run("nothing in common", (1.0, 0.0), [elsewhere, reply, question], alpha=1.0)
    assert ids(ranked) == ["question", "reply"]


def test_an_episode_without_a_vector_takes_no_part_in_its_neighbours_meaning():
    first, unindexed, last = said("a", (1.0, 0.0), 0), said("b", None, 1), said("c", (0.0, 1.0), 2)
    scores = semantic_scores([first, unindexed, last], (0.0, 1.0))
    assert scores[1] is None  # ranked by its words alone
    assert scores[2] == pytest.approx(1 / (1.25**0.5))  # "a" is its nearest neighbour with a vector


def read_in_context(documents, query):
    """The semantic scores by their definition: each episode's vector plus its neighbours' (one and
    two places away, 30 minutes apart at most) at half and a quarter weight, its cosine with the query."""
    episodes = sorted((doc for doc in documents if doc.type == "episode"), key=lambda doc: doc.place)
    scores = {}
    for position, episode in enumerate(episodes):
        total = values(episode.vector)
        for distance, weight in ((1, 0.5), (2, 0.25)):
            for other in (position - distance, position + distance):
                if (
                    0 <= other < len(episodes)
                    and abs(episodes[other].updated_at - episode.updated_at) <= NEIGHBOUR_GAP
                ):
                    total = [
                        a + weight * b for a, b in zip(total, values(episodes[other].vector), strict=True)
                    ]
        scores[episode.id] = max(0.0, min(1.0, cosine(unit(query), unit(total))))
    return [scores[doc.id] for doc in documents]


def test_a_conversation_ranked_again_as_it_grows_and_shrinks_reads_each_turn_in_its_context():
    generator = random.Random(7)

    def vector():
        return tuple(unit([generator.uniform(-1, 1) for _ in range(8)]))

    turns = [said(f"t{n}", vector(), n * (1 if n % 9 else 45)) for n in range(40)]  # a few conversations
    query = vector()
    for documents in (
        turns,
        [*turns, said("t40", vector(), 40)],  # a new turn
        turns[1:],  # the oldest trimmed
        [*turns[:20], said("t20b", vector(), 20), *turns[21:]],  # one replaced in the middle
        list(reversed(turns)),  # in another order: the episodes' own order counts
        [*turns[:5], said("empty", (0.0,) * 8, 5), *turns[6:]],  # a zero vector (an empty text)
        turns,
    ):
        assert semantic_scores(documents, query) == pytest.approx(read_in_context(documents, query))


def test_a_context_stored_with_the_copy_is_used_only_while_the_same_episodes_surround_it():
    """domain/recall/ranking.py `stored_contexts`: what the condenser stores with the copy of the
    episodes, and a first query uses instead of computing each window again."""
    generator = random.Random(11)

    def vector():
        return tuple(unit([generator.uniform(-1, 1) for _ in range(8)]))

    start = NOW - timedelta(days=7)
    episodes = [
        Episode(
            id=f"t{n}",
            job_id=f"job-{n}",
            text=f"turn {n}",
            created_at=start + timedelta(minutes=5 * n + 120 * (n // 7)),  # a few conversations
        )
        for n in range(30)
    ]
    entries = [Indexed(episode, Vector.of("m@8", vector())) for episode in episodes]
    contexts = stored_contexts(entries, "m@8")
    query = vector()

    def documents(stored, entries=entries):
        return [
            Document(
                "episode",
                e.document.id,
                e.document.text,
                {},
                e.document.occurred_at,
                e.vector,
                place=e.document.place,
                context=c,
            )
            for e, c in zip(entries, stored, strict=True)
        ]

    made = semantic_scores(documents([None] * len(entries)), query)
    assert semantic_scores(documents(contexts), query) == pytest.approx(made)
    # A wrong stored length shows where one is used: everywhere, while nothing changed around them.
    doubled = [replace(c, inverse_length=2 * c.inverse_length) for c in contexts]
    assert all(
        a != pytest.approx(b)
        for a, b in zip(semantic_scores(documents(doubled), query), made, strict=True)
        if b > 0
    )
    # Made again where the episodes around one changed (a turn came in between), or by other rules.
    late = Indexed(
        Episode(
            id="late",
            job_id="job-late",
            text="late",
            created_at=start + timedelta(minutes=5 * 14 + 120 * 2 + 2),
        ),
        Vector.of("m@8", vector()),
    )
    grown = [*entries[:15], late, *entries[15:]]
    scores = semantic_scores(documents([*doubled[:15], None, *doubled[15:]], grown), query)
    fresh = semantic_scores(documents([None] * len(grown), grown), query)
    assert scores[13:18] == pytest.approx(fresh[13:18]) and scores[5] != pytest.approx(fresh[5])
    other_rules = [replace(c, rules="another") for c in doubled]
    assert semantic_scores(documents(other_rules), query) == pytest.approx(made)
