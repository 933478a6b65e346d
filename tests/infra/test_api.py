"""The REST API of the default stack: routes, SigV4 on every method, stage settings, error envelope."""

from __future__ import annotations

import json
import re
from typing import Any

from aws_cdk.assertions import Match

from hippocampus.contracts import routes
from hippocampus.contracts.routes import ROUTES
from tests.infra.helpers import Synth, render, resource_paths

# What a caller gets when API Gateway answers by itself (docs/api.md "Errors").
GATEWAY_STATUS = {
    "MISSING_AUTHENTICATION_TOKEN": (404, "not_found"),  # unknown route, or an unsigned request
    "ACCESS_DENIED": (403, "access_denied"),
    "INVALID_SIGNATURE": (403, "invalid_signature"),
    "EXPIRED_TOKEN": (403, "expired_token"),
    "THROTTLED": (429, "throttled"),
    "REQUEST_TOO_LARGE": (413, "payload_too_large"),
    "BAD_REQUEST_PARAMETERS": (422, "validation_error"),
    "DEFAULT_4XX": (400, "bad_request"),
    "DEFAULT_5XX": (500, "internal_error"),
}


def methods(synth: Synth) -> dict[tuple[str, str], dict[str, Any]]:
    """(HTTP method, path) → properties of every method on a resource below the root."""
    paths = resource_paths(synth)
    return {
        (props["HttpMethod"], paths[props["ResourceId"]["Ref"]]): props
        for props in (
            m["Properties"] for m in synth.template.find_resources("AWS::ApiGateway::Method").values()
        )
        if "Ref" in props["ResourceId"]
    }


def integration_target(synth: Synth, method: dict[str, Any]) -> str:
    uri = render(method["Integration"]["Uri"])
    api_functions = ("get_memory", "ingest", "recall")
    targets = [name for name in api_functions if "${" + synth.function_id(name) + ".Arn}" in uri]
    (target,) = targets
    return target


def test_every_route_reaches_its_function_and_nothing_else_exists(default_synth: Synth) -> None:
    found = methods(default_synth)
    for route in ROUTES:
        method = found[(route.method, route.path)]
        assert method["Integration"]["Type"] == "AWS_PROXY"
        assert integration_target(default_synth, method) == route.function, route
    # Any other method on a known path reaches get_memory, which answers 405 in the envelope.
    routed = {route.path for route in ROUTES}
    for path in routed:
        assert integration_target(default_synth, found[("ANY", path)]) == "get_memory", path
    assert set(found) == {(r.method, r.path) for r in ROUTES} | {("ANY", p) for p in routed}


def test_recall_serves_query_and_context_and_get_memory_the_lists(default_synth: Synth) -> None:
    found = methods(default_synth)
    expected = {
        ("POST", routes.QUERY_PATH): "recall",
        ("POST", routes.CONTEXT_PATH): "recall",
        ("GET", routes.FACTS_PATH): "get_memory",
        ("GET", routes.EPISODES_PATH): "get_memory",
        # The other methods of the new resources: get_memory's 405, never the recall function.
        ("ANY", routes.QUERY_PATH): "get_memory",
        ("ANY", routes.CONTEXT_PATH): "get_memory",
    }
    for key, function in expected.items():
        assert integration_target(default_synth, found[key]) == function, key
    # Both lists page like the export: optional limit and cursor, declared to the validator.
    for path in (routes.FACTS_PATH, routes.EPISODES_PATH):
        parameters = found[("GET", path)]["RequestParameters"]
        assert parameters["method.request.querystring.limit"] is False, path
        assert parameters["method.request.querystring.cursor"] is False, path
    for path in (routes.QUERY_PATH, routes.CONTEXT_PATH):  # bodies only, validated by recall
        assert not [p for p in found[("POST", path)]["RequestParameters"] if ".querystring." in p], path


def test_every_method_requires_sigv4_and_validates_its_parameters(default_synth: Synth) -> None:
    template = default_synth.template
    validator = default_synth.logical_id(
        "AWS::ApiGateway::RequestValidator",
        # Bodies are validated by the Lambda, which answers 422 in the service's envelope.
        {"ValidateRequestParameters": True, "ValidateRequestBody": False},
    )
    signed = {
        "AuthorizationType": "AWS_IAM",
        "RequestValidatorId": {"Ref": validator},
        "RequestModels": Match.absent(),
    }
    template.all_resources_properties("AWS::ApiGateway::Method", signed)
    paths = resource_paths(default_synth)
    for (http_method, path), props in methods(default_synth).items():
        for name in re.findall(r"\{([^}]+)\}", paths[props["ResourceId"]["Ref"]]):
            assert props["RequestParameters"][f"method.request.path.{name}"] is True, (http_method, path)


