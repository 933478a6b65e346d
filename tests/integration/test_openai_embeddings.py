"""OpenAIEmbedder through the real openai SDK against the local stub: batching, order, size, retries."""

import math
import time
from collections.abc import Iterator

import openai
import pytest

from hippocampus.adapters.embeddings.common import MAX_BATCH_BYTES, MAX_BATCH_TEXTS, MAX_INPUT_BYTES
from hippocampus.adapters.embeddings.factory import make_embedder
from hippocampus.adapters.embeddings.openai_embeddings import OpenAIEmbedder
from hippocampus.contracts.errors import ConfigurationError
from hippocampus.settings import Settings
from tests.support.openai_stub import OpenAIStub


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub(reply="Alice sells handmade candles.") as server:
        yield server


def embedder_for(stub: OpenAIStub, dimensions: int = 256, timeout_s: float = 5.0) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        api_key="sk-test", dimensions=dimensions, timeout_s=timeout_s, base_url=stub.base_url
    )


def expected(text: str, dimensions: int) -> list[float]:
    """The stub's vector of `text`, scaled to unit length as the adapter must."""
    raw = OpenAIStub.embedding_vector(text, dimensions)
    length = math.sqrt(sum(x * x for x in raw))
    return [x / length for x in raw]


def test_request_shape_and_unit_vectors(stub: OpenAIStub) -> None:
    vectors = embedder_for(stub).embed(["I pay with Stripe.", "I prefer dark mode."])
    request = stub.embedding_requests[-1]
    assert request.path == "/v1/embeddings"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body["model"] == "text-embedding-3-small"
    assert request.body["dimensions"] == 256 and request.body["encoding_format"] == "float"
    assert request.inputs == ["I pay with Stripe.", "I prefer dark mode."]
    assert vectors[0] == pytest.approx(expected("I pay with Stripe.", 256))
    assert all(len(v) == 256 and math.isclose(math.fsum(x * x for x in v), 1.0) for v in vectors)
    assert stub.call_count == 0  # the chat counters see no embeddings


def test_batches_keep_the_input_order_even_when_the_server_does_not(stub: OpenAIStub) -> None:
    stub.reverse_embeddings = True  # the API does not promise its order: the adapter sorts by index
    texts = [f"fact number {i}" for i in range(2 * MAX_BATCH_TEXTS + 10)]
    vectors = embedder_for(stub, dimensions=64).embed(texts)
    sizes = [len(request.inputs) for request in stub.embedding_requests]
    assert sizes == [MAX_BATCH_TEXTS, MAX_BATCH_TEXTS, 10]
    assert [request.inputs for request in stub.embedding_requests] == [
        texts[:MAX_BATCH_TEXTS],
        texts[MAX_BATCH_TEXTS : 2 * MAX_BATCH_TEXTS],
        texts[2 * MAX_BATCH_TEXTS :],
    ]
    assert all(
        vector == pytest.approx(expected(text, 64)) for text, vector in zip(texts, vectors, strict=True)
    )


def test_long_texts_are_clipped_and_batched_by_bytes(stub: OpenAIStub) -> None:
    texts = [f"{i:03d} " + "word " * 3_000 for i in range(40)]  # 15,004 bytes each
    vectors = embedder_for(stub, dimensions=64).embed(texts)
    assert len(vectors) == 40
    requests = stub.embedding_requests
    assert all(len(text.encode()) == MAX_INPUT_BYTES for request in requests for text in request.inputs)
    assert all(sum(len(t.encode()) for t in request.inputs) <= MAX_BATCH_BYTES for request in requests)
    assert [len(request.inputs) for request in requests] == [31, 9]
    assert requests[0].inputs[0] == texts[0][:MAX_INPUT_BYTES]


def test_dimensions_follow_the_setting(stub: OpenAIStub) -> None:
    for dimensions in (64, 1024, 1536):
        (vector,) = embedder_for(stub, dimensions=dimensions).embed(["payments"])
        assert len(vector) == dimensions and stub.embedding_requests[-1].body["dimensions"] == dimensions


