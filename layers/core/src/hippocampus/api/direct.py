"""Direct invocation (`lambda:Invoke` without API Gateway; docs/api.md "Direct invocation"): the
payload names a route by its action and becomes that route's proxy event, served by the same resolver
as an HTTP request; the result is the body of the response.

The action is the route's operationId in snake_case (`getMemory` → `get_memory`). The payload's other
fields are the route's path, query and header parameters by name (`Idempotency-Key` →
`idempotency_key`), and its body: `request`, or else the fields left over. Any payload without
`httpMethod` is taken for one, whatever its JSON type, so that every payload gets the envelope.
"""

import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin
from urllib.parse import quote

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.api_gateway import Route
from aws_lambda_powertools.event_handler.openapi.compat import ModelField
from aws_lambda_powertools.utilities.typing import LambdaContext

from hippocampus.api.envelope import JSON, validation_error
from hippocampus.api.request_checks import has_lone_surrogate
from hippocampus.contracts.errors import MalformedJson, ValidationFailed
from hippocampus.contracts.names import DELETION_RECEIPT_HEADER

BODY_FIELD = "request"
# The key in the resolver's context of the function that names an error's field as the payload did.
PAYLOAD_SPELLING = "payload_spelling"
# `ingest` was documented before actions were derived from operationIds.
_ACTION_NAMES = {"ingestMemory": "ingest"}
Loc = tuple[Any, ...]


@dataclass(frozen=True)
class DirectRequest:
    event: JSON  # the route's API Gateway proxy event
    spelling: Callable[[Loc], Loc]  # a validation error's location → the payload's field


def is_direct(event: Any) -> bool:
    return not isinstance(event, Mapping) or "httpMethod" not in event


def action_name(operation_id: str) -> str:
    return _ACTION_NAMES.get(operation_id) or re.sub(r"(?<!^)(?=[A-Z])", "_", operation_id).lower()


def actions(app: APIGatewayRestResolver) -> dict[str, Route]:
    """The routes `app` serves, by action: those of the routers the function includes."""
    # Powertools keeps the included routes in these two lists; it has no public accessor.
    return {action_name(route.operation_id): route for route in app._static_routes + app._dynamic_routes}


def proxy_request(app: APIGatewayRestResolver, event: Any, context: LambdaContext) -> DirectRequest:
    """The proxy event of the route the payload names; ServiceError if the payload cannot be one."""
    payload = payload_object(event)
    routes = actions(app)
    route = _route(routes, payload.get("action"))
    fields = {name: value for name, value in payload.items() if name != "action" and value is not None}
    errors: list[JSON] = []
    parameters = route.dependant
    values = {
        param.name: _text(param, fields.pop(param.name, None), "path", errors)
        for param in parameters.path_params
    }
    query = {
        param.alias: _text(param, fields.pop(param.alias, None), "query", errors)
        for param in parameters.query_params
    }
    headers = {
        param.alias: _text(param, fields.pop(_field_of_header(param.alias), None), "header", errors)
        for param in parameters.header_params
    }
    # A parameter of another action of this function is ignored: one payload may serve them all.
    fields = {name: value for name, value in fields.items() if name not in _parameters(routes.values())}
    body_in_request = bool(parameters.body_params) and BODY_FIELD in fields
    body = fields.pop(BODY_FIELD) if body_in_request else fields
    if parameters.body_params and not body_in_request:
        fields = {}  # they are the body
    extra = {"msg": "Extra inputs are not permitted", "type": "extra_forbidden"}
    errors += [{"loc": (name,), **extra} for name in fields]
    if errors:
        raise validation_error(errors)
    path = re.sub(r"\{(\w+)\}", lambda name: quote(values[name[1]] or "", safe=""), route.openapi_path)
    proxy: JSON = {
        "httpMethod": route.method,
        "path": path,
        "headers": {name: value for name, value in headers.items() if value is not None},
        "queryStringParameters": {name: value for name, value in query.items() if value is not None} or None,
        "requestContext": {"requestId": getattr(context, "aws_request_id", None) or uuid.uuid4().hex},
        "body": json.dumps(body) if parameters.body_params else None,
        "isBase64Encoded": False,
    }
    if parameters.body_params:
        proxy["headers"]["Content-Type"] = "application/json"
    return DirectRequest(proxy, lambda loc: _payload_loc(loc, body_in_request))


