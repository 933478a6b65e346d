"""Runtime settings (docs/configuration.md), parsed once per cold start from the environment.

Every variable is `MEMORY_<FIELD>`, except the OpenAI SDK's own `OPENAI_*` variables and the
Lambda runtime's `AWS_EXECUTION_ENV`; names are matched case-insensitively, keyword arguments win
over the environment, and variables no field names are ignored. A bad value fails fast with a
message that names the variable. Only the composition root reads these settings.

A pydantic model that reads `os.environ` itself rather than a pydantic-settings `BaseSettings`:
every setting is one scalar variable, and importing pydantic-settings (its dotenv, secrets, cloud
and CLI sources) cost every function's cold start about 13 ms, a twentieth of the read path's
whole budget (README "Performance"). pydantic still parses and validates every value.
"""

import os
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from hippocampus.contracts.errors import ConfigurationError
from hippocampus.contracts.names import (
    CONDENSATION_IO_MARGIN_S,
    CONDENSER_TIMEOUT_S,
    DEFAULT_EMBEDDING_DIMENSIONS,
    LLM_TIMEOUTS_PER_CONDENSATION,
    EmbeddingProviderName,
    LlmProviderName,
    TracingMode,
    default_embedding_model,
    default_model,
    max_llm_timeout_s,
)
from hippocampus.contracts.pii import PiiDetectorName, PiiMode
from hippocampus.contracts.records import DEFAULT_MAX_RECORDS

if TYPE_CHECKING:
    from hippocampus.contracts.budgets import TokenBudgets

ENV_PREFIX = "MEMORY_"


