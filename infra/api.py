"""API: the REST API (docs/architecture.md), built from `hippocampus.contracts.routes.ROUTES`, IAM (SigV4) auth."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from hippocampus.contracts.access import Grant, agent_grants, tenant_grants
from hippocampus.contracts.limits import IDENTIFIER_PATTERN
from hippocampus.contracts.routes import ROUTES
from infra.config import DeploymentConfig
from infra.functions import entry_point, retention
from infra.nag import acknowledge, nag_text
from infra.storage import removal_policy

# Optional headers and query strings a route reads (the request validator checks parameters only:
# bodies are validated by the Lambda, which answers 422 with field names in the error envelope).
_OPTIONAL_PARAMETERS: Final = {
    ("POST", "/memory"): ("method.request.header.Idempotency-Key",),
    ("PUT", "/memory"): ("method.request.header.If-Match",),
    ("GET", "/history"): ("method.request.querystring.limit",),
    ("GET", "/export"): ("method.request.querystring.cursor",),
    ("GET", "/facts"): ("method.request.querystring.limit", "method.request.querystring.cursor"),
    ("GET", "/episodes"): ("method.request.querystring.limit", "method.request.querystring.cursor"),
}


@dataclass(frozen=True)
class GatewayError:
    """How one API Gateway response type is rewritten into the service's error envelope."""

    response_type: apigw.ResponseType
    status: int
    code: str
    # None: API Gateway's own message ($context.error.messageString, already a JSON string).
    message: str | None = None


# Every response type API Gateway can produce is mapped; DEFAULT_4XX/5XX only catch types added later.
GATEWAY_ERRORS: Final = (
    # Unknown route. An unsigned request to a known route gets the same type, hence the message.
    GatewayError(
        apigw.ResponseType.MISSING_AUTHENTICATION_TOKEN,
        404,
        "not_found",
        "No route matches this method and path (or the request is not signed with SigV4).",
    ),
    GatewayError(apigw.ResponseType.RESOURCE_NOT_FOUND, 404, "not_found", "No route matches this path."),
    GatewayError(apigw.ResponseType.ACCESS_DENIED, 403, "access_denied"),
    GatewayError(apigw.ResponseType.INVALID_SIGNATURE, 403, "invalid_signature"),
    GatewayError(apigw.ResponseType.EXPIRED_TOKEN, 403, "expired_token"),
    GatewayError(apigw.ResponseType.UNAUTHORIZED, 401, "unauthorized"),
    GatewayError(apigw.ResponseType.INVALID_API_KEY, 403, "invalid_api_key"),
    GatewayError(apigw.ResponseType.WAF_FILTERED, 403, "request_blocked"),
    GatewayError(apigw.ResponseType.THROTTLED, 429, "throttled", "Too many requests: slow down and retry."),
    GatewayError(apigw.ResponseType.QUOTA_EXCEEDED, 429, "throttled", "Request quota exceeded."),
    GatewayError(
        apigw.ResponseType.REQUEST_TOO_LARGE, 413, "payload_too_large", "The request body is too large."
    ),
    GatewayError(apigw.ResponseType.UNSUPPORTED_MEDIA_TYPE, 415, "unsupported_media_type"),
    GatewayError(apigw.ResponseType.BAD_REQUEST_BODY, 400, "bad_request"),
    GatewayError(apigw.ResponseType.BAD_REQUEST_PARAMETERS, 422, "validation_error"),
    GatewayError(apigw.ResponseType.INTEGRATION_FAILURE, 502, "dependency_unavailable"),
    GatewayError(
        apigw.ResponseType.INTEGRATION_TIMEOUT, 504, "timeout", "The service did not answer in time."
    ),
    GatewayError(apigw.ResponseType.API_CONFIGURATION_ERROR, 500, "internal_error"),
    GatewayError(apigw.ResponseType.AUTHORIZER_CONFIGURATION_ERROR, 500, "internal_error"),
    GatewayError(apigw.ResponseType.AUTHORIZER_FAILURE, 500, "internal_error"),
    GatewayError(apigw.ResponseType.DEFAULT_4_XX, 400, "bad_request"),
    GatewayError(apigw.ResponseType.DEFAULT_5_XX, 500, "internal_error"),
)