def result(response: JSON) -> JSON:
    """The body of the resolver's response: the route's body, `{}` when it has none, or the envelope.
    A deletion receipt's header becomes `{"receipt_id": …}`: an invocation has no headers."""
    body = response.get("body")
    if body:
        parsed: JSON = json.loads(body)
        return parsed
    headers = {**(response.get("headers") or {}), **(response.get("multiValueHeaders") or {})}
    receipt = next((v for k, v in headers.items() if k.lower() == DELETION_RECEIPT_HEADER.lower()), None)
    if isinstance(receipt, list):  # the REST resolver's multi-value form
        receipt = receipt[0] if receipt else None
    return {"receipt_id": receipt} if receipt else {}


def payload_object(event: Any) -> Mapping[str, Any]:
    """The payload, if it is a JSON object whose strings can be stored (else the error to answer)."""
    if not isinstance(event, Mapping):
        raise ValidationFailed(
            f"the payload must be a JSON object with an 'action', not {_json_type(event)}",
            [{"field": "payload", "message": "must be a JSON object", "type": "model_type"}],
        )
    if has_lone_surrogate(event):
        # Unencodable text would fail in DynamoDB or S3 after part of the request was written.
        raise MalformedJson("the payload is not valid UTF-8: a string holds a lone surrogate")
    return event


def _route(routes: Mapping[str, Route], action: Any) -> Route:
    route = routes.get(action) if isinstance(action, str) else None
    if route is not None:
        return route
    # The value is not echoed: any string may come here. The actions are those of this function.
    allowed = ", ".join(sorted(routes))
    raise ValidationFailed(
        f"this function does not serve that action; it serves: {allowed}",
        [
            {
                "field": "action",
                "message": f"one of: {allowed}",
                "type": "missing" if action is None else "literal_error",
            }
        ],
    )


def _text(param: ModelField, value: Any, kind: str, errors: list[JSON]) -> str | None:
    """A parameter's value as a request spells it: a string, the digits of an integer parameter, or
    `true`/`false` of a boolean one.

    No other type is converted (docs/api.md "Limits"): `"5"` is not a `limit`, `5` is not an id."""
    if _bare(param.type_) is bool and value is not None:
        if isinstance(value, bool):
            return "true" if value else "false"
        errors.append({"loc": (param.alias,), "msg": "Input should be a valid boolean", "type": "bool_type"})
        return None
    wants_integer = _bare(param.type_) is int
    if value is None:
        if kind == "path":
            errors.append({"loc": (param.name,), "msg": "Field required", "type": "missing"})
        return None
    if wants_integer and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not wants_integer and isinstance(value, str):
        return value
    kind_of_value = ("int_type", "a valid integer") if wants_integer else ("string_type", "a valid string")
    name = _field_of_header(param.alias) if kind == "header" else param.alias
    errors.append({"loc": (name,), "msg": f"Input should be {kind_of_value[1]}", "type": kind_of_value[0]})
    return None


def _parameters(routes: Iterable[Route]) -> set[str]:
    """The payload's names of the path, query and header parameters of `routes`."""
    names: set[str] = set()
    for route in routes:
        dependant = route.dependant
        names |= {param.name for param in dependant.path_params}
        names |= {param.alias for param in dependant.query_params}
        names |= {_field_of_header(param.alias) for param in dependant.header_params}
    return names


def _bare(annotation: Any) -> Any:
    """`Annotated[int, ...]` → `int`."""
    return _bare(get_args(annotation)[0]) if get_origin(annotation) is Annotated else annotation


def _field_of_header(alias: str) -> str:
    return alias.lower().replace("-", "_")


def _payload_loc(loc: Loc, body_in_request: bool) -> Loc:
    """A resolver error's location as the payload spells the field: `("header", "idempotency-key")` is
    `idempotency_key`, and a body field is under `request` when the body came in it."""
    if loc[:1] == ("header",) and len(loc) == 2:
        return (_field_of_header(str(loc[1])),)
    if loc[:1] == ("body",) and body_in_request:
        return (BODY_FIELD, *loc[1:])
    return loc


def _json_type(value: Any) -> str:
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)