class Settings(BaseModel):
    """`Settings()` reads the environment; `Settings(max_words=80)` overrides one value of it."""

    model_config = ConfigDict(extra="ignore", frozen=True, validate_default=True)

    # Resources (set by the CDK app and the local stack).
    table_name: str = ""
    bucket_name: str = ""
    queue_url: str = ""
    dlq_url: str = ""  # the condenser's dead-letter queue (read by the condenser's scheduled pass)
    event_bus_name: str = ""  # the EventBridge bus the events function publishes to

    # Condensation.
    max_words: int = Field(50, ge=5, le=2000)
    condense_prompt: str | None = None
    llm_provider: LlmProviderName | None = None
    # None: the provider's default (names.default_model).
    llm_model: str | None = Field(None, min_length=1)
    openai_base_url: str | None = Field(None, validation_alias=AliasChoices("OPENAI_BASE_URL"))
    openai_api_key: SecretStr | None = Field(None, validation_alias=AliasChoices("OPENAI_API_KEY"))
    llm_api_key_secret: str | None = None
    llm_timeout_s: float = Field(20.0, gt=0)
    # The most characters one condensation prompt carries (domain/condense/prompt_budget.py).
    prompt_max_chars: int = Field(100_000, ge=10_000, le=2_000_000)
    # How long a user's burst must be quiet before it is condensed (domain/condense/queued.py); 0: no wait.
    burst_window_ms: int = Field(300, ge=0, le=1_000)

    # Recall: the vectors of facts and episodes (None: `openai` with a key, else `offline`).
    embedding_provider: EmbeddingProviderName | None = None
    embedding_model: str | None = Field(None, min_length=1)
    embedding_dimensions: int = Field(DEFAULT_EMBEDDING_DIMENSIONS, ge=64, le=1536)
    # The newest condensed turns kept per user for recall (domain/condense/episodes.py).
    max_episodes: int = Field(2_000, ge=1, le=10_000)
    # Records kept per user (contracts/records.py): past it, the oldest invalidated go first.
    max_records: int = Field(DEFAULT_MAX_RECORDS, ge=10, le=10_000)

    # Personal data masked before any model sees it (domain/privacy/masking.py).
    pii: PiiMode = "off"
    pii_detector: PiiDetectorName = "patterns"

    # Tokens per tenant per UTC day (contracts/budgets.py): a whole number for every tenant, or a
    # JSON object of tenant → tokens ("*" for the others); unset: no budget.
    tenant_daily_tokens: str | None = None

    # Retention.
    ttl_days: int | None = Field(None, ge=1)
    job_retention_days: int = Field(30, ge=1)
    idempotency_ttl_s: int = Field(3600, ge=60)

    # Events (contracts/events.py): memory and record text in their details too.
    events_include_content: bool = False

    # Observability.
    log_content: bool = False
    tracing: TracingMode | None = None
    aws_execution_env: str | None = Field(None, validation_alias=AliasChoices("AWS_EXECUTION_ENV"))

    @model_validator(mode="before")
    @classmethod
    def _read_environment(cls, given: Any) -> Any:
        if not isinstance(given, Mapping):
            return given
        # The one reader of the environment, which the rest of the code is banned from reading.
        return {**environment_values(os.environ), **given}  # noqa: TID251

    @field_validator("llm_timeout_s")
    @classmethod
    def _fits_the_condenser(cls, value: float) -> float:
        # One user's worst case must fit the condenser's timeout (docs/configuration.md), as in infra/config.py.
        if value > max_llm_timeout_s():
            raise ValueError(
                f"must be at most {max_llm_timeout_s():g}: {LLM_TIMEOUTS_PER_CONDENSATION} LLM timeouts plus "
                f"{CONDENSATION_IO_MARGIN_S} s must fit in the condenser's {CONDENSER_TIMEOUT_S} s timeout"
            )
        return value

    @field_validator("tenant_daily_tokens")
    @classmethod
    def _budgets(cls, value: str | None) -> str | None:
        if value is not None:
            # Imported here: the budgets' module (and the models it names) is no part of the read
            # path's cold start unless budgets are set.
            from hippocampus.contracts.budgets import TokenBudgets

            TokenBudgets.parse(value)  # a ValueError names what is wrong
        return value

    @model_validator(mode="after")
    def _resolve_defaults(self) -> "Settings":
        has_key = bool(self.openai_api_key or self.llm_api_key_secret)
        if self.llm_provider is None:
            object.__setattr__(self, "llm_provider", "openai" if has_key else "offline")
        if self.llm_model is None:
            object.__setattr__(self, "llm_model", default_model(self.provider) or "")
        if self.embedding_provider is None:
            object.__setattr__(self, "embedding_provider", "openai" if has_key else "offline")
        if self.embedding_model is None:
            object.__setattr__(self, "embedding_model", default_embedding_model(self.embedder) or "")
        if self.tracing is None:
            in_lambda = (self.aws_execution_env or "").startswith("AWS_Lambda")
            object.__setattr__(self, "tracing", "xray" if in_lambda else "off")
        if self.condense_prompt is not None and not self.condense_prompt.strip():
            object.__setattr__(self, "condense_prompt", None)
        return self

    @property
    def token_budgets(self) -> "TokenBudgets":
        from hippocampus.contracts.budgets import TokenBudgets

        return TokenBudgets.parse(self.tenant_daily_tokens)

    @property
    def provider(self) -> LlmProviderName:
        assert self.llm_provider is not None  # resolved by the validator
        return self.llm_provider

    @property
    def embedder(self) -> EmbeddingProviderName:
        assert self.embedding_provider is not None  # resolved by the validator
        return self.embedding_provider

    @property
    def model(self) -> str:
        assert self.llm_model is not None  # resolved by the validator
        return self.llm_model

    @property
    def tracing_mode(self) -> TracingMode:
        assert self.tracing is not None  # resolved by the validator
        return self.tracing

    def require(self, field: str) -> str:
        """A resource setting this function needs; a clear error when it is missing."""
        value = getattr(self, field)
        if not value:
            raise ConfigurationError(f"{variable_name(field)} must be set for this function")
        return str(value)


def _alias(field: str) -> str | None:
    """A field's own variable (OPENAI_*, AWS_*), which is also the key pydantic validates it under."""
    info = Settings.model_fields.get(field)
    alias = info.validation_alias if info else None
    return str(alias.choices[0]) if isinstance(alias, AliasChoices) else None


def _field_variable(field: str) -> str:
    return _alias(field) or ENV_PREFIX + field.upper()


def _input_key(field: str) -> str:
    return _alias(field) or field


# Each field's input key (what an error's location names) and its variable.
_VARIABLES: Final = {_input_key(field): _field_variable(field) for field in Settings.model_fields}


def variable_name(field: str) -> str:
    """The environment variable of a settings field, or of the input key an error names."""
    return _VARIABLES.get(field) or _field_variable(field)


def environment_values(environ: Mapping[str, str]) -> dict[str, str]:
    """The settings `environ` holds, by input key; names compared regardless of case."""
    by_name = {name.upper(): value for name, value in environ.items()}
    return {key: by_name[variable] for key, variable in _VARIABLES.items() if variable in by_name}


def load_settings() -> Settings:
    """Parse the environment; raise ConfigurationError naming each bad variable."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = [
            f"{variable_name(str(error['loc'][0])) if error['loc'] else '(settings)'}: {error['msg']}"
            for error in exc.errors()
        ]
        raise ConfigurationError("invalid configuration: " + "; ".join(problems)) from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, parsed once per cold start."""
    return load_settings()
