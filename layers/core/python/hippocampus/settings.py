"""Runtime settings (DESIGN §4), parsed once per cold start from the environment.

A bad value fails fast with a message that names the variable.
"""

from functools import lru_cache
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

LlmProvider = Literal["openai", "bedrock", "offline"]
TracingMode = Literal["xray", "otel", "off"]


class ConfigurationError(RuntimeError):
    """The environment holds an invalid setting; the message names the variable."""


def _env(name: str) -> AliasChoices:
    return AliasChoices(name)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(case_sensitive=True, extra="ignore", frozen=True)

    # Resources (set by the CDK app and the local stack).
    table_name: str = Field("", validation_alias=_env("MEMORY_TABLE_NAME"))
    idempotency_table_name: str = Field("", validation_alias=_env("MEMORY_IDEMPOTENCY_TABLE_NAME"))
    bucket_name: str = Field("", validation_alias=_env("MEMORY_BUCKET_NAME"))
    queue_url: str = Field("", validation_alias=_env("MEMORY_QUEUE_URL"))

    # Condensation.
    max_words: int = Field(50, ge=5, le=2000, validation_alias=_env("MEMORY_MAX_WORDS"))
    condense_prompt: str | None = Field(None, validation_alias=_env("MEMORY_CONDENSE_PROMPT"))
    llm_provider: LlmProvider | None = Field(None, validation_alias=_env("MEMORY_LLM_PROVIDER"))
    llm_model: str = Field("gpt-4o-mini", min_length=1, validation_alias=_env("MEMORY_LLM_MODEL"))
    openai_base_url: str | None = Field(None, validation_alias=_env("OPENAI_BASE_URL"))
    openai_api_key: SecretStr | None = Field(None, validation_alias=_env("OPENAI_API_KEY"))
    llm_api_key_secret: str | None = Field(None, validation_alias=_env("MEMORY_LLM_API_KEY_SECRET"))
    llm_timeout_s: float = Field(20.0, gt=0, le=300, validation_alias=_env("MEMORY_LLM_TIMEOUT_S"))

    # Retention.
    memory_ttl_days: int | None = Field(None, ge=1, validation_alias=_env("MEMORY_TTL_DAYS"))
    job_retention_days: int = Field(30, ge=1, validation_alias=_env("MEMORY_JOB_RETENTION_DAYS"))
    idempotency_ttl_s: int = Field(3600, ge=60, validation_alias=_env("MEMORY_IDEMPOTENCY_TTL_S"))

    # Observability.
    log_content: bool = Field(False, validation_alias=_env("MEMORY_LOG_CONTENT"))
    tracing: TracingMode | None = Field(None, validation_alias=_env("MEMORY_TRACING"))
    aws_execution_env: str | None = Field(None, validation_alias=_env("AWS_EXECUTION_ENV"))

    @model_validator(mode="after")
    def _resolve_defaults(self) -> "Settings":
        has_key = bool(self.openai_api_key or self.llm_api_key_secret)
        if self.llm_provider is None:
            object.__setattr__(self, "llm_provider", "openai" if has_key else "offline")
        if self.tracing is None:
            in_lambda = (self.aws_execution_env or "").startswith("AWS_Lambda")
            object.__setattr__(self, "tracing", "xray" if in_lambda else "off")
        if self.condense_prompt is not None and not self.condense_prompt.strip():
            object.__setattr__(self, "condense_prompt", None)
        return self

    @property
    def provider(self) -> LlmProvider:
        assert self.llm_provider is not None  # resolved by the validator
        return self.llm_provider

    @property
    def tracing_mode(self) -> TracingMode:
        assert self.tracing is not None  # resolved by the validator
        return self.tracing

    def require(self, field: str) -> str:
        """A resource setting this function needs; a clear error when it is missing."""
        value = getattr(self, field)
        if not value:
            alias = type(self).model_fields[field].validation_alias
            name = alias.choices[0] if isinstance(alias, AliasChoices) else field
            raise ConfigurationError(f"{name} must be set for this function")
        return str(value)


def load_settings() -> Settings:
    """Parse the environment; raise ConfigurationError naming each bad variable."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else ""
            alias = Settings.model_fields[field].validation_alias if field in Settings.model_fields else None
            name = alias.choices[0] if isinstance(alias, AliasChoices) else field
            problems.append(f"{name}: {error['msg']}")
        raise ConfigurationError("invalid configuration: " + "; ".join(problems)) from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, parsed once per cold start."""
    return load_settings()
