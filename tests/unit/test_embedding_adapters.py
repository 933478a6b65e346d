"""Embedding providers: the factory, lazy SDK loading, Titan V2 through invoke_model, the shared bounds."""

import io
import json
import math
import subprocess
import sys
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from hippocampus.adapters.embeddings.bedrock_embeddings import BedrockEmbedder
from hippocampus.adapters.embeddings.common import MAX_INPUT_BYTES, batches, clip, embed_non_blank, unit
from hippocampus.adapters.embeddings.factory import make_embedder
from hippocampus.adapters.embeddings.hashed import HashedEmbedder
from hippocampus.adapters.embeddings.offline import OfflineEmbedder
from hippocampus.adapters.embeddings.openai_embeddings import OpenAIEmbedder
from hippocampus.contracts.errors import ConfigurationError
from hippocampus.contracts.names import (
    DEFAULT_BEDROCK_EMBEDDING_MODEL,
    DEFAULT_EMBEDDING_DIMENSIONS,
    DEFAULT_OPENAI_EMBEDDING_MODEL,
    OFFLINE_EMBEDDING_MODEL,
    TITAN_V2_DIMENSIONS,
)
from hippocampus.settings import Settings

_ENV = [
    "MEMORY_EMBEDDING_PROVIDER",
    "MEMORY_EMBEDDING_MODEL",
    "MEMORY_EMBEDDING_DIMENSIONS",
    "MEMORY_LLM_PROVIDER",
    "MEMORY_LLM_API_KEY_SECRET",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
]


