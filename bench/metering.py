"""An opt-in meter of the requests the local stack makes to moto, counted as AWS bills them.

Used by `bench/bench_cost.py`, which runs the stack in its own process; nothing installs it
otherwise. `install(meter)` puts the meter in front of moto's request dispatcher, inside
`SerializedDynamoDB` (one DynamoDB request at a time), so that what an item was before and after a
request can be read from moto's tables without a race. It counts:
- every request, by service and operation (`s3:PutObject`, `sqs:SendMessageBatch`, ...);
- DynamoDB request units, from item sizes as AWS computes them (attribute names plus values):
  a strongly consistent read is 1 RRU per 4 KB (half for an eventually consistent one), a GetItem
  or BatchGetItem key at least 1; a Query the sum of the stored items it returned, rounded up once
  per request (looked up by the keys in the answer, so a projection keeping the keys does not lower
  it; items a FilterExpression dropped are not seen, and the service uses none); a write is 1 WRU
  per 1 KB of the larger of the item before and after, at least 1, and twice that inside
  TransactWriteItems (a ConditionCheck included), so a write whose condition fails is charged on
  the item as it stands, as AWS charges it;
- SQS requests in 64 KB chunks of the larger of request and response body, an empty
  ReceiveMessage apart (its count grows with wall-clock time, not with work).
Requests whose User-Agent contains `UNMETERED_AGENT` (an observer's own reads) are not counted.
"""

import io
import json
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.moto_server.werkzeug_app import DomainDispatcherApplication

from local_stack.aws import DUMMY_ACCESS_KEY_ID, DUMMY_SECRET_ACCESS_KEY
from local_stack.moto_dynamodb import stored_item
from local_stack.paths import ACCOUNT_ID, DEFAULT_REGION

UNMETERED_AGENT = "hippocampus-unmetered"
READ_UNIT_BYTES = 4096
WRITE_UNIT_BYTES = 1024
SQS_CHUNK_BYTES = 65_536
_CREDENTIAL_SCOPE = re.compile(r"Credential=[^/]+/\d+/([a-z0-9-]+)/([a-z0-9-]+)/")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Attributes = dict[str, Any]  # DynamoDB JSON: {"pk": {"S": "..."}, ...}


def unmetered_client(service: str, endpoint_url: str, region: str) -> Any:
    """A boto3 client for moto whose requests no meter counts (an observer's own reads)."""
    session = boto3.session.Session(DUMMY_ACCESS_KEY_ID, DUMMY_SECRET_ACCESS_KEY, region_name=region)
    return session.client(service, endpoint_url=endpoint_url, config=Config(user_agent_extra=UNMETERED_AGENT))


def read_units(size_bytes: int, consistent: bool = True) -> float:
    units = max(1, math.ceil(size_bytes / READ_UNIT_BYTES))
    return float(units) if consistent else units / 2


def write_units(size_bytes: int, transactional: bool = False) -> int:
    units = max(1, math.ceil(size_bytes / WRITE_UNIT_BYTES))
    return 2 * units if transactional else units


def sqs_chunks(request_bytes: int, response_bytes: int) -> int:
    return max(1, math.ceil(max(request_bytes, response_bytes) / SQS_CHUNK_BYTES))


def attributes_size(attributes: Attributes) -> int:
    """An item's size as DynamoDB counts it: each attribute's name (UTF-8) plus its value."""
    return sum(len(name.encode()) + DynamoType(value).size() for name, value in attributes.items())


# (region, table, attributes holding the item's key) -> the stored item's size in bytes, 0 if none.
ItemSizes = Callable[[str, str, Attributes], int]


def moto_item_size(region: str, table_name: str, attributes: Attributes) -> int:
    table = dynamodb_backends[ACCOUNT_ID][region].tables.get(table_name)
    if table is None or table.hash_key_attr not in attributes:
        return 0
    range_attr = table.range_key_attr
    if range_attr and range_attr not in attributes:
        return 0
    range_value = DynamoType(attributes[range_attr]) if range_attr else None
    item = stored_item(table, DynamoType(attributes[table.hash_key_attr]), range_value)
    return int(item.size()) if item is not None else 0


