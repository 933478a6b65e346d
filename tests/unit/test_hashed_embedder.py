"""The hashed embedder: the Embedder port, deterministic vectors, word variants close together."""

import math
import subprocess
import sys

import pytest

from hippocampus.adapters.embeddings.hashed import HashedEmbedder
from hippocampus.contracts import names
from hippocampus.contracts.ports import Embedder


def cos(left, right):
    return math.sumprod(left, right)  # the vectors are unit length


def test_it_implements_the_port_with_the_configured_size():
    embedder: Embedder = HashedEmbedder()
    assert (embedder.provider, embedder.model) == ("hashed", names.HASHED_EMBEDDING_MODEL)
    assert embedder.dimensions == names.DEFAULT_EMBEDDING_DIMENSIONS
    vectors = embedder.embed(["Alice sells candles.", "Prefers dark mode."])
    assert len(vectors) == 2 and all(len(v) == names.DEFAULT_EMBEDDING_DIMENSIONS for v in vectors)
    assert all(math.hypot(*v) == pytest.approx(1.0) for v in vectors)
    assert len(HashedEmbedder(dimensions=64).embed(["x y"])[0]) == 64
    assert HashedEmbedder().embed([]) == []
    with pytest.raises(ValueError, match="dimensions"):
        HashedEmbedder(dimensions=0)


def test_vectors_are_the_same_in_every_process():
    # Python's hash() is salted per process; blake2b is not: a vector stored by one function
    # must match the query vector another function computes.
    script = "from hippocampus.adapters.embeddings.hashed import HashedEmbedder; print(HashedEmbedder().embed(['Stripe payments for Alice'])[0][:8])"
    runs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(runs) == 1
    assert runs.pop().strip() == str(HashedEmbedder().embed(["Stripe payments for Alice"])[0][:8])


def test_word_variants_land_close_and_unrelated_words_do_not():
    embedder = HashedEmbedder()
    payment, payments, paying, candle = embedder.embed(["payment", "payments", "paying", "candle"])
    assert cos(payment, payments) == pytest.approx(1.0)  # one stem
    assert cos(payment, paying) > 0.15 > abs(cos(payment, candle))  # shared trigrams "<pa", "pay"


def test_a_sentence_is_closest_to_the_sentence_about_the_same_thing():
    embedder = HashedEmbedder()
    query, *texts = embedder.embed(
        [
            "Which payment provider?",
            "Alice takes payments through Stripe.",
            "She prefers dark mode.",
            "Ships to Canada.",
        ]
    )
    similarities = [cos(query, text) for text in texts]
    assert similarities.index(max(similarities)) == 0


def test_function_words_and_case_do_not_change_a_vector():
    embedder = HashedEmbedder()
    first, second = embedder.embed(["What is THE payment provider?", "payment provider"])
    assert first == second


def test_a_text_without_words_is_a_zero_vector():
    assert HashedEmbedder(dimensions=8).embed(["", "?!", "the of and"]) == [[0.0] * 8] * 3