def error_template(error: GatewayError) -> str:
    """The body template: the envelope with the status repeated inside, `details` always a list."""
    message = json.dumps(error.message) if error.message else "$context.error.messageString"
    envelope = f'"code": "{error.code}", "message": {message}, "status": {error.status}, "details": []'
    return '{"error": {' + envelope + "}}"


def _access_log_format() -> apigw.AccessLogFormat:
    """One JSON line per request: who, what, outcome, latency. Never bodies or query values."""
    fields = {
        "requestId": "$context.requestId",
        "extendedRequestId": "$context.extendedRequestId",
        "requestTime": "$context.requestTime",
        "httpMethod": "$context.httpMethod",
        "resourcePath": "$context.resourcePath",
        "status": "$context.status",
        "responseLength": "$context.responseLength",
        "responseLatency": "$context.responseLatency",
        "integrationLatency": "$context.integration.latency",
        "integrationStatus": "$context.integration.status",
        "errorType": "$context.error.responseType",
        "errorMessage": "$context.error.message",
        "caller": "$context.identity.caller",
        "userArn": "$context.identity.userArn",
        "sourceIp": "$context.identity.sourceIp",
        "xrayTraceId": "$context.xrayTraceId",
    }
    return apigw.AccessLogFormat.custom(json.dumps(fields, separators=(",", ":")))


def _path_parameters(path: str) -> list[str]:
    return re.findall(r"\{([^/}]+)\}", path)


