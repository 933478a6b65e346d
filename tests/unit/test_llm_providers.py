"""LLM providers: the factory, the offline merge, lazy openai loading, the API key, Bedrock Converse."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from hippocampus.adapters.llm import make_language_model
from hippocampus.adapters.llm.bedrock import BedrockChat
from hippocampus.adapters.llm.offline import OfflineModel
from hippocampus.adapters.llm.offline_text import extract_blocks
from hippocampus.adapters.llm.openai_chat import OpenAIChat, api_key_source, key_from_secret, read_secret
from hippocampus.contracts.errors import ConfigurationError
from hippocampus.contracts.names import DEFAULT_BEDROCK_MODEL
from hippocampus.contracts.prompt_format import (
    NEW_CONTENT_BEGIN,
    NEW_CONTENT_END,
    NOTHING_TO_KEEP,
    OLD_MEMORY_BEGIN,
    OLD_MEMORY_END,
    count_words,
)
from hippocampus.domain.condense.condenser import Condenser
from hippocampus.domain.condense.prompt import SYSTEM_PROMPT, CondenseInput, PromptTemplate
from hippocampus.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
_LLM_ENV = [
    "MEMORY_LLM_PROVIDER",
    "MEMORY_LLM_MODEL",
    "MEMORY_LLM_API_KEY_SECRET",
    "MEMORY_LLM_TIMEOUT_S",
    "MEMORY_MAX_WORDS",
    "MEMORY_CONDENSE_PROMPT",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
]


@pytest.fixture
def settings_from_env(monkeypatch: pytest.MonkeyPatch):
    """Settings parsed from exactly the given variables (none inherited from the shell)."""
    for name in _LLM_ENV:
        monkeypatch.delenv(name, raising=False)

    def build(**env: str) -> Settings:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return Settings()

    return build


def prompt_for(old: str | None, new: str, template: PromptTemplate | None = None) -> str:
    return (template or PromptTemplate.built_in()).render(old_memory=old, new_content=new, max_words=50)


# --- factory ----------------------------------------------------------------------------------


def test_offline_by_default(settings_from_env) -> None:
    provider = make_language_model(settings_from_env(MEMORY_MAX_WORDS="30"))
    assert isinstance(provider, OfflineModel) and provider.name == "offline" and provider.max_words == 30


def test_openai_with_a_key(settings_from_env) -> None:
    settings = settings_from_env(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:1/v1")
    provider = make_language_model(settings)
    assert isinstance(provider, OpenAIChat) and provider.name == "openai"
    assert provider.model == "gpt-4o-mini"


def test_openai_without_a_key_fails_fast(settings_from_env) -> None:
    with pytest.raises(ConfigurationError) as error:
        make_language_model(settings_from_env(MEMORY_LLM_PROVIDER="openai"))
    assert "OPENAI_API_KEY" in str(error.value) and "MEMORY_LLM_API_KEY_SECRET" in str(error.value)


def test_secret_is_read_lazily_through_the_reader(settings_from_env) -> None:
    reads: list[str] = []

    def reader(name: str) -> str:
        reads.append(name)
        return "sk-from-secret\n"

    settings = settings_from_env(MEMORY_LLM_API_KEY_SECRET="hippocampus/llm-key")
    assert settings.provider == "openai"
    make_language_model(settings, secret_reader=reader)
    assert reads == []  # nothing read at start-up: the first call reads it
    source = api_key_source(settings, reader)
    assert callable(source) and source() == "sk-from-secret"
    assert reads == ["hippocampus/llm-key"]


def test_plain_key_wins_over_the_secret(settings_from_env) -> None:
    settings = settings_from_env(OPENAI_API_KEY="sk-local", MEMORY_LLM_API_KEY_SECRET="unused")
    assert api_key_source(settings, lambda name: pytest.fail("secret must not be read")) == "sk-local"


@pytest.mark.parametrize(
    ("secret", "key"),
    [("sk-1", "sk-1"), ('{"api_key": "sk-2"}', "sk-2"), ('{"OPENAI_API_KEY": " sk-3 "}', "sk-3")],
)
def test_key_from_secret(secret: str, key: str) -> None:
    assert key_from_secret(secret) == key


@pytest.mark.parametrize("secret", ["", "  ", '{"other": "x"}'])
def test_empty_secret_is_a_configuration_error(secret: str) -> None:
    with pytest.raises(ConfigurationError, match="MEMORY_LLM_API_KEY_SECRET"):
        key_from_secret(secret)


def test_default_secret_reader_uses_secrets_manager(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        boto3.client("secretsmanager").create_secret(Name="unit/llm-key", SecretString="sk-managed")
        assert read_secret("unit/llm-key") == "sk-managed"


def test_bedrock_takes_a_bedrock_model_by_default_or_the_one_configured(settings_from_env) -> None:
    default = make_language_model(settings_from_env(MEMORY_LLM_PROVIDER="bedrock"))
    assert isinstance(default, BedrockChat) and default.model == DEFAULT_BEDROCK_MODEL
    chosen = make_language_model(
        settings_from_env(
            MEMORY_LLM_PROVIDER="bedrock", MEMORY_LLM_MODEL="anthropic.claude-3-haiku-20240307-v1:0"
        )
    )
    assert isinstance(chosen, BedrockChat) and chosen.model == "anthropic.claude-3-haiku-20240307-v1:0"


# --- lazy openai ------------------------------------------------------------------------------


def test_importing_the_llm_package_loads_neither_openai_nor_boto3(monkeypatch: pytest.MonkeyPatch) -> None:
    code = (
        "import sys\n"
        "import hippocampus.domain.condense.condenser, hippocampus.adapters.llm, hippocampus.adapters.llm.offline\n"
        "import hippocampus.adapters.llm.openai_chat, hippocampus.adapters.llm.bedrock\n"
        "from hippocampus.settings import Settings\n"
        "provider = hippocampus.adapters.llm.make_language_model(Settings())\n"
        "assert provider.name == 'openai', provider.name\n"
        "loaded = sorted(m for m in ('openai', 'boto3', 'httpx2') if m in sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("MEMORY_LLM_PROVIDER", raising=False)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


def test_openai_sdk_is_imported_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = OpenAIChat(model="m", api_key="sk", timeout_s=1)
    monkeypatch.setitem(sys.modules, "openai", None)  # any `import openai` now fails
    with pytest.raises(ImportError):
        provider.complete("system", "prompt")


def test_openai_client_is_configured_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    provider = OpenAIChat(model="m", api_key="sk-x", timeout_s=3.5, base_url="http://127.0.0.1:9/v1")
    client = provider.client()
    assert provider.client() is client
    assert client.timeout == 3.5
    assert str(client.base_url) == "http://127.0.0.1:9/v1/"


# --- bedrock ----------------------------------------------------------------------------------

_CONVERSE_RESPONSE: dict[str, Any] = {
    "output": {"message": {"role": "assistant", "content": [{"text": "Alice sells "}, {"text": "candles."}]}},
    "stopReason": "end_turn",
    "usage": {"inputTokens": 120, "outputTokens": 4, "totalTokens": 124},
    "metrics": {"latencyMs": 321},
}


def _bedrock_client() -> Any:
    return boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )


def test_bedrock_converse_request_and_parsing() -> None:
    client = _bedrock_client()
    provider = BedrockChat(model="amazon.nova-lite-v1:0", timeout_s=5, client=client)
    with Stubber(client) as stubber:
        stubber.add_response(
            "converse",
            _CONVERSE_RESPONSE,
            expected_params={
                "modelId": "amazon.nova-lite-v1:0",
                "system": [{"text": "be brief"}],
                "messages": [{"role": "user", "content": [{"text": "the prompt"}]}],
                "inferenceConfig": {"temperature": 0.1},
            },
        )
        result = provider.complete("be brief", "the prompt")
        stubber.assert_no_pending_responses()
    assert result.text == "Alice sells candles."
    assert (result.prompt_tokens, result.completion_tokens) == (120, 4)


def test_bedrock_answers_the_structured_answer_through_a_forced_tool() -> None:
    """With a schema, the model must call the one tool whose input schema it is; its input is the answer."""
    from hippocampus.adapters.llm.bedrock import TOOL_NAME
    from hippocampus.contracts.records import ANSWER_SCHEMA

    answer = {"summary": "Alice sells candles.", "operations": []}
    response = {
        "output": {
            "message": {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t", "name": TOOL_NAME, "input": answer}}],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": 120, "outputTokens": 9, "totalTokens": 129},
        "metrics": {"latencyMs": 300},
    }
    tool = {"name": TOOL_NAME, "description": "Record the answer.", "inputSchema": {"json": ANSWER_SCHEMA}}
    expected = {
        "modelId": "m",
        "system": [{"text": "s"}],
        "messages": [{"role": "user", "content": [{"text": "p"}]}],
        "inferenceConfig": {"temperature": 0.1},
        "toolConfig": {"tools": [{"toolSpec": tool}], "toolChoice": {"tool": {"name": TOOL_NAME}}},
    }
    client = _bedrock_client()
    with Stubber(client) as stubber:
        stubber.add_response("converse", response, expected_params=expected)
        result = BedrockChat(model="m", timeout_s=5, client=client).complete("s", "p", schema=ANSWER_SCHEMA)
        stubber.assert_no_pending_responses()
    assert json.loads(result.text) == answer


def test_bedrock_errors_propagate_after_one_retry() -> None:
    client = _bedrock_client()
    with Stubber(client) as stubber:
        for _ in range(2):
            stubber.add_client_error("converse", "ThrottlingException", http_status_code=429)
        with pytest.raises(client.exceptions.ThrottlingException):
            BedrockChat(model="m", timeout_s=5, client=client).complete("s", "p")
        stubber.assert_no_pending_responses()


def test_bedrock_retries_a_throttled_call_once_and_not_a_bad_request() -> None:
    client = _bedrock_client()
    with Stubber(client) as stubber:
        stubber.add_client_error("converse", "ThrottlingException", http_status_code=429)
        stubber.add_response("converse", _CONVERSE_RESPONSE)
        assert (
            BedrockChat(model="m", timeout_s=5, client=client).complete("s", "p").text
            == "Alice sells candles."
        )
        stubber.add_client_error("converse", "ValidationException", http_status_code=400)
        with pytest.raises(client.exceptions.ValidationException):
            BedrockChat(model="m", timeout_s=5, client=client).complete("s", "p")
        stubber.assert_no_pending_responses()


def test_bedrock_starts_no_call_that_could_not_end_in_time() -> None:
    # botocore cannot shorten one call: with less than the client timeout left, nothing is sent.
    client = _bedrock_client()
    with Stubber(client), pytest.raises(TimeoutError):
        BedrockChat(model="m", timeout_s=5, client=client).complete("s", "p", timeout_s=4.0)
    with Stubber(client) as stubber:
        stubber.add_client_error("converse", "ThrottlingException", http_status_code=429)
        with pytest.raises(client.exceptions.ThrottlingException):  # no time for the retry: not made
            BedrockChat(model="m", timeout_s=5, client=client).complete("s", "p", timeout_s=5.2)
        stubber.assert_no_pending_responses()


def test_bedrock_client_created_once_with_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    provider = BedrockChat(model="m", timeout_s=7)
    client = provider.client()
    assert provider.client() is client
    assert client.meta.service_model.service_name == "bedrock-runtime"
    assert client.meta.config.connect_timeout == 7 and client.meta.config.read_timeout == 7


# --- offline ----------------------------------------------------------------------------------


def test_offline_is_deterministic() -> None:
    prompt = prompt_for("Alice sells candles.", "User: I live in Berlin.\nAssistant: Great city!")
    answers = {OfflineModel(50).complete(SYSTEM_PROMPT, prompt).text for _ in range(3)}
    assert answers == {"Alice sells candles. I live in Berlin."}


def test_offline_reports_words_as_tokens() -> None:
    prompt = prompt_for(None, "I prefer dark mode.")
    result = OfflineModel(50).complete("one two", prompt)
    assert result.completion_tokens == 4 and result.prompt_tokens == 2 + count_words(prompt)


def test_offline_drops_small_talk_questions_and_assistant_lines() -> None:
    new = (
        "User: Hi! Thanks so much. Nice to meet you. Can you help me? I use Python 3.13 at work.\n"
        "Assistant: Sure, I can help. Python 3.13 is a fine choice.\n"
        "It has a new REPL."
    )
    assert OfflineModel(50).merge("", new) == "I use Python 3.13 at work."


def test_offline_keeps_old_memory_when_nothing_is_worth_keeping() -> None:
    prompt = prompt_for("Alice sells candles.", "Alice: Hello!\nAssistant: Hi Alice, how are you?\n\nthanks")
    assert OfflineModel(50).complete(SYSTEM_PROMPT, prompt).text == "Alice sells candles."


def test_offline_says_nothing_to_keep_when_small_talk_meets_an_empty_memory() -> None:
    prompt = prompt_for(None, "User: Hello! Thanks so much.\nAssistant: You're welcome!")
    assert OfflineModel(50).complete(SYSTEM_PROMPT, prompt).text == NOTHING_TO_KEEP


def test_offline_newer_sentence_replaces_same_subject() -> None:
    merged = OfflineModel(50).merge("I live in Berlin. I sell candles.", "Actually, I live in Munich now.")
    assert merged == "I sell candles. I live in Munich now."


def test_offline_fits_the_budget_dropping_oldest_first() -> None:
    provider = OfflineModel(12)
    merged = provider.merge("I sell candles on Shopify. My dog is called Rex.", "I prefer tea over coffee.")
    assert merged == "My dog is called Rex. I prefer tea over coffee."
    assert count_words(provider.merge("", " ".join(f"w{i}" for i in range(40)))) == 12


def test_offline_without_markers_uses_last_code_block_or_whole_prompt() -> None:
    assert extract_blocks("Summarise:\n```\nI like tea.\n```\nthanks") == ("", "I like tea.\n")
    assert OfflineModel(50).complete("s", "I like green tea").text == "I like green tea."


def test_offline_reads_fences_not_prose_naming_them() -> None:
    template = PromptTemplate(
        f"Data sits between {NEW_CONTENT_BEGIN} and {NEW_CONTENT_END}; memory between "
        f"{OLD_MEMORY_BEGIN} and {OLD_MEMORY_END}.\nMemory: {{{{OLD_MEMORY}}}}\nNew: {{{{NEW_CONTENT}}}}"
    )
    assert extract_blocks(prompt_for("I sell candles.", "I like tea.", template)) == (
        "I sell candles.",
        "I like tea.",
    )


def test_offline_keeps_durable_facts_through_five_condensations() -> None:
    """Without records in view (a condenser driven alone), the stand-in merges sentences as before
    records existed; through the condenser's records it rebuilds from them (test_offline_records.py)."""
    condenser = Condenser(OfflineModel(50), 50)
    turns = [
        CondenseInput(
            pairs=(("Hi! My name is Alice, I sell handmade candles on Shopify.", "Nice to meet you!"),),
            user_name="Alice",
        ),
        CondenseInput(pairs=(("I live in Berlin.", "Lovely city."), ("Thanks!", "You're welcome."))),
        CondenseInput(text="Also, I prefer dark mode in every app."),
        CondenseInput(pairs=(("Actually I live in Munich now. How is the weather there?", "Sunny."),)),
        CondenseInput(
            pairs=(("My goal is to reach 1000 orders by December.", "Let's plan it."),), user_name="Alice"
        ),
    ]
    memory: str | None = None
    for turn in turns:
        outcome = condenser.condense(memory, [turn])
        assert outcome.llm_calls == 1 and outcome.word_count <= 50
        memory = outcome.memory
    assert memory == (
        "The user's name is Alice. Alice sells handmade candles on Shopify. I prefer dark mode in every "
        "app. I live in Munich now. My goal is to reach 1000 orders by December."
    )
    assert memory is not None and "Berlin" not in memory and "Nice to meet you" not in memory
