"""Deployment settings, read from the CDK app's own configuration (`infra.config`, cdk.json).

The local stack provisions what a deployment with the project's cdk.json would have, and
gives the functions the variables the CDK app would give them, so it reads those settings
from the one place that defines them instead of repeating them.
"""

from dataclasses import dataclass

from hippocampus import schema
from infra.config import DeploymentConfig, config_from_cdk_json
from local_stack.aws import Retention

# Lambda's defaults where the CDK app does not say otherwise (only the context's deadline uses them).
API_FUNCTION_TIMEOUT_S = 29  # API Gateway's integration timeout caps the API functions
DEFAULT_MEMORY_MB = 512


@dataclass(frozen=True)
class FunctionDefaults:
    timeout_s: int
    memory_mb: int


@dataclass(frozen=True)
class Deployment:
    config: DeploymentConfig
    retention: Retention
    functions: dict[str, FunctionDefaults]
    # Variables the CDK app sets on the functions (locally, the user's own values win).
    function_environment: dict[str, str]


def load() -> Deployment:
    """The deployment as cdk.json declares it."""
    config = config_from_cdk_json()
    environment = {
        "MEMORY_MAX_WORDS": str(config.max_words),
        "MEMORY_LLM_TIMEOUT_S": f"{config.llm_timeout_s:g}",
        # raw/ retention is also the job retention (see DeploymentConfig.raw_retention_days).
        "MEMORY_JOB_RETENTION_DAYS": str(config.raw_retention_days),
        "POWERTOOLS_LOG_LEVEL": config.log_level,
    }
    if config.memory_ttl_days is not None:
        environment["MEMORY_TTL_DAYS"] = str(config.memory_ttl_days)
    if config.llm_model is not None:
        environment["MEMORY_LLM_MODEL"] = config.llm_model
    api = FunctionDefaults(timeout_s=API_FUNCTION_TIMEOUT_S, memory_mb=DEFAULT_MEMORY_MB)
    return Deployment(
        config=config,
        retention=Retention(raw_days=config.raw_retention_days, history_days=config.history_retention_days),
        functions={
            "get_memory": api,
            "ingest": api,
            "condenser": FunctionDefaults(timeout_s=schema.CONDENSER_TIMEOUT_S, memory_mb=DEFAULT_MEMORY_MB),
        },
        function_environment=environment,
    )