def test_stage_is_throttled_traced_and_never_logs_bodies(default_synth: Synth) -> None:
    config, template = default_synth.stack.config, default_synth.template
    template.has_resource_properties(
        "AWS::ApiGateway::Stage",
        {
            "StageName": config.stage,
            "TracingEnabled": True,
            "MethodSettings": [
                Match.object_like(
                    {
                        "ThrottlingRateLimit": config.throttling_rate_limit,
                        "ThrottlingBurstLimit": config.throttling_burst_limit,
                        "LoggingLevel": "ERROR",
                        "DataTraceEnabled": False,
                        "MetricsEnabled": True,
                    }
                )
            ],
        },
    )
    template.has_resource_properties(
        "AWS::ApiGateway::RestApi", {"EndpointConfiguration": {"Types": ["REGIONAL"]}}
    )


def test_access_log_is_one_json_line_per_request_with_retention(default_synth: Synth) -> None:
    stage = next(iter(default_synth.template.find_resources("AWS::ApiGateway::Stage").values()))["Properties"]
    access_log = json.loads(stage["AccessLogSetting"]["Format"])
    assert {"requestId", "status", "resourcePath", "errorType", "xrayTraceId", "caller"} <= access_log.keys()
    log_group = default_synth.props(stage["AccessLogSetting"]["DestinationArn"]["Fn::GetAtt"][0])
    assert log_group["RetentionInDays"] == default_synth.stack.config.log_retention_days


def test_execution_log_group_is_owned_with_retention(default_synth: Synth) -> None:
    """API Gateway would create it on first use without retention; the stack owns it under its name."""
    config = default_synth.stack.config
    (rest_api,) = default_synth.template.find_resources("AWS::ApiGateway::RestApi")
    name = {"Fn::Join": ["", ["API-Gateway-Execution-Logs_", {"Ref": rest_api}, f"/{config.stage}"]]}
    default_synth.template.has_resource_properties(
        "AWS::Logs::LogGroup", {"LogGroupName": name, "RetentionInDays": config.log_retention_days}
    )


def test_only_this_api_may_invoke_the_functions(default_synth: Synth) -> None:
    template = default_synth.template
    (rest_api,) = template.find_resources("AWS::ApiGateway::RestApi")
    permissions = template.find_resources(
        "AWS::Lambda::Permission", {"Properties": {"Principal": "apigateway.amazonaws.com"}}
    )
    assert len(permissions) == 3  # one per API function (get_memory, ingest, recall), not one per method
    for permission in permissions.values():
        props = permission["Properties"]
        assert props["Principal"] == "apigateway.amazonaws.com"
        assert render(props["SourceArn"]).endswith("${" + rest_api + "}/*/*/*")


def body_of(props: dict[str, Any]) -> Any:
    template = props["ResponseTemplates"]["application/json"]
    return json.loads(template.replace("$context.error.messageString", '"message from API Gateway"'))


def test_gateway_errors_answer_the_documented_status_and_code(default_synth: Synth) -> None:
    for response_type, (status, code) in GATEWAY_STATUS.items():
        (props,) = [
            r["Properties"]
            for r in default_synth.template.find_resources(
                "AWS::ApiGateway::GatewayResponse", {"Properties": {"ResponseType": response_type}}
            ).values()
        ]
        assert int(props["StatusCode"]) == status, response_type
        assert body_of(props)["error"]["code"] == code, response_type


def test_every_gateway_error_uses_the_error_envelope(default_synth: Synth) -> None:
    responses = default_synth.template.find_resources("AWS::ApiGateway::GatewayResponse")
    assert responses
    for response in responses.values():
        props = response["Properties"]
        body = body_of(props)
        assert set(body) == {"error"}, props["ResponseType"]
        error = body["error"]
        assert set(error) == {"code", "message", "status", "details"}
        assert error["status"] == int(props["StatusCode"]) and error["details"] == []
        assert re.fullmatch(r"[a-z][a-z_]*", error["code"])
        assert props["ResponseParameters"] == {"gatewayresponse.header.Content-Type": "'application/json'"}
