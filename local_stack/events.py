"""The events Lambda hands the functions: API Gateway REST proxy events, SQS records, DynamoDB
stream records, schedules.

One builder of each, used by the local stack (`apigateway.py`, `event_source.py`,
`stream_source.py`) and by the tests that call handlers in-process (tests/support/lambda_harness.py), so both send the
functions what AWS sends them. Routing comes from `hippocampus.contracts.routes`, the API's
one route table and path-template matcher.
"""

import base64
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from email.utils import formatdate
from typing import Any, NamedTuple

from hippocampus.contracts import routes
from local_stack.paths import ACCOUNT_ID, LOOPBACK

PROXY_RESOURCE = "/{proxy+}"
API_ID = "local"
# What API Gateway sends a function when no route matches (it answers 404 or 405 with the envelope).
FALLBACK_FUNCTION: routes.ApiFunctionName = "get_memory"
# Hop-by-hop headers end at API Gateway.
_HOP_BY_HOP = frozenset({"connection", "transfer-encoding", "keep-alive"})


class ApiTarget(NamedTuple):
    """Where API Gateway sends a request: the function, the resource and its path parameters."""

    function: routes.ApiFunctionName
    resource: str
    path_parameters: dict[str, str] | None


@dataclass(frozen=True)
class ApiRequest:
    """A request as API Gateway has parsed it: the path (still percent-encoded), query, headers, body."""

    method: str
    path: str
    query: Sequence[tuple[str, str]] = ()
    headers: Sequence[tuple[str, str]] = ()
    body: str | None = None
    is_base64: bool = False
    source_ip: str = LOOPBACK
    host: str = LOOPBACK
    protocol: str = "HTTP/1.1"


def route_for(method: str, path: str) -> ApiTarget:
    """The function, resource and pathParameters of a request, as the deployed API resolves them.

    A known path with another method keeps its resource (an ANY method in AWS); an unknown path
    falls to the `{proxy+}` resource. Both reach get_memory, which answers 405 or 404.
    """
    route = routes.match(method, path)
    resource = route.path if route is not None else routes.resource_of(path)
    if resource is None:
        return ApiTarget(FALLBACK_FUNCTION, PROXY_RESOURCE, {"proxy": path.lstrip("/")})
    function = route.function if route is not None else FALLBACK_FUNCTION
    return ApiTarget(function, resource, routes.match_path(resource, path) or None)


def api_gateway_event(
    request: ApiRequest, stage: str, now: float | None = None
) -> tuple[str, dict[str, Any]]:
    """The function API Gateway invokes for `request`, and the REST proxy event it sends."""
    now = time.time() if now is None else now
    target = route_for(request.method, request.path)
    headers, multi_headers = _headers(request, now)
    query, multi_query = _multi_value(request.query)
    event = {
        "resource": target.resource,
        "path": request.path,
        "httpMethod": request.method,
        "headers": headers or None,
        "multiValueHeaders": multi_headers or None,
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": target.path_parameters,
        "stageVariables": None,
        "requestContext": _request_context(request, target.resource, stage, now, headers),
        "body": request.body,
        "isBase64Encoded": request.is_base64,
    }
    return target.function, event


def _headers(request: ApiRequest, now: float) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The request's headers plus those API Gateway adds; names merge case-insensitively."""
    port = request.host.rpartition(":")[2] if ":" in request.host else "80"
    added = [
        ("X-Forwarded-For", request.source_ip),
        ("X-Forwarded-Port", port),
        ("X-Forwarded-Proto", "http"),
        ("X-Amzn-Trace-Id", f"Root=1-{int(now):08x}-{uuid.uuid4().hex[:24]}"),
    ]
    headers: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    spelling: dict[str, str] = {}  # lower-case name → the first spelling seen
    for name, value in [*request.headers, *added]:
        if name.lower() in _HOP_BY_HOP:
            continue
        key = spelling.setdefault(name.lower(), name)
        multi.setdefault(key, []).append(value)
        headers[key] = value  # API Gateway keeps the last value in `headers`
    return headers, multi


