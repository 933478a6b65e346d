"""Settings are parsed once and fail fast, naming the variable."""

import pytest

from hippocampus.contracts.errors import ConfigurationError
from hippocampus.settings import Settings, load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in (
        "OPENAI_API_KEY",
        "MEMORY_LLM_API_KEY_SECRET",
        "MEMORY_LLM_PROVIDER",
        "MEMORY_TRACING",
        "AWS_EXECUTION_ENV",
    ):
        monkeypatch.delenv(name, raising=False)


def test_defaults(monkeypatch):
    settings = load_settings()
    assert settings.max_words == 50
    assert settings.provider == "offline"
    assert settings.llm_timeout_s == 20
    assert settings.log_content is False
    assert settings.tracing_mode == "off"


def test_provider_defaults_to_openai_with_a_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = load_settings()
    assert settings.provider == "openai"
    assert settings.model == "gpt-4o-mini"
    assert "sk-test" not in repr(settings)


def test_tracing_defaults_to_xray_in_lambda(monkeypatch):
    monkeypatch.setenv("AWS_EXECUTION_ENV", "AWS_Lambda_python3.13")
    assert load_settings().tracing_mode == "xray"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MEMORY_MAX_WORDS", "many"),
        ("MEMORY_MAX_WORDS", "0"),
        ("MEMORY_LLM_PROVIDER", "skynet"),
        ("MEMORY_LLM_TIMEOUT_S", "-1"),
        ("MEMORY_TRACING", "loud"),
        ("MEMORY_LOG_CONTENT", "perhaps"),
        ("MEMORY_TTL_DAYS", "0"),
    ],
)
def test_bad_values_name_the_variable(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError, match=variable):
        load_settings()


def test_missing_resource_names_the_variable():
    with pytest.raises(ConfigurationError, match="MEMORY_QUEUE_URL"):
        load_settings().require("queue_url")


def test_keyword_arguments_win_over_the_environment(monkeypatch):
    monkeypatch.setenv("MEMORY_MAX_WORDS", "80")
    monkeypatch.setenv("MEMORY_TTL_DAYS", "7")
    settings = Settings(max_words=60)
    assert (settings.max_words, settings.ttl_days) == (60, 7)


def test_variable_names_ignore_case_and_unknown_ones_are_ignored(monkeypatch):
    monkeypatch.setenv("memory_max_words", "81")
    monkeypatch.setenv("Openai_Api_Key", "sk-test")
    monkeypatch.setenv("MEMORY_MAX_WORD", "5000")  # misspelt: no effect
    settings = load_settings()
    assert settings.max_words == 81
    assert settings.provider == "openai"


def test_every_error_is_named(monkeypatch):
    monkeypatch.setenv("MEMORY_MAX_WORDS", "1")
    monkeypatch.setenv("MEMORY_LLM_TIMEOUT_S", "29")
    with pytest.raises(
        ConfigurationError, match=r"MEMORY_MAX_WORDS: .*; MEMORY_LLM_TIMEOUT_S: .*at most 28\.75"
    ):
        load_settings()
