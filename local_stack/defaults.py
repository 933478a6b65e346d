"""Deployment settings, read from the CDK app's own configuration (`infra.config`, cdk.json).

The local stack provisions what a deployment with the project's cdk.json would have, and
gives the functions the variables the CDK app would give them, so it reads those settings
from the one place that defines them instead of repeating them.
"""

from dataclasses import dataclass

from infra.config import DeploymentConfig, config_from_cdk_json
from infra.specs import FUNCTION_SPECS, ResourceNames, function_environments


@dataclass(frozen=True)
class FunctionDefaults:
    timeout_s: int
    memory_mb: int


@dataclass(frozen=True)
class Deployment:
    config: DeploymentConfig
    functions: dict[str, FunctionDefaults]
    # Variables the CDK app sets on the functions (locally, the user's own values win).
    function_environment: dict[str, str]


# Left to the developer's environment locally (offline LLM and embeddings unless OPENAI_API_KEY is
# set, no X-Ray, no secret) or set by the stack itself once it has provisioned the resources. The
# embedding model goes with its provider: cdk.json's would not fit the provider chosen locally.
NOT_FROM_THE_DEPLOYMENT = frozenset(
    {
        "MEMORY_TRACING",
        "MEMORY_LLM_PROVIDER",
        "MEMORY_EMBEDDING_PROVIDER",
        "MEMORY_EMBEDDING_MODEL",
        "MEMORY_LLM_API_KEY_SECRET",
        "OPENAI_BASE_URL",
        "MEMORY_LOG_CONTENT",
        "MEMORY_TABLE_NAME",
        "MEMORY_BUCKET_NAME",
        "MEMORY_QUEUE_URL",
        "MEMORY_DLQ_URL",
        "MEMORY_EVENT_BUS_NAME",
    }
)


def load() -> Deployment:
    """The deployment as cdk.json declares it."""
    config = config_from_cdk_json()
    deployed = function_environments(config, ResourceNames(table="", bucket="", queue_url="", dlq_url=""))
    environment = {
        name: value
        for variables in deployed.values()
        for name, value in variables.items()
        if name not in NOT_FROM_THE_DEPLOYMENT
    }
    return Deployment(
        config=config,
        functions={spec.name: FunctionDefaults(spec.timeout_s, spec.memory_mb) for spec in FUNCTION_SPECS},
        function_environment=environment,
    )
