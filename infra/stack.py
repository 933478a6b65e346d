"""The Hippocampus stack: storage, queueing, change events, functions, API and monitoring, plus the fixed
outputs.

The layers and the functions' code are CDK assets built by local bundling (`infra.bundling`), for the
configured architecture unless other `assets` are handed in.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.api import Api
from infra.bundling import LambdaAssets
from infra.config import DeploymentConfig
from infra.events import ChangeEvents
from infra.functions import Functions, entry_point
from infra.monitoring import Monitoring
from infra.queueing import Queueing
from infra.storage import Storage


class HippocampusStack(cdk.Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        assets: LambdaAssets | None = None,
        **kwargs: Any,
    ) -> None:
        if assets is None:
            assets = LambdaAssets(config.architecture)
        if assets.architecture != config.architecture:
            raise ValueError(
                f"the assets are built for {assets.architecture}, the stack is {config.architecture}"
            )
        super().__init__(
            scope,
            construct_id,
            description=f"Hippocampus on AWS ({config.stage}): persistent per-user memory for LLM applications",
            **kwargs,
        )
        self.config = config

        self.storage = Storage(self, "Storage", config=config)
        self.queueing = Queueing(self, "Queueing", config=config)
        self.change_events = ChangeEvents(self, "Events", config=config)
        self.functions = Functions(
            self,
            "Functions",
            config=config,
            assets=assets,
            storage=self.storage,
            queueing=self.queueing,
            change_events=self.change_events,
        )
        self.api = Api(
            self,
            "Api",
            config=config,
            functions={
                "get_memory": self.functions.get_memory,
                "ingest": self.functions.ingest,
                "recall": self.functions.recall,
            },
        )
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            config=config,
            stage=self.api.rest_api.deployment_stage,
            get_memory=self.functions.get_memory,
            ingest=self.functions.ingest,
            condenser=self.functions.condenser,
            recall=self.functions.recall,
            queue=self.queueing.queue,
            dlq=self.queueing.dlq,
            events=self.functions.events,
            events_dlq=self.change_events.dlq,
            webhooks_dlq=self.change_events.webhooks_dlq,
        )
        cdk.Tags.of(self).add("project", "hippocampus")
        cdk.Tags.of(self).add("stage", config.stage)
        self._outputs()

    def grant_tenant_access(self, principal: iam.IGrantable, tenant_id: str) -> iam.Grant:
        """Let `principal` call every route under `/v1/tenants/<tenant_id>/` of this stage, nothing else."""
        return self.api.grant_tenant_access(principal, tenant_id)

    def grant_agent_access(self, principal: iam.IGrantable, tenant_id: str, agent_id: str) -> iam.Grant:
        """Let `principal` call agent `agent_id`'s routes of any user of tenant `tenant_id` of this stage,
        nothing else (no user-level route: `Api.grant_agent_access` says why)."""
        return self.api.grant_agent_access(principal, tenant_id, agent_id)

    def _outputs(self) -> None:
        functions = self.functions
        # Under SnapStart the read functions are called through their `live` alias (a published
        # version, snapshotted); `$LATEST` would initialize at every cold start.
        get_memory, recall = entry_point(functions.get_memory), entry_point(functions.recall)
        outputs: dict[str, tuple[str, str]] = {
            "ApiUrl": (self.api.url, "Base URL of the API (routes start with v1/)"),
            "GetMemoryFunctionName": (get_memory.function_name, "Read function (direct invoke)"),
            "GetMemoryFunctionArn": (get_memory.function_arn, "Read function ARN"),
            "IngestFunctionName": (functions.ingest.function_name, "Write function (direct invoke)"),
            "IngestFunctionArn": (functions.ingest.function_arn, "Write function ARN"),
            "CondenserFunctionName": (functions.condenser.function_name, "Condenser function"),
            "CondenserFunctionArn": (functions.condenser.function_arn, "Condenser function ARN"),
            "RecallFunctionName": (recall.function_name, "Recall function (direct invoke)"),
            "RecallFunctionArn": (recall.function_arn, "Recall function ARN"),
            "TableName": (
                self.storage.table.table_name,
                "Memory table (memory, facts, jobs, Idempotency-Key records)",
            ),
            "BucketName": (self.storage.bucket.bucket_name, "Archive bucket (raw/ and history/)"),
            "QueueName": (self.queueing.queue.queue_name, "Ingest FIFO queue"),
            "QueueUrl": (self.queueing.queue.queue_url, "Ingest FIFO queue URL"),
            "DlqName": (self.queueing.dlq.queue_name, "Dead-letter FIFO queue"),
            "AlarmTopicArn": (self.monitoring.topic.topic_arn, "SNS topic of the alarms"),
            "EventBusName": (
                self.change_events.bus.event_bus_name,
                "EventBridge bus of the change events (source hippocampus)",
            ),
            "EventBusArn": (self.change_events.bus.event_bus_arn, "EventBridge bus ARN of the change events"),
        }
        if functions.llm_secret is not None:
            outputs["LlmSecretName"] = (
                self.config.resolved_llm_secret_name or "",
                "Secrets Manager secret the OpenAI API key is read from (LLM and embeddings)",
            )
        for key, (value, description) in outputs.items():
            cdk.CfnOutput(self, key, value=value, description=description)
