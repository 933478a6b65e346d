"""Deployment settings, read from the CDK app's own configuration (`infra.config`, cdk.json).

The local stack provisions what a deployment with the project's cdk.json would have, and
gives the functions the variables the CDK app would give them, so it reads those settings
from the one place that defines them instead of repeating them.
"""

from dataclasses import dataclass

from hippocampus import schema
from infra.config import DeploymentConfig, config_from_cdk_json
from infra.specs import FUNCTION_SPECS
from local_stack.aws import Retention


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
        "POWERTOOLS_SERVICE_NAME": schema.SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": schema.METRICS_NAMESPACE,
    }
    if config.memory_ttl_days is not None:
        environment["MEMORY_TTL_DAYS"] = str(config.memory_ttl_days)
    if config.llm_model is not None:
        environment["MEMORY_LLM_MODEL"] = config.llm_model
    return Deployment(
        config=config,
        retention=Retention(raw_days=config.raw_retention_days, history_days=config.history_retention_days),
        functions={spec.name: FunctionDefaults(spec.timeout_s, spec.memory_mb) for spec in FUNCTION_SPECS},
        function_environment=environment,
    )