@dataclass(frozen=True)
class _Write:
    table: str
    attributes: Attributes  # the key, or the whole item of a Put
    transactional: bool


def _writes(operation: str, body: dict[str, Any]) -> list[_Write]:
    if operation == "PutItem":
        return [_Write(body["TableName"], body["Item"], False)]
    if operation in {"UpdateItem", "DeleteItem"}:
        return [_Write(body["TableName"], body["Key"], False)]
    if operation == "BatchWriteItem":
        return [
            _Write(table, request.get("PutRequest", {}).get("Item") or request["DeleteRequest"]["Key"], False)
            for table, requests in body["RequestItems"].items()
            for request in requests
        ]
    if operation == "TransactWriteItems":
        return [
            _Write(action["TableName"], action.get("Item") or action["Key"], True)
            for entry in body["TransactItems"]
            for action in entry.values()
        ]
    return []


@dataclass
class Reading:
    """What the meter counted since its last reset."""

    requests: Counter[str] = field(default_factory=Counter)
    read_units: Counter[str] = field(default_factory=Counter)  # by operation
    write_units: Counter[str] = field(default_factory=Counter)  # by operation
    sqs_billed: int = 0  # 64 KB chunks of every SQS request but the empty receives
    sqs_empty_receives: int = 0


class AwsRequestMeter:
    """Counts the requests that reach moto; thread-safe, read with `reading()`."""

    def __init__(self, item_size: ItemSizes = moto_item_size) -> None:
        self._item_size = item_size
        self._lock = threading.Lock()
        self._reading = Reading()

    def reset(self) -> None:
        with self._lock:
            self._reading = Reading()

    def reading(self) -> Reading:
        with self._lock:
            current = self._reading
            return Reading(
                Counter(current.requests),
                Counter(current.read_units),
                Counter(current.write_units),
                current.sqs_billed,
                current.sqs_empty_receives,
            )

    def __call__(
        self, app: WsgiApp, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if UNMETERED_AGENT in str(environ.get("HTTP_USER_AGENT", "")):
            return app(environ, start_response)
        scope = _CREDENTIAL_SCOPE.search(str(environ.get("HTTP_AUTHORIZATION", "")))
        region, service = scope.groups() if scope else (DEFAULT_REGION, "unknown")
        if service not in {"dynamodb", "sqs"}:
            # S3 is told apart by method and path: its bodies are not needed (nor read).
            self._add(requests={f"{service}:{_s3_operation(environ) if service == 's3' else 'request'}": 1})
            return app(environ, start_response)
        target = str(environ.get("HTTP_X_AMZ_TARGET", ".unknown"))
        operation = target.rsplit(".", 1)[-1]
        if target.startswith("DynamoDBStreams"):
            # The stream's reads by the events function's trigger: free in AWS (DynamoDB pricing).
            self._add(requests={f"dynamodbstreams:{operation}": 1})
            return app(environ, start_response)
        request = _take_body(environ)
        if service == "dynamodb":
            return [
                self._dynamodb(
                    app, environ, start_response, (region, operation), json.loads(request or b"{}")
                )
            ]
        response = b"".join(app(environ, start_response))  # moto builds its whole answer anyway
        self._count_sqs(operation, len(request), response)
        return [response]

    def _dynamodb(
        self,
        app: WsgiApp,
        environ: dict[str, Any],
        start_response: Callable[..., Any],
        target: tuple[str, str],
        body: dict[str, Any],
    ) -> bytes:
        """Serve one DynamoDB request, reading the items it writes before and after it."""
        region, operation = target
        writes = _writes(operation, body)
        before = [self._item_size(region, w.table, w.attributes) for w in writes]
        response = b"".join(app(environ, start_response))
        after = [self._item_size(region, w.table, w.attributes) for w in writes]
        wru = sum(
            write_units(max(b, a), w.transactional) for w, b, a in zip(writes, before, after, strict=True)
        )
        rru = self._read_units(region, operation, body, response)
        self._add(requests={f"dynamodb:{operation}": 1}, rru={operation: rru}, wru={operation: wru})
        return response

    def _read_units(self, region: str, operation: str, body: dict[str, Any], response: bytes) -> float:
        if operation == "GetItem":
            size = self._item_size(region, body["TableName"], body["Key"])
            return read_units(size, bool(body.get("ConsistentRead")))
        if operation == "BatchGetItem":
            return sum(
                read_units(self._item_size(region, table, key), bool(spec.get("ConsistentRead")))
                for table, spec in body["RequestItems"].items()
                for key in spec["Keys"]
            )
        if operation in {"Query", "Scan"}:
            # Billed on the full items read, not on the projected ones in the answer.
            items = json.loads(response or b"{}").get("Items", [])
            size = sum(
                self._item_size(region, body["TableName"], item) or attributes_size(item) for item in items
            )
            return read_units(size, bool(body.get("ConsistentRead")))
        return 0.0

    def _count_sqs(self, operation: str, request_bytes: int, response: bytes) -> None:
        if operation == "ReceiveMessage" and not json.loads(response or b"{}").get("Messages"):
            self._add(requests={}, empty_receives=1)
            return
        self._add(requests={f"sqs:{operation}": 1}, sqs_billed=sqs_chunks(request_bytes, len(response)))

    def _add(
        self,
        requests: dict[str, int],
        rru: dict[str, float] | None = None,
        wru: dict[str, int] | None = None,
        sqs_billed: int = 0,
        empty_receives: int = 0,
    ) -> None:
        with self._lock:
            self._reading.requests.update(requests)
            self._reading.read_units.update({k: v for k, v in (rru or {}).items() if v})
            self._reading.write_units.update({k: v for k, v in (wru or {}).items() if v})
            self._reading.sqs_billed += sqs_billed
            self._reading.sqs_empty_receives += empty_receives


def _take_body(environ: dict[str, Any]) -> bytes:
    """Read the request body and put it back for moto (DynamoDB and SQS always send a length)."""
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    environ["wsgi.input"] = io.BytesIO(body)
    return bytes(body)


def _s3_operation(environ: dict[str, Any]) -> str:
    """The S3 operation of a path-style request (the only style a loopback endpoint gets)."""
    method = str(environ.get("REQUEST_METHOD", ""))
    bucket_and_key = str(environ.get("PATH_INFO", "")).lstrip("/").split("/", 1)
    query = str(environ.get("QUERY_STRING", ""))
    if len(bucket_and_key) == 2 and bucket_and_key[1]:
        if method == "PUT" and environ.get("HTTP_X_AMZ_COPY_SOURCE"):
            return "CopyObject"
        names = {"PUT": "PutObject", "GET": "GetObject", "HEAD": "HeadObject", "DELETE": "DeleteObject"}
        return names.get(method, f"{method}Object")
    if method == "GET" and "list-type=2" in query:
        return "ListObjectsV2"
    if method == "POST" and "delete" in query:
        return "DeleteObjects"
    return f"{method}Bucket"


_active: list[AwsRequestMeter] = []  # the installed meter, if any


def install(meter: AwsRequestMeter) -> None:
    """Meter every request moto's server dispatches in this process from now on (once per process)."""
    if _active:
        raise RuntimeError("a meter is installed already")
    _active.append(meter)
    dispatch = DomainDispatcherApplication.__call__

    def metered(self: Any, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        return meter(lambda env, respond: dispatch(self, env, respond), environ, start_response)

    setattr(DomainDispatcherApplication, "__call__", metered)  # noqa: B010 - patching moto's class