def test_a_server_ignoring_dimensions_is_a_configuration_error(stub: OpenAIStub) -> None:
    stub.embedding_dimensions = 1536
    with pytest.raises(ConfigurationError, match="MEMORY_EMBEDDING_DIMENSIONS=256"):
        embedder_for(stub).embed(["payments"])


def test_nothing_to_embed_makes_no_request(stub: OpenAIStub) -> None:
    assert embedder_for(stub).embed([]) == []
    assert embedder_for(stub, dimensions=64).embed(["", "  "]) == [[0.0] * 64, [0.0] * 64]
    assert stub.embedding_call_count == 0


def test_one_server_error_then_success_is_retried_once(stub: OpenAIStub) -> None:
    stub.fail_embeddings_with(500, times=1)
    (vector,) = embedder_for(stub).embed(["payments"])
    assert vector == pytest.approx(expected("payments", 256))
    assert stub.embedding_call_count == 2


def test_a_persistent_failure_raises_after_one_retry(stub: OpenAIStub) -> None:
    stub.fail_embeddings_with(503)
    with pytest.raises(openai.InternalServerError):
        embedder_for(stub).embed(["payments"])
    assert stub.embedding_call_count == 2


def test_a_bad_request_is_not_retried(stub: OpenAIStub) -> None:
    stub.fail_embeddings_with(400)
    with pytest.raises(openai.BadRequestError):
        embedder_for(stub).embed(["payments"])
    assert stub.embedding_call_count == 1


def test_a_long_retry_after_never_stretches_a_call(stub: OpenAIStub) -> None:
    stub.retry_after_ms = 60_000  # the SDK would wait a minute; the adapter pauses briefly
    stub.fail_embeddings_with(429, times=1)
    started = time.monotonic()
    embedder_for(stub).embed(["payments"])
    assert time.monotonic() - started < 3.0 and stub.embedding_call_count == 2


def test_timeout_is_enforced(stub: OpenAIStub) -> None:
    stub.embedding_delay_s = 5.0
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        embedder_for(stub, timeout_s=0.3).embed(["payments"])
    assert time.monotonic() - started < 3.0 and stub.embedding_call_count == 2


def test_embedding_failures_leave_the_chat_alone(stub: OpenAIStub) -> None:
    stub.fail_embeddings_with(500)
    chat = openai.OpenAI(api_key="sk", base_url=stub.base_url, max_retries=0)
    reply = chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "Alice sells handmade candles."
    assert stub.call_count == 1 and stub.embedding_call_count == 0
    stub.recover()
    assert len(embedder_for(stub).embed(["payments"])) == 1


def test_the_sdks_default_base64_answer_is_served_too(stub: OpenAIStub) -> None:
    client = openai.OpenAI(api_key="sk", base_url=stub.base_url, max_retries=0)
    response = client.embeddings.create(model="m", input=["payments"], dimensions=64)  # base64 asked
    assert stub.embedding_requests[-1].body["encoding_format"] == "base64"
    assert response.data[0].embedding == pytest.approx(OpenAIStub.embedding_vector("payments", 64), rel=1e-6)
    assert response.usage.prompt_tokens == 1


def test_key_from_the_secret_and_base_url_from_the_settings(
    stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "MEMORY_EMBEDDING_PROVIDER", "MEMORY_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_LLM_API_KEY_SECRET", "hippocampus/llm")
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    monkeypatch.setenv("MEMORY_EMBEDDING_DIMENSIONS", "512")
    embedder = make_embedder(Settings(), secret_reader=lambda name: '{"api_key": "sk-secret"}')
    assert embedder is not None and len(embedder.embed(["payments"])[0]) == 512
    assert stub.embedding_requests[-1].headers["authorization"] == "Bearer sk-secret"
