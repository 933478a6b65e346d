"""Run the real handlers in-process against moto (`mock_aws`): API events, direct invokes, the SQS trigger."""

import importlib.util
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from hippocampus import wiring
from hippocampus.contracts import names as schema
from hippocampus.contracts import routes
from local_stack import events
from local_stack.lambda_context import LambdaContext as Context  # the local stack's; tests vary remaining_ms
from local_stack.paths import ACCOUNT_ID, DEFAULT_REGION

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"

# The stage and the queue of the local stack, which the in-process tests pretend to run behind.
STAGE = "local"
QUEUE_ARN = f"arn:aws:sqs:{DEFAULT_REGION}:{ACCOUNT_ID}:{schema.resource_name(STAGE, schema.QUEUE_NAME)}"


def load_handler(name: str) -> ModuleType:
    """A fresh import of functions/<name>/handler.py (settings and clients are per process in Lambda)."""
    spec = importlib.util.spec_from_file_location(
        f"handler_{name}_{uuid.uuid4().hex}", ROOT / "functions" / name / "handler.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def api_event(
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    raw_body: str | None = None,
) -> dict[str, Any]:
    """The event API Gateway sends for a request with a JSON `body` (or `raw_body`, sent as is)."""
    text = raw_body if raw_body is not None else (json.dumps(body) if body is not None else None)
    request = events.ApiRequest(
        method=method,
        path=path,
        query=list((query or {}).items()),
        headers=list({"Content-Type": "application/json", **(headers or {})}.items()),
        body=text,
    )
    _, event = events.api_gateway_event(request, STAGE)
    return event


@dataclass
class HttpResult:
    status: int
    headers: dict[str, str]
    body: Any


class Service:
    """The three functions wired like the deployed stack: API → get_memory/ingest, queue → condenser."""

    def __init__(self, queue_url: str, sqs: Any) -> None:
        self.get_memory = load_handler("get_memory")
        self.ingest = load_handler("ingest")
        self.recall = load_handler("recall")
        self.condenser = load_handler("condenser")
        self._queue_url = queue_url
        self._sqs = sqs

    def condense_with(self, model: Any) -> None:
        """The condenser with `model` as its LLM and every other adapter as deployed."""
        self.condenser = SimpleNamespace(lambda_handler=wiring.condenser_handler(model))

    def call(self, method: str, path: str, body: Any = None, **kwargs: Any) -> HttpResult:
        route = routes.match(method, path)
        functions = {"ingest": self.ingest, "recall": self.recall}
        function = functions.get(route.function, self.get_memory) if route else self.get_memory
        response = function.lambda_handler(api_event(method, path, body, **kwargs), Context())
        headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
        headers |= {k.lower(): ", ".join(v) for k, v in (response.get("multiValueHeaders") or {}).items()}
        text = response.get("body") or ""
        return HttpResult(response["statusCode"], headers, json.loads(text) if text else None)

    def invoke(self, function: str, payload: dict[str, Any]) -> Any:
        module = {
            "get_memory": self.get_memory,
            "ingest": self.ingest,
            "recall": self.recall,
            "condenser": self.condenser,
        }[function]
        return module.lambda_handler(payload, Context())

    def receive(self, max_messages: int = 10) -> list[dict[str, Any]]:
        return self._sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=max_messages,
            AttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
            VisibilityTimeout=0,
        ).get("Messages", [])

    def deliver(
        self, messages: list[dict[str, Any]], receive_count: int | None = None, context: Context | None = None
    ) -> set[str]:
        """Give messages to the condenser like the event source mapping; return the failed ids."""
        event = {"Records": [sqs_record(m, receive_count) for m in messages]}
        result = self.condenser.lambda_handler(event, context or Context())
        failed = {f["itemIdentifier"] for f in result["batchItemFailures"]}
        for message in messages:
            if message["MessageId"] not in failed:
                self._sqs.delete_message(QueueUrl=self._queue_url, ReceiptHandle=message["ReceiptHandle"])
        return failed

    def drain(self, rounds: int = 20) -> int:
        """Condense everything queued; return how many messages were delivered."""
        delivered = 0
        for _ in range(rounds):
            messages = self.receive()
            if not messages:
                return delivered
            delivered += len(messages)
            self.deliver(messages)
        return delivered


def sqs_record(message: dict[str, Any], receive_count: int | None = None) -> dict[str, Any]:
    """The record the event source mapping builds from `message` (as its `receive_count`th receive)."""
    return events.sqs_record(message, QUEUE_ARN, DEFAULT_REGION, receive_count=receive_count)
