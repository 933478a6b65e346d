"""The offline provider's static model: the Embedder port, meaning without shared words, no network."""

import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hippocampus.adapters.embeddings import offline
from hippocampus.adapters.embeddings.offline import OfflineEmbedder
from hippocampus.contracts import names
from hippocampus.contracts.errors import ConfigurationError
from hippocampus.contracts.ports import Embedder


def cos(left, right):
    return math.sumprod(left, right)  # the vectors are unit length


def closest(query: str, texts: list[str]) -> str:
    query_vector, *vectors = OfflineEmbedder().embed([query, *texts])
    return max(zip(texts, vectors, strict=True), key=lambda pair: cos(query_vector, pair[1]))[0]


def test_it_implements_the_port_with_unit_vectors_of_the_configured_size():
    embedder: Embedder = OfflineEmbedder()
    assert (embedder.provider, embedder.model) == ("offline", names.OFFLINE_EMBEDDING_MODEL)
    vectors = embedder.embed(["Alice sells candles.", "Prefers dark mode."])
    assert [len(vector) for vector in vectors] == [names.DEFAULT_EMBEDDING_DIMENSIONS] * 2
    assert all(math.hypot(*vector) == pytest.approx(1.0) for vector in vectors)
    assert embedder.embed([]) == []


def test_a_smaller_size_is_the_first_components_normalised_again():
    [full] = OfflineEmbedder().embed(["Prefers SMS over email."])
    for size in (64, 128):
        [small] = OfflineEmbedder(dimensions=size).embed(["Prefers SMS over email."])
        norm = math.hypot(*full[:size])
        assert small == pytest.approx([value / norm for value in full[:size]])


@pytest.mark.parametrize("size", [32, 100, 512, 1024])
def test_a_size_the_model_does_not_make_fails_naming_the_variable(size):
    with pytest.raises(ConfigurationError, match=f"MEMORY_EMBEDDING_DIMENSIONS={size}.*64, 128, 256"):
        OfflineEmbedder(dimensions=size)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("How should I contact him?", "Prefers SMS over email."),
        ("What pet does she have?", "Has a dog named Max."),
        ("What does she do for a living?", "Works as a nurse at the city hospital."),
    ],
)
def test_a_question_finds_the_fact_that_answers_it_without_a_shared_word(question, answer):
    facts = [
        "Prefers SMS over email.",
        "Has a dog named Max.",
        "Works as a nurse at the city hospital.",
        "Likes hiking on weekends.",
        "Her favourite colour is green.",
    ]
    assert closest(question, facts) == answer


def test_an_empty_text_is_a_zero_vector_and_others_are_not():
    empty, blank, word = OfflineEmbedder(dimensions=64).embed(["", "   ", "candles"])
    assert empty == blank == [0.0] * 64
    assert math.hypot(*word) == pytest.approx(1.0)


def no_network_command() -> list[str]:
    """A command prefix that runs a process with no network at all (a network namespace of its own,
    loopback down: no socket of Python or of the Rust tokenizer reaches anything), where the machine
    allows one; else nothing, and the child's Python sockets are refused instead."""
    unshare = shutil.which("unshare")
    for prefix in ([unshare, "--net"], [unshare, "--map-root-user", "--net"]) if unshare else []:
        if subprocess.run([*prefix, "true"], capture_output=True, check=False).returncode == 0:
            return prefix
    return []


def test_the_model_loads_and_embeds_with_no_network_and_gives_the_same_vector_everywhere():
    script = textwrap.dedent(
        """
        import socket

        def refused(*args, **kwargs):
            raise OSError("network access in an offline embedder")

        socket.socket = socket.create_connection = socket.getaddrinfo = refused
        from hippocampus.adapters.embeddings.offline import OfflineEmbedder

        print(OfflineEmbedder().embed(["Stripe payments for Alice"])[0][:8])
        """
    )
    environment = {**os.environ, "PYTHONHASHSEED": "7"}  # noqa: TID251 - the child's environment
    command = [*no_network_command(), sys.executable, "-c", script]
    run = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(OfflineEmbedder().embed(["Stripe payments for Alice"])[0][:8])


def test_the_model_files_alone_are_enough_as_the_lambda_layer_ships_them(tmp_path, monkeypatch):
    real = offline.model_folder()
    package = tmp_path / "layer_copy_of_the_model"  # no __init__.py, no code: the files only
    for name in (offline.WEIGHTS_FILE, offline.TOKENIZER_FILE):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).symlink_to(real / name)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(offline, "MODEL_PACKAGE", package.name)
    assert offline.model_folder() == package
    assert OfflineEmbedder().embed(["Prefers SMS over email."]) == OfflineEmbedder(folder=real).embed(
        ["Prefers SMS over email."]
    )


def test_missing_model_files_fail_at_construction_naming_the_way_out(monkeypatch, tmp_path):
    monkeypatch.setattr(offline, "MODEL_PACKAGE", "no_model_installed_here")
    with pytest.raises(ConfigurationError, match=r"MEMORY_EMBEDDING_PROVIDER=offline.*hashed"):
        OfflineEmbedder()
    (tmp_path / "weights").mkdir()  # a folder without the files is not the model either
    monkeypatch.setattr(offline, "MODEL_PACKAGE", "weights")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigurationError, match=re.escape("wordllama==0.4.0.post1")):
        OfflineEmbedder()


def test_a_corrupt_token_table_is_a_configuration_error(tmp_path):
    bad = tmp_path / "weights.safetensors"
    header = b'{"embedding.weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}'
    bad.write_bytes(len(header).to_bytes(8, "little") + header + bytes(16))
    with pytest.raises(ConfigurationError, match="F16"):
        offline.TokenTable(Path(bad))


def test_a_truncated_token_table_fails_when_loaded_not_mid_query(tmp_path):
    real = offline.model_folder() / offline.WEIGHTS_FILE
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(real.read_bytes()[:1_000_000])
    with pytest.raises(ConfigurationError, match="too short"):
        offline.TokenTable(cut)