def _multi_value(pairs: Iterable[tuple[str, str]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Single-value (the last one wins) and multi-value views of query string pairs."""
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in pairs:
        multi.setdefault(name, []).append(value)
        single[name] = value
    return single, multi


def _request_context(
    request: ApiRequest, resource: str, stage: str, now: float, headers: Mapping[str, str]
) -> dict[str, Any]:
    user_agent = next((value for name, value in headers.items() if name.lower() == "user-agent"), None)
    return {
        "resourceId": uuid.uuid5(uuid.NAMESPACE_URL, resource).hex[:6],
        "resourcePath": resource,
        "httpMethod": request.method,
        "extendedRequestId": base64.b32encode(uuid.uuid4().bytes[:10]).decode("ascii")[:16],
        "requestTime": formatdate(now, usegmt=True),
        "path": f"/{stage}{request.path}",
        "accountId": ACCOUNT_ID,
        "protocol": request.protocol,
        "stage": stage,
        "domainPrefix": API_ID,
        "requestTimeEpoch": int(now * 1000),
        "requestId": str(uuid.uuid4()),
        "identity": _identity(request.source_ip, user_agent),
        "domainName": request.host,
        "apiId": API_ID,
    }


def _identity(source_ip: str, user_agent: str | None) -> dict[str, Any]:
    # No authorizer and no SigV4 locally: every caller field but the address and agent is null.
    caller_fields = (
        "cognitoIdentityPoolId",
        "accountId",
        "cognitoIdentityId",
        "caller",
        "principalOrgId",
        "accessKey",
        "cognitoAuthenticationType",
        "cognitoAuthenticationProvider",
        "userArn",
        "user",
    )
    return dict.fromkeys(caller_fields) | {"sourceIp": source_ip, "userAgent": user_agent}


def sqs_record(
    message: Mapping[str, Any], queue_arn: str, region: str, *, receive_count: int | None = None
) -> dict[str, Any]:
    """The record Lambda builds from one message received with all its attributes.

    `receive_count` overrides `ApproximateReceiveCount` (a test playing the nth delivery).
    """
    attributes = dict(message.get("Attributes") or {})
    if receive_count is not None:
        attributes["ApproximateReceiveCount"] = str(receive_count)
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": attributes,
        "messageAttributes": {
            name: _message_attribute(value)
            for name, value in (message.get("MessageAttributes") or {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if message.get("MD5OfMessageAttributes"):
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def _message_attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    """A message attribute as Lambda spells it: camelCase keys, binary values in base64."""
    attribute: dict[str, Any] = {
        "stringListValues": list(value.get("StringListValues") or []),
        "binaryListValues": [_b64(item) for item in value.get("BinaryListValues") or []],
        "dataType": value.get("DataType", "String"),
    }
    if "StringValue" in value:
        attribute["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        attribute["binaryValue"] = _b64(value["BinaryValue"])
    return attribute


def _b64(data: bytes | str) -> str:
    raw = data if isinstance(data, bytes) else data.encode()
    return base64.b64encode(raw).decode("ascii")


def dynamodb_stream_record(record: Mapping[str, Any], stream_arn: str, region: str) -> dict[str, Any]:
    """The record Lambda builds from one record of `GetRecords` (as boto3 parses it): its values in
    JSON (binary attributes in base64, `ApproximateCreationDateTime` in epoch seconds), the region,
    and the stream's ARN as `eventSourceARN`."""
    converted: dict[str, Any] = _json_values(record)
    converted["awsRegion"] = region
    converted["eventSourceARN"] = stream_arn
    return converted


def _json_values(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _json_values(entry) for key, entry in value.items()}
    if isinstance(value, list | tuple):
        return [_json_values(entry) for entry in value]
    if isinstance(value, bytes | bytearray):
        return _b64(bytes(value))
    if isinstance(value, datetime):
        return int(value.timestamp())
    return value


def scheduled_event(region: str, rule: str = "DeadLetterPass") -> dict[str, Any]:
    """The event EventBridge sends a target of a schedule rule."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{ACCOUNT_ID}:rule/{rule}"],
        "detail": {},
    }
