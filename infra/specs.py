"""What each function is: memory, timeout, layers and environment.

No aws_cdk import: the local stack and the benchmark read it too. The environment takes the
resource names as plain strings (CloudFormation tokens at synth time, real names elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from hippocampus.contracts import names as schema
from infra.config import DeploymentConfig

FunctionName = Literal["get_memory", "ingest", "condenser", "recall", "events"]


# Lambda attaches at most five layers to a function. The condenser carries four (deps, xray, llm,
# core); with the offline model and the pattern detector it would need six, so a function that needs
# both gets them as one layer, built from the two (tools/assets.py MERGED_LAYERS).
MAX_LAYERS: Final = 5
MERGED_LAYERS: Final[dict[str, tuple[str, ...]]] = {"embeddings-pii": ("embeddings", "pii")}


@dataclass(frozen=True)
class FunctionSpec:
    name: FunctionName
    description: str
    memory_mb: int
    timeout_s: int
    layers: tuple[str, ...]
    # The function embeds texts, so it gets the layer its deployment's embedding provider needs:
    # the openai SDK's ("llm") for `openai`, the offline model's ("embeddings") for `offline`. Only
    # then: every layer adds to the cold start.
    embeds: bool = False
    # The function masks personal data (`pii: mask`), so it is told the PII settings and, with the
    # `patterns` detector, gets its libraries ("pii"); `comprehend` is called through boto3 and needs
    # none (its role may call DetectPiiEntities instead, infra.grants).
    masks: bool = False

    def layers_for(self, config: DeploymentConfig) -> tuple[str, ...]:
        """The layers this function gets in this deployment."""
        layers = list(self.layers)
        needed = {"openai": "llm", "offline": "embeddings"}.get(config.resolved_embedding_provider)
        if self.embeds and needed and needed not in layers:
            layers.append(needed)
        if self.masks and config.pii == "mask" and config.pii_detector == "patterns":
            layers.append("pii")
        for merged, parts in MERGED_LAYERS.items():
            if set(parts) <= set(layers):
                layers = [name for name in layers if name not in parts] + [merged]
        return tuple(layers)


# The read path gets more memory (hence CPU) for its cold start; the condenser mostly waits on the LLM.
# The X-Ray SDK (layer "xray") only goes where `make_tracing` may load it: get_memory never does
# (hippocampus.wiring.read_service uses allow_xray_sdk=False).
FUNCTION_SPECS: Final = (
    FunctionSpec(
        "get_memory",
        "Hippocampus read path: memory, history, jobs, health, OpenAPI (405 for other methods).",
        memory_mb=1024,
        timeout_s=10,
        layers=("deps", "core"),
    ),
    FunctionSpec(
        "ingest",
        "Hippocampus write path: ingest items, replace or delete a memory, delete a fact.",
        memory_mb=1024,
        timeout_s=schema.INGEST_TIMEOUT_S,
        layers=("deps", "xray", "core"),
        masks=True,
    ),
    FunctionSpec(
        "condenser",
        "Hippocampus condenser: merges queued items into each user's memory with the LLM.",
        memory_mb=512,
        timeout_s=schema.CONDENSER_TIMEOUT_S,
        layers=("deps", "xray", "llm", "core"),
        embeds=True,
        masks=True,
    ),
    # The query and context routes: one embedding of the query and one Query of a partition, so
    # the read path's size and timeout. Like get_memory it never loads the X-Ray SDK.
    FunctionSpec(
        "recall",
        "Hippocampus recall: query a user's memory and build a context block (embeds the query).",
        memory_mb=1024,
        timeout_s=schema.RECALL_TIMEOUT_S,
        layers=("deps", "core"),
        embeds=True,
        masks=True,
    ),
    # The table's change stream to EventBridge (docs/architecture.md "Events"): no table, bucket or
    # model of its own, only the stream's records and the bus.
    FunctionSpec(
        "events",
        "Hippocampus events: the memory table's change stream published on EventBridge.",
        memory_mb=256,
        timeout_s=schema.EVENTS_TIMEOUT_S,
        layers=("deps", "core"),
    ),
)
FUNCTION_NAMES: Final = tuple(spec.name for spec in FUNCTION_SPECS)


@dataclass(frozen=True)
class ResourceNames:
    """The resources the functions are told about (names, or tokens that resolve to them)."""

    table: str
    bucket: str
    queue_url: str
    dlq_url: str
    event_bus: str = ""  # the bus the events function publishes to


def function_environments(
    config: DeploymentConfig, resources: ResourceNames
) -> dict[FunctionName, dict[str, str]]:
    """Each function's environment variables, exactly as the CDK app deploys them."""
    common = {
        "MEMORY_TABLE_NAME": resources.table,
        "MEMORY_BUCKET_NAME": resources.bucket,
        **_shared(config),
    }
    ingest = {**common, "MEMORY_QUEUE_URL": resources.queue_url}
    condenser = {
        **common,
        **_llm(config),
        **_embeddings(config),
        "MEMORY_MAX_EPISODES": str(config.max_episodes),
        "MEMORY_MAX_RECORDS": str(config.max_records),
        "MEMORY_DLQ_URL": resources.dlq_url,
        "MEMORY_QUEUE_URL": resources.queue_url,  # the redrive sends dead letters back there
    }
    # Recall reads one partition of the table and the stored copy of its episodes (recall/), which
    # it checks against the condenser's cap.
    recall = {
        **common,
        **_embeddings(config),
        "MEMORY_MAX_EPISODES": str(config.max_episodes),
    }
    environments: dict[FunctionName, dict[str, str]] = {
        "get_memory": common | _budgets(config),  # the usage route answers the tenant's budget
        "ingest": ingest,
        "condenser": condenser | _budgets(config),  # the gate before each LLM call, and the release
        "recall": recall,
        "events": {
            **_shared(config),
            "MEMORY_EVENT_BUS_NAME": resources.event_bus,
            "MEMORY_EVENTS_INCLUDE_CONTENT": "true" if config.events_include_content else "false",
        },
    }
    for spec in FUNCTION_SPECS:
        if spec.masks:  # told how to mask (nothing while pii is off); get_memory never masks
            environments[spec.name] = environments[spec.name] | _pii(config)
    return environments


