"""The real openai SDK against a local OpenAI-compatible stub: request shape, parsing, timeout, retries."""

import json
import time
from collections.abc import Iterator

import openai
import pytest

from hippocampus.adapters.llm import make_language_model
from hippocampus.adapters.llm.offline_text import extract_blocks
from hippocampus.adapters.llm.openai_chat import OpenAIChat
from hippocampus.domain.condense.condenser import Condenser, EmptyAnswer
from hippocampus.domain.condense.prompt import SYSTEM_PROMPT, CondenseInput
from hippocampus.settings import Settings
from tests.support.openai_stub import OpenAIStub


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub(reply="Alice sells handmade candles.") as server:
        yield server


def provider_for(stub: OpenAIStub, timeout_s: float = 5.0, api_key: str = "sk-test") -> OpenAIChat:
    return OpenAIChat(model="gpt-4o-mini", api_key=api_key, timeout_s=timeout_s, base_url=stub.base_url)


def test_request_shape_and_parsing(stub: OpenAIStub) -> None:
    result = provider_for(stub).complete("be brief", "merge these two notes")
    request = stub.last_request
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body["model"] == "gpt-4o-mini"
    assert request.body["temperature"] == 0.1
    assert request.messages == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "merge these two notes"},
    ]
    assert result.text == "Alice sells handmade candles."
    assert (result.prompt_tokens, result.completion_tokens) == (6, 4)


def test_timeout_is_enforced(stub: OpenAIStub) -> None:
    stub.delay_s = 5.0
    provider = provider_for(stub, timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        provider.complete("s", "p")
    elapsed = time.monotonic() - started
    assert elapsed < 3.0  # two attempts of 0.3 s plus one short back-off, far below the stub's 5 s
    assert stub.call_count <= 2


def test_server_error_is_retried_at_most_once(stub: OpenAIStub) -> None:
    stub.fail_with(500)
    with pytest.raises(openai.InternalServerError):
        provider_for(stub).complete("s", "p")
    assert stub.call_count == 2


def test_one_failure_then_success(stub: OpenAIStub) -> None:
    stub.fail_with(503, times=1)
    assert provider_for(stub).complete("s", "p").text == "Alice sells handmade candles."
    assert stub.call_count == 2


def test_client_errors_are_not_retried(stub: OpenAIStub) -> None:
    stub.fail_with(400)
    with pytest.raises(openai.BadRequestError):
        provider_for(stub).complete("s", "p")
    assert stub.call_count == 1


def test_scripted_replies_and_recovery(stub: OpenAIStub) -> None:
    provider = provider_for(stub)
    stub.script("first", "second")
    assert [provider.complete("s", "p").text for _ in range(3)] == [
        "first",
        "second",
        "Alice sells handmade candles.",
    ]
    stub.fail_with(500)
    with pytest.raises(openai.InternalServerError):
        provider.complete("s", "p")
    stub.recover()
    assert provider.complete("s", "p").text == "Alice sells handmade candles."


def test_key_from_secret_reaches_the_server(stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "MEMORY_LLM_PROVIDER", "MEMORY_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_LLM_API_KEY_SECRET", "hippocampus/llm")
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    provider = make_language_model(Settings(), secret_reader=lambda name: '{"api_key": "sk-secret"}')
    provider.complete("s", "p")
    assert stub.last_request.headers["authorization"] == "Bearer sk-secret"


def test_condenser_end_to_end_over_http(stub: OpenAIStub) -> None:
    stub.set_reply(lambda body: '"Summary: Alice lives in Munich."')
    condenser = Condenser(provider_for(stub), 50)
    outcome = condenser.condense(
        "Alice lives in Berlin.",
        [CondenseInput(text="I moved to Munich."), CondenseInput(pairs=(("Thanks!", "Anytime."),))],
    )
    assert stub.call_count == 1
    assert outcome.memory == "Alice lives in Munich." and outcome.changed
    system, user = (message["content"] for message in stub.last_request.messages)
    assert system == SYSTEM_PROMPT
    new_content = "I moved to Munich.\n\nUser: Thanks!\nAssistant: Anytime."
    assert extract_blocks(user) == ("Alice lives in Berlin.", new_content)


@pytest.mark.parametrize(
    "body",
    [
        {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": []},
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "stop"}
            ],
        },
        {"id": "c", "object": "chat.completion", "created": 0, "model": "m"},
        {},
        {"choices": [{}]},
        {"choices": [{"message": {"role": "assistant", "content": [{"type": "text", "text": "x"}]}}]},
    ],
    ids=["no-choices", "null-content", "choices-missing", "empty-object", "no-message", "content-not-text"],
)
def test_replies_without_text_read_as_empty_and_the_condenser_refuses_them(
    stub: OpenAIStub, body: dict[str, object]
) -> None:
    stub.script_body(body, body)
    assert provider_for(stub).complete("s", "p").text == ""
    with pytest.raises(EmptyAnswer):
        Condenser(provider_for(stub), 50).condense("Alice lives in Berlin.", [CondenseInput(text="x")])


