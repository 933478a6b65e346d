"""Deployment configuration (docs/configuration.md): the `hippocampus` object of cdk.json's context.

Validated by a pydantic model at synth time; a bad key or value fails with a message that
names the key (`hippocampus.max_words: ...`). This module must not import aws_cdk: the local
stack imports it for the same defaults (word budget, retention days, ...).

Single keys can be overridden on the CDK command line without editing cdk.json:
`cdk deploy -c hippocampus.stage=prod -c hippocampus.max_words=80`.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from hippocampus.contracts.budgets import ANY_TENANT
from hippocampus.contracts.events import DetailType
from hippocampus.contracts.limits import IDENTIFIER_PATTERN
from hippocampus.contracts.names import (
    CONDENSER_TIMEOUT_S,
    DEFAULT_EMBEDDING_DIMENSIONS,
    DLQ_RETENTION_DAYS,
    LLM_TIMEOUTS_PER_CONDENSATION,
    OFFLINE_EMBEDDING_DIMENSIONS,
    QUEUE_RETENTION_DAYS,
    SERVICE_NAME,
    TITAN_V2_DIMENSIONS,
    EmbeddingProviderName,
    LlmProviderName,
    condensation_budget_s,
    default_embedding_model,
    default_model,
    max_llm_timeout_s,
)
from hippocampus.contracts.pii import PiiDetectorName, PiiMode
from hippocampus.contracts.records import DEFAULT_MAX_RECORDS

CONTEXT_KEY: Final = "hippocampus"
DEFAULT_CDK_JSON: Final = Path(__file__).resolve().parent.parent / "cdk.json"

# The retention periods CloudWatch Logs accepts (PutRetentionPolicy).
LOG_RETENTION_DAYS: Final = frozenset(
    {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)

# Token budgets: each named tenant gets two alarms (infra/monitoring.py), and CloudFormation takes
# at most 500 resources per stack; the budgets travel as one environment variable, and Lambda allows
# 4 KB of variables per function in all (the condenser's others take up to about 1.5 KB).
MAX_BUDGETED_TENANTS: Final = 100
MAX_BUDGETS_JSON_CHARS: Final = 2048

# Webhooks (infra/events.py): each is an EventBridge connection, API destination and rule, and EventBridge
# allows 50 connections per account and region by default.
MAX_WEBHOOKS: Final = 20

EVENT_DETAIL_TYPES: Final[tuple[DetailType, ...]] = get_args(DetailType)
DEFAULT_WEBHOOK_HEADER: Final = "X-Api-Key"

# The stack's size (docs/configuration.md "The stack's size"): CloudFormation takes at most 500
# resources per stack, and budgeted tenants and webhooks are the settings whose resources grow with
# their number, so the two are checked together against what the rest of the stack leaves. Measured by
# synthesizing; tests/infra/test_stack_size.py checks each number against the largest accepted stack.
STACK_MAX_RESOURCES: Final = 500
RESOURCES_PER_BUDGETED_TENANT: Final = 2  # its two alarms
RESOURCES_PER_WEBHOOK: Final = 5  # its connection, API destination and rule, and the rule's role and policy
# The rest at its largest: every setting that adds resources (pii_detector comprehend, snapstart,
# removal_policy destroy, alarm_email), what the webhooks share (their DLQ, its policy and alarm), and
# the CDKMetadata resource the CDK CLI adds (version reporting).
STACK_OTHER_RESOURCES: Final = 217
# Left free for resources no setting decides: routes to come (up to 3 each), the roles an application
# grants access to in the same stack, what a CDK upgrade adds.
SPARE_RESOURCES: Final = 30
TENANT_AND_WEBHOOK_RESOURCES: Final = STACK_MAX_RESOURCES - SPARE_RESOURCES - STACK_OTHER_RESOURCES

# The only vector sizes Titan Text Embeddings V2 offers (as the bedrock embedding adapter checks at
# cold start): refused here at synth time instead of failing every deployed cold start.

Architecture = Literal["arm64", "x86_64"]

Stage = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]{0,19}$")]
SecretName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9/_+=.@-]{1,512}$")]
ModelId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$")]
Email = Annotated[str, StringConstraints(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$", max_length=254)]
HttpsUrl = Annotated[str, StringConstraints(pattern=r"^https://[^\s]+$", max_length=2048)]
# Tokens per UTC day: a JSON integer (not 1.0, "5" or true), at least 1.
DailyTokens = Annotated[int, Field(strict=True, ge=1)]
# A webhook's name is part of its resources' names, `hippocampus-<stage>-webhook-<name>`, which
# EventBridge allows 64 characters (a stage has up to 20).
WebhookName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,22}$")]
# An HTTP header name (RFC 9110 token characters).
HeaderName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,256}$")]


class ConfigError(ValueError):
    """The deployment configuration is invalid; the message names each bad key."""


class Webhook(BaseModel):
    """One entry of `webhooks`: the change events of some detail types POSTed to an HTTPS endpoint."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: WebhookName = Field(description="Unique; names its connection, API destination and rule.")
    url: HttpsUrl = Field(description="The endpoint EventBridge POSTs each event to (HTTPS only).")
    secret_name: SecretName = Field(
        description="Existing Secrets Manager secret whose value (plain text) is the API key sent."
    )
    header: HeaderName = Field(DEFAULT_WEBHOOK_HEADER, description="The header the API key is sent in.")
    detail_types: tuple[DetailType, ...] = Field(
        EVENT_DETAIL_TYPES, description="The detail types sent (default: all four)."
    )

    @field_validator("url", mode="before")
    @classmethod
    def _https(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.startswith("https://"):
            raise ValueError(
                "must be an https:// URL (EventBridge API destinations call HTTPS endpoints only)"
            )
        return value

    @field_validator("detail_types")
    @classmethod
    def _distinct(cls, value: tuple[DetailType, ...]) -> tuple[DetailType, ...]:
        if not value:
            raise ValueError("must name at least one detail type")
        if len(set(value)) != len(value):
            raise ValueError("names a detail type twice")
        return value


def _json_of_cli_string(value: Any) -> Any:
    """A `-c key='<json>'` value as the JSON it holds (`_parse_override` keeps objects and lists as
    strings); any other value as given, for its validator to name."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return json.loads(value)
    return value


class DeploymentConfig(BaseModel):
    """Everything a deployment can choose. Defaults give a working `offline` stack."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stage: Stage = Field("dev", description="Stage name: API Gateway stage, resource name prefix, tags.")
    max_words: int = Field(50, ge=5, le=2000, description="Word budget of a condensed memory.")
    raw_retention_days: int = Field(
        30, ge=1, le=3650, description="S3 expiration of raw/ payloads; also the job retention."
    )
    history_retention_days: int = Field(365, ge=1, le=3650, description="S3 expiration of history/.")
    memory_ttl_days: int | None = Field(
        None, ge=1, le=3650, description="DynamoDB TTL of a memory, refreshed on write (None: keep forever)."
    )

    llm_provider: LlmProviderName = Field("offline", description="openai, bedrock, or offline (no LLM).")
    llm_model: ModelId | None = Field(
        None,
        description="Model id; by default gpt-4o-mini for openai and amazon.nova-lite-v1:0 for bedrock.",
    )
    llm_base_url: HttpsUrl | None = Field(None, description="OpenAI-compatible endpoint (openai only).")
    llm_secret_name: SecretName | None = Field(
        None,
        description="Existing Secrets Manager secret holding the API key (openai only); "
        "default hippocampus/<stage>/llm-api-key.",
    )
    llm_timeout_s: float = Field(20.0, gt=0, description="Timeout of one LLM call, in seconds.")
    llm_latency_alarm_ms: int = Field(10_000, ge=100, description="Alarm threshold of the LLM latency p90.")
    condenser_max_concurrency: int | None = Field(
        None, ge=2, le=1000, description="Cap on concurrent condenser invocations (LLM rate limits)."
    )

    embedding_provider: EmbeddingProviderName | None = Field(
        None,
        description="openai, bedrock, offline (a static model on a layer), hashed (feature hashing) or "
        "none (lexical only); None follows llm_provider (openai → openai, bedrock → bedrock, offline → offline).",
    )
    embedding_model: ModelId | None = Field(
        None,
        description="Embedding model id (openai, bedrock); by default text-embedding-3-small for openai "
        "and amazon.titan-embed-text-v2:0 for bedrock.",
    )
    embedding_dimensions: int = Field(
        DEFAULT_EMBEDDING_DIMENSIONS, ge=64, le=1536, description="Size of the stored vectors."
    )
    max_episodes: int = Field(
        2_000, ge=1, le=10_000, description="Newest condensed turns kept per user for recall."
    )
    max_records: int = Field(
        DEFAULT_MAX_RECORDS,
        ge=10,
        le=10_000,
        description="Records kept per user (the oldest invalidated trimmed first, then the oldest current).",
    )

    pii: PiiMode = Field(
        "off",
        description="mask: personal data is replaced by typed placeholders before any LLM or embedding call "
        "and in everything stored from an item (ingest, condenser, recall); off: nothing is masked.",
    )
    pii_detector: PiiDetectorName = Field(
        "patterns",
        description="What finds the personal data when pii is mask: patterns (checked patterns, in the "
        "function, the `pii` layer) or comprehend (Amazon Comprehend DetectPiiEntities, adds names and "
        "postal addresses; billed per request).",
    )

    tenant_token_budgets: dict[str, DailyTokens] = Field(
        default_factory=dict,
        description='LLM tokens per tenant per UTC day ({"acme": 200000}, "*" for every other tenant): over '
        "it a tenant's turns are kept and condensed after 00:00 UTC; {} means no budget.",
    )

    events_include_content: bool = Field(
        False,
        description="Change events carry the summary's and records' text too (otherwise ids, versions, "
        "counts and times only).",
    )
    webhooks: tuple[Webhook, ...] = Field(
        (),
        description="HTTPS endpoints the change events are POSTed to (EventBridge API destinations); "
        "[] creates none.",
    )

    tracing: bool = Field(True, description="X-Ray: Lambda active tracing and API Gateway tracing.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="Function log level.")
    log_retention_days: int = Field(30, description="Retention of every log group.")
    api_logging_level: Literal["ERROR", "INFO", "OFF"] = Field(
        "ERROR", description="API Gateway execution logging (never with request or response bodies)."
    )
    create_api_gateway_cloudwatch_role: bool = Field(
        True,
        description="Set the region's API Gateway CloudWatch role (needed once per account and region "
        "for API logs; set false if the account already has one).",
    )
    throttling_rate_limit: float = Field(50.0, gt=0, le=10_000, description="API stage steady-state rps.")
    throttling_burst_limit: int = Field(100, ge=1, le=5_000, description="API stage burst.")

    alarm_email: Email | None = Field(None, description="E-mail subscribed to the alarm topic.")
    architecture: Architecture = Field("arm64", description="Lambda architecture.")
    snapstart: bool = Field(
        False,
        description="Lambda SnapStart for the read functions (get_memory, recall): each deployment "
        "publishes a version (initialized and snapshotted) behind a `live` alias that the API calls; "
        "billed for the snapshot's cache while the version exists and for every restore.",
    )
    removal_policy: Literal["retain", "destroy"] = Field(
        "retain", description="What `cdk destroy` does with tables, buckets and log groups."
    )

    @field_validator("tenant_token_budgets", mode="before")
    @classmethod
    def _budgets_object(cls, value: Any) -> Any:
        # `-c hippocampus.tenant_token_budgets='{"acme": 200000}'` arrives as a string.
        value = _json_of_cli_string(value)
        if not isinstance(value, Mapping):
            raise ValueError(
                'must be an object of tenant id to tokens per UTC day, "*" for every other tenant, '
                'e.g. {"acme": 200000, "*": 50000}'
            )
        return value

    @field_validator("tenant_token_budgets")
    @classmethod
    def _budgeted_tenants(cls, value: dict[str, int]) -> dict[str, int]:
        for tenant in value:
            if tenant != ANY_TENANT and not re.fullmatch(IDENTIFIER_PATTERN, tenant):
                raise ValueError(
                    f'tenant id {tenant!r} must match {IDENTIFIER_PATTERN} (or be "{ANY_TENANT}")'
                )
        named = len(value.keys() - {ANY_TENANT})
        if named > MAX_BUDGETED_TENANTS:
            raise ValueError(
                f"names {named} tenants: at most {MAX_BUDGETED_TENANTS} (two alarms each; a stack holds "
                f'at most 500 resources); give the others "{ANY_TENANT}"'
            )
        size = len(_compact_json(value))
        if size > MAX_BUDGETS_JSON_CHARS:
            raise ValueError(
                f"is {size} characters as JSON: at most {MAX_BUDGETS_JSON_CHARS} (it is "
                "passed as MEMORY_TENANT_DAILY_TOKENS, and Lambda allows 4 KB of variables per function)"
            )
        return value

    @field_validator("webhooks", mode="before")
    @classmethod
    def _webhooks_list(cls, value: Any) -> Any:
        # `-c hippocampus.webhooks='[{"name": ...}]'` arrives as a string.
        value = _json_of_cli_string(value)
        if not isinstance(value, (list, tuple)):
            raise ValueError(
                'must be a list of webhooks, e.g. [{"name": "crm", "url": "https://...", "secret_name": "..."}]'
            )
        return value

    @field_validator("webhooks")
    @classmethod
    def _webhook_names(cls, value: tuple[Webhook, ...]) -> tuple[Webhook, ...]:
        if len(value) > MAX_WEBHOOKS:
            raise ValueError(f"lists {len(value)} webhooks: at most {MAX_WEBHOOKS}")
        first: dict[str, int] = {}
        for index, webhook in enumerate(value):
            if webhook.name in first:
                raise _KeyError(
                    f"webhooks.{index}.name",
                    f"{webhook.name!r} is already the name of webhook {first[webhook.name]}",
                )
            first[webhook.name] = index
        return value

    @field_validator("log_retention_days")
    @classmethod
    def _known_retention(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            allowed = ", ".join(str(d) for d in sorted(LOG_RETENTION_DAYS))
            raise ValueError(f"must be one of {allowed}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> DeploymentConfig:
        # The embeddings use the LLM's OpenAI endpoint and key, so either may need them.
        if not self.uses_openai:
            for key in ("llm_base_url", "llm_secret_name"):
                if getattr(self, key) is not None:
                    raise _KeyError(key, "only applies when llm_provider or embedding_provider is openai")
        self._check_embeddings()
        self._check_stack_size()
        if self.pii == "off" and self.pii_detector != "patterns":
            raise _KeyError("pii_detector", "only applies when pii is mask")
        # One user's worst case (two LLM calls, each retried once by the SDK) must fit the condenser.
        if condensation_budget_s(self.llm_timeout_s) > CONDENSER_TIMEOUT_S:
            ceiling = max_llm_timeout_s()
            raise _KeyError(
                "llm_timeout_s",
                f"must be at most {ceiling:g}: {LLM_TIMEOUTS_PER_CONDENSATION} LLM timeouts must fit in the "
                f"condenser timeout ({CONDENSER_TIMEOUT_S} s)",
            )
        # A message may wait in the queue and then the DLQ (to be redriven) this long: keep its payload.
        if self.raw_retention_days < QUEUE_RETENTION_DAYS + DLQ_RETENTION_DAYS:
            raise _KeyError(
                "raw_retention_days",
                f"must be at least {QUEUE_RETENTION_DAYS + DLQ_RETENTION_DAYS} (queue plus DLQ retention)",
            )
        return self

    def _check_stack_size(self) -> None:
        tenants, webhooks = len(self.budgeted_tenants), len(self.webhooks)
        needed = tenants * RESOURCES_PER_BUDGETED_TENANT + webhooks * RESOURCES_PER_WEBHOOK
        if needed > TENANT_AND_WEBHOOK_RESOURCES:
            raise _KeyError(
                ("tenant_token_budgets", "webhooks"),
                f"{tenants} tenants named and {webhooks} webhooks need {needed} resources: at most "
                f"{TENANT_AND_WEBHOOK_RESOURCES} fit (each budgeted tenant costs {RESOURCES_PER_BUDGETED_TENANT} "
                f"resources, each webhook {RESOURCES_PER_WEBHOOK}, the rest of the stack up to "
                f"{STACK_OTHER_RESOURCES}, {SPARE_RESOURCES} are kept spare, and a CloudFormation stack holds "
                f'at most {STACK_MAX_RESOURCES}); name fewer tenants (give the others "{ANY_TENANT}") or list '
                "fewer webhooks",
            )

    def _check_embeddings(self) -> None:
        provider = self.resolved_embedding_provider
        if self.embedding_model is not None and provider not in ("openai", "bedrock"):
            raise _KeyError("embedding_model", "only applies when embedding_provider is openai or bedrock")
        if provider == "bedrock" and self.embedding_dimensions not in TITAN_V2_DIMENSIONS:
            sizes = ", ".join(map(str, TITAN_V2_DIMENSIONS))
            raise _KeyError(
                "embedding_dimensions",
                f"must be one of {sizes} with embedding_provider bedrock (Titan Text Embeddings V2)",
            )
        if provider == "offline" and self.embedding_dimensions not in OFFLINE_EMBEDDING_DIMENSIONS:
            sizes = ", ".join(map(str, OFFLINE_EMBEDDING_DIMENSIONS))
            raise _KeyError(
                "embedding_dimensions",
                f"must be one of {sizes} with embedding_provider offline (its model's sizes)",
            )

    @property
    def resolved_embedding_provider(self) -> EmbeddingProviderName:
        """The configured embedding provider, or the one that follows the LLM's."""
        return self.embedding_provider or self.llm_provider

    @property
    def resolved_embedding_model(self) -> str:
        """The configured embedding model, or the provider's default ("" for none, which has none)."""
        return self.embedding_model or default_embedding_model(self.resolved_embedding_provider) or ""

    @property
    def uses_openai(self) -> bool:
        """Whether the LLM or the embeddings call an OpenAI-compatible endpoint (and need its key)."""
        return "openai" in (self.llm_provider, self.resolved_embedding_provider)

    @property
    def resolved_llm_model(self) -> str:
        """The configured model, or the provider's default ("" for offline, which has none)."""
        return self.llm_model or default_model(self.llm_provider) or ""

    @property
    def resolved_llm_secret_name(self) -> str | None:
        """The OpenAI API key's secret (LLM and embeddings share it); None when neither uses openai."""
        if not self.uses_openai:
            return None
        return self.llm_secret_name or f"hippocampus/{self.stage}/llm-api-key"

    @property
    def tenant_daily_tokens(self) -> str | None:
        """The budgets as MEMORY_TENANT_DAILY_TOKENS reads them (compact JSON, keys sorted); None: no budget."""
        return _compact_json(self.tenant_token_budgets) if self.tenant_token_budgets else None

    @property
    def budgeted_tenants(self) -> dict[str, int]:
        """The tenants named with a budget (not "*", which stands for tenants that cannot be listed)."""
        return {t: tokens for t, tokens in sorted(self.tenant_token_budgets.items()) if t != ANY_TENANT}

    @property
    def name_prefix(self) -> str:
        return f"{SERVICE_NAME}-{self.stage}"


def _compact_json(value: Mapping[str, int]) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


class _KeyError(ValueError):
    """Raised inside validators to name the offending key, or the keys of a rule across keys."""

    def __init__(self, key: str | tuple[str, ...], message: str) -> None:
        self.keys = (key,) if isinstance(key, str) else key
        self.message = message
        # Validated directly (not through load_config), the model's error names the keys of a rule
        # across keys in its message: its location is the whole object.
        super().__init__(message if isinstance(key, str) else f"{' and '.join(self.keys)}: {message}")


def _parse_override(value: Any) -> Any:
    """`-c hippocampus.max_words=80` arrives as the string "80"; `null`, numbers and booleans are JSON."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if not isinstance(parsed, (dict, list)) else value
    return value


def load_config(context: Mapping[str, Any] | None) -> DeploymentConfig:
    """Build the config from a CDK context mapping (`hippocampus` object plus `hippocampus.<key>` overrides).

    Raises ConfigError naming every bad key.
    """
    context = context or {}
    raw = context.get(CONTEXT_KEY) or {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f'cdk.json context "{CONTEXT_KEY}" must be an object, got {type(raw).__name__}')
    values = dict(raw)
    prefix = CONTEXT_KEY + "."
    for key, value in context.items():
        if key.startswith(prefix):
            values[key[len(prefix) :]] = _parse_override(value)
    try:
        return DeploymentConfig.model_validate(values)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            cause = (error.get("ctx") or {}).get("error")
            if isinstance(cause, _KeyError):
                keys = " and ".join(prefix + key for key in cause.keys)
                problems.append(f"{keys}: {cause.message}")
                continue
            key = ".".join(str(part) for part in error["loc"]) or "(object)"
            message = error["msg"].removeprefix("Value error, ")
            problems.append(f"{prefix}{key}: {message}")
        raise ConfigError("invalid deployment configuration: " + "; ".join(problems)) from exc


def read_cdk_json_context(path: Path = DEFAULT_CDK_JSON) -> dict[str, Any]:
    """The `context` object of cdk.json (feature flags and the `hippocampus` object)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    context = document.get("context", {})
    if not isinstance(context, dict):
        raise ConfigError(f"{path}: 'context' must be an object")
    return context


def config_from_cdk_json(path: Path = DEFAULT_CDK_JSON) -> DeploymentConfig:
    """The deployment config as cdk.json declares it (what the local stack uses for its defaults)."""
    return load_config(read_cdk_json_context(path))
