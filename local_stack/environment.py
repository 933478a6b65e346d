"""The environment the local functions run with: what Lambda and the CDK app would give them.

Every configuration variable (docs/configuration.md) the user sets passes through unchanged.
The stack adds the resource names, points boto3 at moto and fills in the deployment defaults
that the CDK app would set (from `infra.config`), unless the user set them.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from local_stack.aws import DUMMY_ACCESS_KEY_ID, DUMMY_SECRET_ACCESS_KEY, Resources
from local_stack.paths import DEFAULT_REGION

# boto3's per-service endpoint variables, for every service the functions reach on moto.
MOTO_SERVICES = ("DYNAMODB", "DYNAMODB_STREAMS", "S3", "SQS", "SECRETS_MANAGER", "EVENTBRIDGE")
# Credentials and profiles that must not leak into requests to moto (a session token of real
# credentials, a profile that sets another endpoint or region).
CREDENTIAL_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)


@dataclass(frozen=True)
class RuntimeEnvironment:
    """Variables to set and to remove in the process that runs the functions."""

    set: dict[str, str]
    unset: tuple[str, ...]


def reaches_aws(user_env: Mapping[str, str]) -> bool:
    """Whether a model is AWS's own: the LLM or the embeddings Bedrock's, or the PII detector Amazon
    Comprehend. moto plays neither (its Comprehend answers a canned entity list), so the real one
    is reached, with the user's credentials."""
    variables = ("MEMORY_LLM_PROVIDER", "MEMORY_EMBEDDING_PROVIDER")
    bedrock = any(user_env.get(name, "").strip().lower() == "bedrock" for name in variables)
    return bedrock or user_env.get("MEMORY_PII_DETECTOR", "").strip().lower() == "comprehend"


def aws_region(user_env: Mapping[str, str]) -> str:
    """us-east-1 locally; with Bedrock or Comprehend, the user's region (reached for real)."""
    if reaches_aws(user_env):
        return user_env.get("AWS_REGION") or user_env.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
    return DEFAULT_REGION


def runtime_environment(
    user_env: Mapping[str, str],
    resources: Resources,
    aws_endpoint: str,
    defaults: Mapping[str, str],
) -> RuntimeEnvironment:
    """What the functions see: the user's variables, the resources, moto, and deployment defaults."""
    values: dict[str, str] = {}
    unset: list[str] = []
    for name, value in defaults.items():
        if not user_env.get(name):
            values[name] = value

    values.update(
        {
            # What Lambda sets.
            "AWS_REGION": resources.region,
            "AWS_DEFAULT_REGION": resources.region,
            # What the CDK app sets: the resources of this stack.
            "MEMORY_TABLE_NAME": resources.table_name,
            "MEMORY_BUCKET_NAME": resources.bucket_name,
            "MEMORY_QUEUE_URL": resources.queue_url,
            "MEMORY_DLQ_URL": resources.dlq_url,
            "MEMORY_EVENT_BUS_NAME": resources.event_bus_name,
            # No instance metadata service on a workstation: do not wait for one.
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )
    for service in MOTO_SERVICES:
        values[f"AWS_ENDPOINT_URL_{service}"] = aws_endpoint
    if reaches_aws(user_env):
        # Bedrock or Comprehend is reached for real, with the user's own credentials and region;
        # only the services above go to moto.
        unset.append("AWS_ENDPOINT_URL")
    else:
        values["AWS_ENDPOINT_URL"] = aws_endpoint
        unset.extend(name for name in CREDENTIAL_VARIABLES if name in user_env)
        values["AWS_ACCESS_KEY_ID"] = DUMMY_ACCESS_KEY_ID
        values["AWS_SECRET_ACCESS_KEY"] = DUMMY_SECRET_ACCESS_KEY
    # Local output stays readable: no EMF metric blobs unless asked for.
    if "POWERTOOLS_METRICS_DISABLED" not in user_env:
        values["POWERTOOLS_METRICS_DISABLED"] = "true"
    return RuntimeEnvironment(set=values, unset=tuple(name for name in unset if name not in values))