def test_a_long_retry_after_never_stretches_a_call(stub: OpenAIStub) -> None:
    # The SDK would sleep as long as the server asks (up to two minutes): the adapter pauses briefly.
    stub.retry_after_ms = 60_000
    stub.fail_with(429, times=1)
    started = time.monotonic()
    assert provider_for(stub).complete("s", "p").text == "Alice sells handmade candles."
    assert time.monotonic() - started < 3.0 and stub.call_count == 2


def test_the_time_given_caps_the_call_and_its_retry(stub: OpenAIStub) -> None:
    stub.delay_s = 5.0
    provider = provider_for(stub, timeout_s=4.0)
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        provider.complete("s", "p", timeout_s=1.2)
    assert time.monotonic() - started < 2.0  # one attempt of 1.2 s; no room for a retry
    assert stub.call_count == 1


def test_a_backlog_over_the_models_context_is_condensed_in_calls_that_fit_it() -> None:
    """The OpenAI-compatible stub refuses any prompt over 60,000 characters, as a provider refuses
    one over its context; the condenser's budget keeps every call under it."""
    from hippocampus.contracts.models import IngestRequest
    from tests.support.fakes import Ports  # the stores in memory, the LLM adapter for real

    with OpenAIStub(reply="Alice wrote a long story.", context_chars=60_000) as limited:
        ports = Ports()
        for index in range(12):
            item = {"id": f"t{index}", "text": f"Chapter {index}. " + "word " * 6_300}  # 32,000 chars
            ports.ingest().ingest(
                "acme", "alice", IngestRequest.model_validate({"items": [item]}), f"r{index}"
            )
        service = ports.consolidation(provider_for(limited), max_words=200, prompt_max_chars=55_000)
        assert service.process_batch(ports.queued()).failures == {}
        assert all(job.status == "completed" for job in ports.jobs.jobs.values())
        assert limited.call_count == 12  # one 32,000-character chapter per call


def test_openai_asks_for_strict_structured_outputs(stub: OpenAIStub) -> None:
    from hippocampus.contracts.records import ANSWER_SCHEMA

    result = provider_for(stub).complete("s", "p", schema=ANSWER_SCHEMA)
    assert json.loads(result.text) == {"summary": "Alice sells handmade candles.", "operations": []}
    response_format = stub.last_request.body["response_format"]
    assert response_format["type"] == "json_schema" and response_format["json_schema"]["strict"] is True
    assert response_format["json_schema"]["schema"] == ANSWER_SCHEMA


def test_a_model_without_structured_outputs_is_asked_in_text_from_then_on(stub: OpenAIStub) -> None:
    """gpt-3.5-turbo and many compatible servers refuse `response_format`: the adapter asks again in
    text, once, and this process asks in text from then on; the plain answer is the summary alone."""
    from hippocampus.contracts.records import ANSWER_SCHEMA

    stub.structured_outputs = False
    provider = provider_for(stub)
    assert provider.complete("s", "p", schema=ANSWER_SCHEMA).text == "Alice sells handmade candles."
    assert provider.complete("s", "p", schema=ANSWER_SCHEMA).text == "Alice sells handmade candles."
    assert ["response_format" in request.body for request in stub.requests] == [True, False, False]