@pytest.fixture
def settings_from_env(monkeypatch: pytest.MonkeyPatch):
    """Settings parsed from exactly the given variables (none inherited from the shell)."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)

    def build(**env: str) -> Settings:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return Settings()

    return build


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(component * component for component in vector))


# --- factory ----------------------------------------------------------------------------------


def test_offline_by_default_without_a_key(settings_from_env) -> None:
    embedder = make_embedder(settings_from_env(MEMORY_EMBEDDING_DIMENSIONS="128"))
    assert isinstance(embedder, OfflineEmbedder)
    assert (embedder.provider, embedder.model, embedder.dimensions) == (
        "offline",
        OFFLINE_EMBEDDING_MODEL,
        128,
    )


def test_hashed_is_the_feature_hashing_embedder_under_its_old_model_id(settings_from_env) -> None:
    embedder = make_embedder(
        settings_from_env(MEMORY_EMBEDDING_PROVIDER="hashed", MEMORY_EMBEDDING_DIMENSIONS="512")
    )
    assert isinstance(embedder, HashedEmbedder)
    # The id vectors were stored under when feature hashing was the offline provider: they stay valid.
    assert (embedder.provider, embedder.model, embedder.dimensions) == ("hashed", "offline-hashed-v1", 512)


def test_an_offline_size_the_model_does_not_make_fails_naming_the_variable(settings_from_env) -> None:
    with pytest.raises(ConfigurationError, match="MEMORY_EMBEDDING_DIMENSIONS=512"):
        make_embedder(settings_from_env(MEMORY_EMBEDDING_DIMENSIONS="512"))


def test_openai_by_default_with_a_key(settings_from_env) -> None:
    embedder = make_embedder(
        settings_from_env(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:1/v1")
    )
    assert isinstance(embedder, OpenAIEmbedder) and embedder.provider == "openai"
    assert (embedder.model, embedder.dimensions) == (
        DEFAULT_OPENAI_EMBEDDING_MODEL,
        DEFAULT_EMBEDDING_DIMENSIONS,
    )
    assert str(embedder.client().base_url) == "http://127.0.0.1:1/v1/"


def test_openai_takes_the_configured_model_and_size(settings_from_env) -> None:
    settings = settings_from_env(
        OPENAI_API_KEY="sk-test",
        MEMORY_EMBEDDING_MODEL="text-embedding-3-large",
        MEMORY_EMBEDDING_DIMENSIONS="1024",
    )
    embedder = make_embedder(settings)
    assert isinstance(embedder, OpenAIEmbedder)
    assert (embedder.model, embedder.dimensions) == ("text-embedding-3-large", 1024)


def test_openai_without_a_key_fails_fast(settings_from_env) -> None:
    with pytest.raises(ConfigurationError) as error:
        make_embedder(settings_from_env(MEMORY_EMBEDDING_PROVIDER="openai"))
    message = str(error.value)
    assert "MEMORY_EMBEDDING_PROVIDER=openai" in message
    assert "OPENAI_API_KEY" in message and "MEMORY_LLM_API_KEY_SECRET" in message


def test_openai_reads_the_secret_on_first_use_only(settings_from_env) -> None:
    reads: list[str] = []

    def reader(name: str) -> str:
        reads.append(name)
        return '{"api_key": "sk-from-secret"}'

    embedder = make_embedder(
        settings_from_env(MEMORY_LLM_API_KEY_SECRET="hippocampus/llm"), secret_reader=reader
    )
    assert isinstance(embedder, OpenAIEmbedder) and reads == []


def test_bedrock_takes_titan_v2_by_default(settings_from_env) -> None:
    embedder = make_embedder(
        settings_from_env(MEMORY_EMBEDDING_PROVIDER="bedrock", OPENAI_API_KEY="sk-unused")
    )
    assert isinstance(embedder, BedrockEmbedder) and embedder.provider == "bedrock"
    assert (embedder.model, embedder.dimensions) == (DEFAULT_BEDROCK_EMBEDDING_MODEL, 256)


def test_none_means_no_embedder(settings_from_env) -> None:
    assert make_embedder(settings_from_env(MEMORY_EMBEDDING_PROVIDER="none", OPENAI_API_KEY="sk-x")) is None


def test_bedrock_refuses_a_size_titan_v2_does_not_offer(settings_from_env) -> None:
    settings = settings_from_env(MEMORY_EMBEDDING_PROVIDER="bedrock", MEMORY_EMBEDDING_DIMENSIONS="384")
    with pytest.raises(ConfigurationError, match="MEMORY_EMBEDDING_DIMENSIONS=384") as error:
        make_embedder(settings)
    assert "256, 512, 1024" in str(error.value)
    for dimensions in TITAN_V2_DIMENSIONS:
        assert BedrockEmbedder(dimensions=dimensions).dimensions == dimensions


def test_importing_the_factory_loads_neither_openai_nor_boto3(monkeypatch: pytest.MonkeyPatch) -> None:
    code = (
        "import sys\n"
        "import hippocampus.adapters.embeddings.factory as factory\n"
        "import hippocampus.adapters.embeddings.openai_embeddings, hippocampus.adapters.embeddings.bedrock_embeddings\n"
        "from hippocampus.settings import Settings\n"
        "assert factory.make_embedder(Settings()).provider == 'openai'\n"
        "assert factory.make_embedder(Settings(embedding_provider='bedrock')).provider == 'bedrock'\n"
        "loaded = sorted(m for m in ('openai', 'boto3', 'botocore') if m in sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for name in ("MEMORY_EMBEDDING_PROVIDER", "MEMORY_EMBEDDING_DIMENSIONS", "MEMORY_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


def test_openai_sdk_is_imported_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = OpenAIEmbedder(api_key="sk", timeout_s=1)
    monkeypatch.setitem(sys.modules, "openai", None)  # any `import openai` now fails
    with pytest.raises(ImportError):
        embedder.embed(["some text"])


def test_openai_client_is_configured_once() -> None:
    embedder = OpenAIEmbedder(api_key="sk-x", timeout_s=3.5, base_url="http://127.0.0.1:9/v1")
    client = embedder.client()
    assert embedder.client() is client
    assert client.timeout == 3.5 and client.max_retries == 0  # the adapter makes the one retry


# --- bedrock ----------------------------------------------------------------------------------


def _bedrock_client() -> Any:
    return boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )


def _titan_answer(embedding: list[float]) -> dict[str, Any]:
    data = json.dumps({"embedding": embedding, "inputTextTokenCount": 3}).encode()
    return {"body": StreamingBody(io.BytesIO(data), len(data)), "contentType": "application/json"}


def _titan_request(
    text: str, dimensions: int = 256, model: str = DEFAULT_BEDROCK_EMBEDDING_MODEL
) -> dict[str, Any]:
    return {
        "modelId": model,
        "body": json.dumps({"inputText": text, "dimensions": dimensions, "normalize": True}),
        "contentType": "application/json",
        "accept": "application/json",
    }


def test_bedrock_one_call_per_text_in_order_normalised() -> None:
    client = _bedrock_client()
    embedder = BedrockEmbedder(dimensions=256, client=client)
    with Stubber(client) as stubber:
        stubber.add_response("invoke_model", _titan_answer([3.0, 4.0] + [0.0] * 254), _titan_request("first"))
        stubber.add_response("invoke_model", _titan_answer([0.0] * 255 + [2.0]), _titan_request("second"))
        first, blank, second = embedder.embed(["first", "  ", "second"])
        stubber.assert_no_pending_responses()
    assert first[:2] == pytest.approx([0.6, 0.8]) and norm(first) == pytest.approx(1.0)
    assert second[-1] == pytest.approx(1.0) and len(second) == 256
    assert blank == [0.0] * 256  # no call for a blank text


def test_bedrock_sends_the_configured_model_and_size_and_clips_long_texts() -> None:
    client = _bedrock_client()
    embedder = BedrockEmbedder(model="eu.amazon.titan-embed-text-v2:0", dimensions=512, client=client)
    long_text = "é" * MAX_INPUT_BYTES  # two bytes a character
    clipped = "é" * (MAX_INPUT_BYTES // 2)
    with Stubber(client) as stubber:
        stubber.add_response(
            "invoke_model",
            _titan_answer([1.0] * 512),
            _titan_request(clipped, 512, "eu.amazon.titan-embed-text-v2:0"),
        )
        assert len(embedder.embed([long_text])[0]) == 512
        stubber.assert_no_pending_responses()


def test_bedrock_answer_of_another_size_is_refused() -> None:
    client = _bedrock_client()
    with Stubber(client) as stubber:
        stubber.add_response("invoke_model", _titan_answer([1.0] * 1024))
        with pytest.raises(ConfigurationError, match="MEMORY_EMBEDDING_DIMENSIONS=256"):
            BedrockEmbedder(client=client).embed(["text"])


def test_bedrock_retries_a_throttled_call_once_and_not_a_bad_request() -> None:
    client = _bedrock_client()
    embedder = BedrockEmbedder(client=client, timeout_s=5)
    with Stubber(client) as stubber:
        stubber.add_client_error("invoke_model", "ThrottlingException", http_status_code=429)
        stubber.add_response("invoke_model", _titan_answer([1.0] * 256))
        assert len(embedder.embed(["text"])) == 1
        for _ in range(2):
            stubber.add_client_error("invoke_model", "ThrottlingException", http_status_code=429)
        with pytest.raises(client.exceptions.ThrottlingException):
            embedder.embed(["text"])
        stubber.add_client_error("invoke_model", "ValidationException", http_status_code=400)
        with pytest.raises(client.exceptions.ValidationException):
            embedder.embed(["text"])
        stubber.assert_no_pending_responses()


def test_bedrock_client_created_once_with_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    embedder = BedrockEmbedder(timeout_s=4)
    client = embedder.client()
    assert embedder.client() is client
    assert client.meta.service_model.service_name == "bedrock-runtime"
    assert client.meta.config.connect_timeout == 4 and client.meta.config.read_timeout == 4
    assert client.meta.config.retries["total_max_attempts"] == 1


# --- shared bounds ----------------------------------------------------------------------------


def test_clip_keeps_short_texts_and_never_splits_a_character() -> None:
    assert clip("short") == "short"
    clipped = clip("a" + "€" * 10, max_bytes=8)  # "a" then 3-byte characters: 1 + 2 * 3 bytes fit
    assert clipped == "a€€" and len(clipped.encode()) <= 8


def test_batches_respect_both_bounds_and_keep_order() -> None:
    texts = [f"t{i}" for i in range(10)]
    assert list(batches(texts, max_texts=4)) == [texts[:4], texts[4:8], texts[8:]]
    assert list(batches(["aaaa", "bbbb", "cc", "dddddd"], max_bytes=8)) == [
        ["aaaa", "bbbb"],
        ["cc", "dddddd"],
    ]
    assert list(batches([])) == []


def test_embed_non_blank_asks_for_the_words_only() -> None:
    asked: list[list[str]] = []

    def embed_many(texts: list[str]) -> list[list[float]]:
        asked.append(texts)
        return [[1.0, 0.0] for _ in texts]

    assert embed_non_blank(["", "a", " \n", "b"], 2, embed_many) == [
        [0.0, 0.0],
        [1.0, 0.0],
        [0.0, 0.0],
        [1.0, 0.0],
    ]
    assert asked == [["a", "b"]]


def test_unit_scales_and_refuses_bad_vectors() -> None:
    assert unit([3.0, 4.0], 2) == pytest.approx([0.6, 0.8])
    with pytest.raises(ValueError, match="zero"):
        unit([0.0, 0.0], 2)
    with pytest.raises(ValueError, match="non-finite"):
        unit([math.nan, 1.0], 2)
    with pytest.raises(ConfigurationError, match="answered 3 dimensions"):
        unit([1.0, 2.0, 3.0], 2)
