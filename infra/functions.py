"""Functions: one factory (`ServiceFunction`) for every Lambda function, the layers, and their triggers.

What each role may do is in `infra.grants`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from hippocampus.contracts import names as schema
from infra import grants
from infra.bundling import LambdaAssets
from infra.config import DeploymentConfig
from infra.events import ChangeEvents
from infra.nag import acknowledge
from infra.queueing import Queueing
from infra.schedule import schedule_dead_letter_pass
from infra.specs import FUNCTION_SPECS, FunctionName, FunctionSpec, ResourceNames, function_environments
from infra.storage import Storage, removal_policy

RUNTIME: Final = lambda_.Runtime.PYTHON_3_13
HANDLER: Final = "handler.lambda_handler"

# The events function's stream (docs/architecture.md "Events"): its batch size, retries and filter are
# contracts/names.py's, which the local stack plays too; a stream keeps a record 24 hours.
EVENTS_BATCH_SIZE: Final = schema.EVENTS_BATCH_SIZE
EVENTS_RETRY_ATTEMPTS: Final = schema.EVENTS_RETRY_ATTEMPTS
EVENTS_MAX_RECORD_AGE: Final = cdk.Duration.hours(24)
EVENT_SORT_KEYS: Final = schema.EVENT_SORT_KEYS
EVENT_SORT_KEY_PREFIXES: Final = schema.EVENT_SORT_KEY_PREFIXES

# The functions a user waits on at a cold start, which `snapstart` starts from a snapshot
# (docs/configuration.md); their handlers prime what the snapshot holds (functions/*/handler.py).
SNAPSTART_FUNCTIONS: Final[frozenset[FunctionName]] = frozenset({"get_memory", "recall"})
LIVE_ALIAS: Final = "live"

_RETENTION: Final = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
    1096: logs.RetentionDays.THREE_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    2192: logs.RetentionDays.SIX_YEARS,
    2557: logs.RetentionDays.SEVEN_YEARS,
    2922: logs.RetentionDays.EIGHT_YEARS,
    3288: logs.RetentionDays.NINE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}

_APP_LOG_LEVEL: Final = {
    "DEBUG": lambda_.ApplicationLogLevel.DEBUG,
    "INFO": lambda_.ApplicationLogLevel.INFO,
    "WARNING": lambda_.ApplicationLogLevel.WARN,
    "ERROR": lambda_.ApplicationLogLevel.ERROR,
}


def retention(days: int) -> logs.RetentionDays:
    return _RETENTION[days]


def architecture(config: DeploymentConfig) -> lambda_.Architecture:
    return lambda_.Architecture.ARM_64 if config.architecture == "arm64" else lambda_.Architecture.X86_64


class ServiceFunction(Construct):
    """The one way a function is built: its own role and log group, arm64/python3.13, traced, JSON logs."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        spec: FunctionSpec,
        config: DeploymentConfig,
        code: lambda_.Code,
        layers: Sequence[lambda_.ILayerVersion],
        environment: Mapping[str, str],
    ) -> None:
        super().__init__(scope, construct_id)
        function_name = f"{config.name_prefix}-{spec.name.replace('_', '-')}"
        self.log_group = logs.LogGroup(
            self,
            "LogGroup",
            retention=retention(config.log_retention_days),
            removal_policy=removal_policy(config),
        )
        # No managed policy (AWSLambdaBasicExecutionRole would allow every log group): this role
        # writes to its own log group only; infra.grants adds what the function touches.
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Execution role of {function_name} (least privilege, one per function)",
        )
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            function_name=function_name,
            description=spec.description,
            runtime=RUNTIME,
            architecture=architecture(config),
            handler=HANDLER,
            code=code,
            layers=list(layers),
            memory_size=spec.memory_mb,
            timeout=cdk.Duration.seconds(spec.timeout_s),
            tracing=lambda_.Tracing.ACTIVE if config.tracing else lambda_.Tracing.DISABLED,
            role=self.role,
            log_group=self.log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=_APP_LOG_LEVEL[config.log_level],
            system_log_level_v2=lambda_.SystemLogLevel.INFO,
            environment=dict(environment),
            **_snapstart_options(config, spec.name),
        )
        self.alias = self._live_alias(config, spec.name)
        acknowledge(
            self.function,
            "AwsSolutions-L1",
            "python3.13 on purpose: the layers ship .pyc compiled by the runtime's own Python version "
            "(no Docker), and the build environment compiles with python3.13; moving to a newer runtime "
            "means rebuilding with that interpreter (tools/assets.py PYTHON_VERSION).",
        )
        if config.tracing:
            acknowledge(
                self.role,
                "AwsSolutions-IAM5[Resource::*]",
                "Lambda active tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, "
                "which support no resource-level permissions (Resource '*' is the only valid value).",
            )

    @property
    def entry_point(self) -> lambda_.IFunction:
        """What the API and direct invokers call: the `live` alias under SnapStart, else the function."""
        return self.alias or self.function

    def _live_alias(self, config: DeploymentConfig, name: FunctionName) -> lambda_.Alias | None:
        # SnapStart applies to published versions only ($LATEST always initializes): each deployment
        # publishes one (current_version) and moves the alias to it.
        if not snapstart_applies(config, name):
            return None
        return lambda_.Alias(self, "LiveAlias", alias_name=LIVE_ALIAS, version=self.function.current_version)


