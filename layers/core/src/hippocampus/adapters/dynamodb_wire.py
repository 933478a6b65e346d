"""DynamoDB Query pages parsed once: their `Items` handed over from the JSON as it came.

botocore parses a response by walking its shape, ~10 µs per attribute value: reading a partition
of 2,200 items (200 facts and 2,000 episodes, ~32,000 values) spent 0.35 s of the recall function's
0.78 s there (README "Performance"), more than the read itself. DynamoDB's JSON protocol already
writes each item as the typed attribute values that botocore would produce and boto3 decodes
(`{"S": "…"}`, `{"N": "3"}`, `{"BOOL": true}`), binaries aside, which are base64 on the wire and
bytes once parsed. So a `before-parse` handler takes `Items` out of the body, decodes the binaries,
and hands them over through botocore's `customized_response_dict`; botocore parses the rest of the
page (`LastEvaluatedKey`, counts, consumed capacity) and every error response as usual.
tests/integration/test_dynamodb_wire_moto.py checks that a Query answers the same items either way.
"""

import base64
import json
from typing import Any

QUERY_EVENT = "before-parse.dynamodb.Query"


def parse_query_items_once(client: Any) -> None:
    """Register the handler on a DynamoDB client (once per client)."""
    client.meta.events.register(QUERY_EVENT, _items_from_json, unique_id="hippocampus-query-items")


def _items_from_json(
    response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **_: Any
) -> None:
    if response_dict.get("status_code") != 200:
        return
    body = json.loads(response_dict["body"])
    items = body.pop("Items", None)
    if not isinstance(items, list):
        return
    customized_response_dict["Items"] = [
        {name: from_wire(value) for name, value in item.items()} for item in items
    ]
    response_dict["body"] = json.dumps(body).encode()


def from_wire(value: dict[str, Any]) -> dict[str, Any]:
    """An attribute value as botocore parses it from the wire's JSON (a Query's answer, a stream
    record as Lambda hands it): the same, but binaries as bytes instead of base64."""
    if "B" in value:
        return {"B": base64.b64decode(value["B"])}
    if "BS" in value:
        return {"BS": [base64.b64decode(member) for member in value["BS"]]}
    if "M" in value:
        return {"M": {name: from_wire(member) for name, member in value["M"].items()}}
    if "L" in value:
        return {"L": [from_wire(member) for member in value["L"]]}
    return value