class Api(Construct):
    """REST API (REST, not HTTP API: only REST has X-Ray) with IAM auth, validation, throttling, logs."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        functions: Mapping[str, lambda_.IFunction],
    ) -> None:
        super().__init__(scope, construct_id)
        self.stage_name = config.stage
        self.access_log_group = logs.LogGroup(
            self,
            "AccessLogs",
            retention=retention(config.log_retention_days),
            removal_policy=removal_policy(config),
        )
        logging_level = {
            "ERROR": apigw.MethodLoggingLevel.ERROR,
            "INFO": apigw.MethodLoggingLevel.INFO,
            "OFF": apigw.MethodLoggingLevel.OFF,
        }[config.api_logging_level]
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            rest_api_name=config.name_prefix,
            description="Hippocampus: persistent per-user memory for LLM applications (SigV4).",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=config.create_api_gateway_cloudwatch_role,
            # The CloudWatch role is a region-wide account setting: keep it when this stack goes
            # (CDK refuses a removal policy for a role it does not create).
            cloud_watch_role_removal_policy=(
                cdk.RemovalPolicy.RETAIN if config.create_api_gateway_cloudwatch_role else None
            ),
            default_method_options=apigw.MethodOptions(authorization_type=apigw.AuthorizationType.IAM),
            deploy_options=apigw.StageOptions(
                stage_name=config.stage,
                description=f"Hippocampus {config.stage}",
                tracing_enabled=config.tracing,
                throttling_rate_limit=config.throttling_rate_limit,
                throttling_burst_limit=config.throttling_burst_limit,
                logging_level=logging_level,
                data_trace_enabled=False,  # never log request or response bodies (user content)
                metrics_enabled=True,
                access_log_destination=apigw.LogGroupLogDestination(self.access_log_group),
                access_log_format=_access_log_format(),
            ),
        )
        # The stack exports the URL under the fixed key ApiUrl; drop the construct's own duplicate.
        self.rest_api.node.try_remove_child("Endpoint")
        if config.api_logging_level != "OFF":
            # API Gateway creates its execution log group on first use, without retention; owning it
            # (under the name API Gateway writes to) gives it the configured retention.
            self.execution_log_group = logs.LogGroup(
                self,
                "ExecutionLogs",
                log_group_name=f"API-Gateway-Execution-Logs_{self.rest_api.rest_api_id}/{config.stage}",
                retention=retention(config.log_retention_days),
                removal_policy=removal_policy(config),
            )
            self.rest_api.deployment_stage.node.add_dependency(self.execution_log_group)
        if config.create_api_gateway_cloudwatch_role:
            cloud_watch_role = self.rest_api.node.find_child("CloudWatchRole")
            policy = f"arn:{cdk.Stack.of(self).partition}:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"
            acknowledge(
                cloud_watch_role,
                f"AwsSolutions-IAM4[Policy::{nag_text(self, policy)}]",
                "API Gateway's account-level logging role must be able to create and write any API's "
                "log groups in the region; the AWS managed policy is the documented policy for it.",
            )
        self.validator = self.rest_api.add_request_validator(
            "ParameterValidator",
            request_validator_name=f"{config.name_prefix}-parameters",
            validate_request_parameters=True,
            validate_request_body=False,
        )
        # Through the `live` alias of a SnapStart function (only its published versions have a snapshot).
        self._integrations = {
            name: apigw.LambdaIntegration(entry_point(function), proxy=True, scope_permission_to_method=False)
            for name, function in functions.items()
        }
        self._add_routes()
        self._add_gateway_responses()
        self._acknowledge()

    # ------------------------------------------------------------------ routes

    def _add_routes(self) -> None:
        resources: dict[str, apigw.IResource] = {}
        for route in ROUTES:
            resource = resources.get(route.path) or self.rest_api.root.resource_for_path(route.path)
            resources[route.path] = resource
            parameters = {f"method.request.path.{name}": True for name in _path_parameters(route.path)}
            for (method, suffix), optional in _OPTIONAL_PARAMETERS.items():
                if route.method == method and route.path.endswith(suffix):
                    parameters.update(dict.fromkeys(optional, False))
            resource.add_method(
                route.method,
                self._integrations[route.function],
                authorization_type=apigw.AuthorizationType.IAM,
                request_validator=self.validator,
                request_parameters=parameters,
            )
        # Any other method on a known path reaches get_memory, which answers 405 in the envelope
        # (API Gateway prefers the specific methods above over ANY).
        for path, resource in resources.items():
            resource.add_method(
                "ANY",
                self._integrations["get_memory"],
                authorization_type=apigw.AuthorizationType.IAM,
                request_validator=self.validator,
                request_parameters={f"method.request.path.{name}": True for name in _path_parameters(path)},
            )

    def _add_gateway_responses(self) -> None:
        for error in GATEWAY_ERRORS:
            self.rest_api.add_gateway_response(
                f"Gateway{error.response_type.response_type.title().replace('_', '')}",
                type=error.response_type,
                status_code=str(error.status),
                templates={"application/json": error_template(error)},
                response_headers={"Content-Type": "'application/json'"},
            )

    def _acknowledge(self) -> None:
        acknowledge(
            self.rest_api,
            "AwsSolutions-APIG2",
            "The request validator checks parameters only, on purpose: bodies are validated by the "
            "Lambda, which must answer 422 with field names in the service's error envelope; an API "
            "Gateway body model would answer 400 in its own format.",
        )
        acknowledge(
            self.rest_api,
            "AwsSolutions-APIG3",
            "Every method requires SigV4 (AWS_IAM) and the stage is throttled; a WAF web ACL adds a "
            "monthly cost without protecting anything IAM does not already reject. Attach one if the "
            "API is exposed beyond trusted AWS principals.",
        )
        acknowledge(
            self.rest_api,
            "AwsSolutions-COG4",
            "The API is called service-to-service with SigV4 (AWS_IAM authorization on every method); "
            "there are no end users to authenticate with a Cognito user pool.",
        )

    # ------------------------------------------------------------------ access

    @property
    def url(self) -> str:
        return self.rest_api.url

    def tenant_arn(self, tenant_id: str) -> str:
        """`arn:…:execute-api:<region>:<account>:<api-id>/<stage>/*/v1/tenants/<tenant_id>/*`."""
        validate_tenant_id(tenant_id)
        (arn,) = self._grant_arns(tenant_grants(tenant_id))
        return arn

    def agent_arns(self, tenant_id: str, agent_id: str) -> list[str]:
        """`arn:…:<api-id>/<stage>/*/v1/tenants/<tenant_id>/users/*/agents/<agent_id>/*`."""
        validate_tenant_id(tenant_id)
        validate_agent_id(agent_id)
        return self._grant_arns(agent_grants(tenant_id, agent_id))

    def _grant_arns(self, grants: tuple[Grant, ...]) -> list[str]:
        """One `execute-api:Invoke` resource ARN of this stage per grant of contracts/access.py."""
        return [
            self.rest_api.arn_for_execute_api(method=g.method, path=g.path, stage=self.stage_name)
            for g in grants
        ]

    def grant_tenant_access(self, principal: iam.IGrantable, tenant_id: str) -> iam.Grant:
        """Allow `principal` every method under `/v1/tenants/<tenant_id>/` of this stage, and nothing else
        (`hippocampus.contracts.access.tenant_grants`, the rule the local stack applies too)."""
        return self._grant(
            principal,
            [self.tenant_arn(tenant_id)],
            f"Scoped to tenant {tenant_id} of stage {self.stage_name}: the wildcards cover the HTTP "
            "method and the routes below /v1/tenants/<tenant_id>/, nothing outside that tenant.",
        )

    def grant_agent_access(self, principal: iam.IGrantable, tenant_id: str, agent_id: str) -> iam.Grant:
        """Allow `principal` every method of agent `agent_id`'s routes of any user of tenant
        `tenant_id` of this stage (`…/users/<user>/agents/<agent_id>/…`), and nothing else
        (`hippocampus.contracts.access.agent_grants`, the rule the local stack applies too).

        The user-level routes (`…/users/<user>/memory…`, the shared scope) are not granted, even
        read-only: IAM's `*` spans `/`, so `GET …/users/*/memory` would also match
        `GET …/users/<user>/agents/<other>/memory`, another agent's private scope. The agent reads
        and searches the shared memory through its own routes (GET memory, query, context), which
        return both scopes, and polls a job of its scopes at its own `…/memory/jobs/<job_id>`. The
        tenant-level routes (`/v1/tenants/<tenant_id>/jobs/…`, the user list, usage) stay outside this
        grant (docs/operations.md "Give an agent access").
        """
        arns = self.agent_arns(tenant_id, agent_id)
        return self._grant(
            principal,
            arns,
            f"Scoped to agent {agent_id} of tenant {tenant_id} of stage {self.stage_name}: the wildcards "
            "cover the HTTP method, the user, and the routes below that user's /agents/<agent_id>/; "
            "no other agent's routes, no user-level route, nothing outside that tenant.",
        )

    def _grant(self, principal: iam.IGrantable, arns: list[str], reason: str) -> iam.Grant:
        grant = iam.Grant.add_to_principal(
            grantee=principal, actions=["execute-api:Invoke"], resource_arns=arns
        )
        if isinstance(principal, Construct):
            for arn in arns:
                acknowledge(principal, f"AwsSolutions-IAM5[Resource::{nag_text(self, arn)}]", reason)
        return grant


def _validate_identifier(field: str, value: str) -> None:
    # fullmatch: the pattern's `$` would also let a trailing newline through `re.match`.
    if cdk.Token.is_unresolved(value) or not re.fullmatch(IDENTIFIER_PATTERN, value):
        raise ValueError(f"{field} {value!r} must be a literal matching {IDENTIFIER_PATTERN}")


def validate_tenant_id(tenant_id: str) -> None:
    _validate_identifier("tenant_id", tenant_id)


def validate_agent_id(agent_id: str) -> None:
    _validate_identifier("agent_id", agent_id)