def snapstart_applies(config: DeploymentConfig, name: FunctionName) -> bool:
    return config.snapstart and name in SNAPSTART_FUNCTIONS


def _snapstart_options(config: DeploymentConfig, name: FunctionName) -> dict[str, Any]:
    if not snapstart_applies(config, name):
        return {}
    return {
        "snap_start": lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS,
        # A replaced version is deleted: every version kept would keep its snapshot's cache billed.
        "current_version_options": lambda_.VersionOptions(removal_policy=cdk.RemovalPolicy.DESTROY),
    }


def entry_point(function: lambda_.IFunction) -> lambda_.IFunction:
    """The alias to call for one of the `Functions` (the function itself without SnapStart)."""
    owner = function.node.scope
    return owner.entry_point if isinstance(owner, ServiceFunction) else function


class Functions(Construct):
    """The five functions, their layers, their environment, their triggers and their least-privilege grants."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        assets: LambdaAssets,
        storage: Storage,
        queueing: Queueing,
        change_events: ChangeEvents,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        # The layers some function of this deployment carries (none is deployed unused).
        used = {name for spec in FUNCTION_SPECS for name in spec.layers_for(config)}
        self.layers: dict[str, lambda_.LayerVersion] = {
            name: lambda_.LayerVersion(
                self,
                "".join(part.capitalize() for part in name.split("-")) + "Layer",
                layer_version_name=f"{config.name_prefix}-{name}",
                description=f"Hippocampus {name} layer (python3.13, {config.architecture}, .pyc unchecked-hash)",
                code=assets.layer_code(name),
                compatible_runtimes=[RUNTIME],
                compatible_architectures=[architecture(config)],
            )
            for name in assets.layers
            if name in used
        }

        environments = function_environments(
            config,
            ResourceNames(
                table=storage.table.table_name,
                bucket=storage.bucket.bucket_name,
                queue_url=queueing.queue.queue_url,
                dlq_url=queueing.dlq.queue_url,
                event_bus=change_events.bus.event_bus_name,
            ),
        )
        self.by_name: dict[FunctionName, ServiceFunction] = {}
        for spec in FUNCTION_SPECS:
            self.by_name[spec.name] = ServiceFunction(
                self,
                "".join(part.capitalize() for part in spec.name.split("_")),
                spec=spec,
                config=config,
                code=assets.function_code(spec.name),
                layers=[self.layers[name] for name in spec.layers_for(config)],
                environment=environments[spec.name],
            )

        # openai only (LLM or embeddings): the API key's secret, by name; bedrock needs IAM alone.
        self.llm_secret: secretsmanager.ISecret | None = None
        if config.resolved_llm_secret_name:
            self.llm_secret = secretsmanager.Secret.from_secret_name_v2(
                self, "LlmApiKeySecret", config.resolved_llm_secret_name
            )
        grants.grant_get_memory(self.by_name["get_memory"].role, storage)
        grants.grant_ingest(self.by_name["ingest"].role, storage, queueing)
        grants.grant_recall(self.by_name["recall"].role, storage)
        grants.grant_embeddings(self.by_name["recall"].role, config, self.llm_secret)
        self._condenser_triggers(queueing)
        condenser_role = self.by_name["condenser"].role
        grants.grant_condenser_storage(condenser_role, storage)
        grants.grant_condenser_redrive(condenser_role, queueing)
        grants.grant_condenser_models(condenser_role, config, self.llm_secret)
        for spec in FUNCTION_SPECS:
            if spec.masks:
                self._pii_detection(self.by_name[spec.name])
        self._events_trigger(storage, change_events)

    @property
    def get_memory(self) -> lambda_.Function:
        return self.by_name["get_memory"].function

    @property
    def ingest(self) -> lambda_.Function:
        return self.by_name["ingest"].function

    @property
    def condenser(self) -> lambda_.Function:
        return self.by_name["condenser"].function

    @property
    def recall(self) -> lambda_.Function:
        return self.by_name["recall"].function

    @property
    def events(self) -> lambda_.Function:
        return self.by_name["events"].function

    def _pii_detection(self, service_function: ServiceFunction) -> None:
        """The PII detector's access (comprehend only), in place before the function is."""
        policy = grants.grant_pii_detection(service_function, service_function.role, self._config)
        if policy is not None:
            service_function.function.node.add_dependency(policy)

    def _condenser_triggers(self, queueing: Queueing) -> None:
        """The ingest queue (whose event source mapping grants the consume actions on it only) and the
        scheduled pass over the DLQ."""
        service_function = self.by_name["condenser"]
        service_function.function.add_event_source(
            event_sources.SqsEventSource(
                queueing.queue,
                batch_size=schema.CONDENSER_BATCH_SIZE,
                report_batch_item_failures=True,
                max_concurrency=self._config.condenser_max_concurrency,
            )
        )
        schedule_dead_letter_pass(self, service_function.function, service_function.role, queueing.dlq)

    def _events_trigger(self, storage: Storage, change_events: ChangeEvents) -> None:
        """The table's change stream, filtered to the items that can be events, and the bus. The role reads
        the stream and puts events on the bus, nothing else (no table, bucket or queue but the DLQ the
        mapping sends failed batches to, which SqsDlq grants SendMessage on)."""
        service_function = self.by_name["events"]
        role = service_function.role
        stream_list = grants.grant_stream_read(service_function, role, storage.table)
        grants.grant_put_events(role, change_events.bus)
        # The mapping is created with the function, which waits for the role's policies: Lambda checks
        # that the role may read the stream when the mapping is created.
        service_function.function.node.add_dependency(stream_list)
        sort_key = {"dynamodb": {"Keys": {schema.TABLE_SORT_KEY: {"S": list(EVENT_SORT_KEYS)}}}}
        prefixes = [{"prefix": prefix} for prefix in EVENT_SORT_KEY_PREFIXES]
        by_prefix = {"dynamodb": {"Keys": {schema.TABLE_SORT_KEY: {"S": prefixes}}}}
        lambda_.EventSourceMapping(
            service_function,
            "TableStream",
            target=service_function.function,
            event_source_arn=storage.table.table_stream_arn,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=EVENTS_BATCH_SIZE,
            report_batch_item_failures=True,
            bisect_batch_on_error=True,
            retry_attempts=EVENTS_RETRY_ATTEMPTS,
            max_record_age=EVENTS_MAX_RECORD_AGE,
            on_failure=event_sources.SqsDlq(change_events.dlq),
            # Two filters, either matches: the exact sort keys, or a record's prefix.
            filters=[lambda_.FilterCriteria.filter(sort_key), lambda_.FilterCriteria.filter(by_prefix)],
        )