def _shared(config: DeploymentConfig) -> dict[str, str]:
    """What every function is told: budget, retention, tracing and logging."""
    shared = {
        "MEMORY_MAX_WORDS": str(config.max_words),
        "MEMORY_TRACING": "xray" if config.tracing else "off",
        "MEMORY_LOG_CONTENT": "false",
        "MEMORY_JOB_RETENTION_DAYS": str(config.raw_retention_days),
        "POWERTOOLS_SERVICE_NAME": schema.SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": schema.METRICS_NAMESPACE,
        "POWERTOOLS_LOG_LEVEL": config.log_level,
        # pydantic looks for plugins at its first model, reading every installed distribution's
        # metadata; the functions use none, and the cold start is shorter without the look.
        "PYDANTIC_DISABLE_PLUGINS": "__all__",
    }
    if config.memory_ttl_days is not None:
        shared["MEMORY_TTL_DAYS"] = str(config.memory_ttl_days)
    return shared


def _pii(config: DeploymentConfig) -> dict[str, str]:
    """The masking settings of the functions that mask (`FunctionSpec.masks`); none while pii is off,
    which is also the functions' own default."""
    if config.pii == "off":
        return {}
    return {"MEMORY_PII": config.pii, "MEMORY_PII_DETECTOR": config.pii_detector}


def _budgets(config: DeploymentConfig) -> dict[str, str]:
    """The tenants' token budgets (`tenant_token_budgets`), for the functions that read them; none
    without a budget, which is also the functions' own default."""
    budgets = config.tenant_daily_tokens
    return {"MEMORY_TENANT_DAILY_TOKENS": budgets} if budgets else {}


def _llm(config: DeploymentConfig) -> dict[str, str]:
    """The condenser's LLM, and the OpenAI endpoint and key when anything of it calls OpenAI."""
    llm = {
        "MEMORY_LLM_PROVIDER": config.llm_provider,
        "MEMORY_LLM_TIMEOUT_S": f"{config.llm_timeout_s:g}",
    }
    if config.resolved_llm_model:
        llm["MEMORY_LLM_MODEL"] = config.resolved_llm_model
    return llm | _openai(config)


def _embeddings(config: DeploymentConfig) -> dict[str, str]:
    """The embedding settings, the same for the condenser (documents) and recall (queries)."""
    provider = config.resolved_embedding_provider
    embeddings = {
        "MEMORY_EMBEDDING_PROVIDER": provider,
        "MEMORY_EMBEDDING_DIMENSIONS": str(config.embedding_dimensions),
    }
    if config.resolved_embedding_model:
        embeddings["MEMORY_EMBEDDING_MODEL"] = config.resolved_embedding_model
    return embeddings | (_openai(config) if provider == "openai" else {})


def _openai(config: DeploymentConfig) -> dict[str, str]:
    """The OpenAI-compatible endpoint and the key's secret, which the LLM and the embeddings share."""
    openai: dict[str, str] = {}
    if config.llm_base_url:
        openai["OPENAI_BASE_URL"] = config.llm_base_url
    secret_name = config.resolved_llm_secret_name
    if secret_name:
        # The secret's name, never its value: the function reads it on its first call (cached 5 min).
        openai["MEMORY_LLM_API_KEY_SECRET"] = secret_name
    return openai
