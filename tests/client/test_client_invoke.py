"""Direct `lambda:Invoke` (docs/api.md "Direct invocation"): each method invokes the right function
with the documented payload, and results and errors map as over HTTP."""

import asyncio
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from client_test_servers import RecordingServer, envelope, job_body, json_answer, memory_body, usage_body

import hippocampus_client as hc
from hippocampus_client import AsyncMemoryClient, InvokeTarget, InvokeTransport, MemoryClient

TARGET = InvokeTarget(get_memory="fn-get", ingest="fn-ingest", recall="fn-recall")
USER = {"tenant_id": "acme", "user_id": "alice"}


class FakeLambda:
    """The `invoke` of a botocore lambda client: `answer(name, payload)` gives the result (or raises)."""

    def __init__(self, answer: Callable[[str, dict[str, Any]], Any], **response: Any) -> None:
        self.answer = answer
        self.response = response
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:
        payload = json.loads(Payload)
        self.calls.append((FunctionName, payload))
        result = self.answer(FunctionName, payload)
        raw = result if isinstance(result, bytes) else json.dumps(result).encode()
        metadata = {"RequestId": "lambda-req-1", "HTTPStatusCode": 200}
        return {"StatusCode": 200, "Payload": io.BytesIO(raw), "ResponseMetadata": metadata} | self.response


def invoking(answer: Callable[[str, dict[str, Any]], Any], **options: Any) -> tuple[MemoryClient, FakeLambda]:
    fake = FakeLambda(answer)
    return MemoryClient(tenant="acme", transport=InvokeTransport(TARGET, client=fake), **options), fake


def answer_for(name: str, payload: dict[str, Any]) -> Any:
    return {
        "get_memory": memory_body(),
        "get_history": {"versions": []},
        "export_memory": {**USER, "next_cursor": None},
        "get_job": job_body(status="completed"),
        "get_usage": usage_body(budget=200_000, calls=1, prompt_tokens=90, completion_tokens=10),
        "list_facts": {"facts": [], "next_cursor": None},
        "list_records": {"items": [], "next_cursor": None},
        "query_memory": {"results": []},
        "get_context": {"context": "c", "word_count": 1},
        "ingest": {"jobs": [job_body()]},
        "put_memory": memory_body("New.", 2),
        "delete_memory": {},
        "delete_fact": {},
        "delete_record": {},
    }[payload["action"]]


CASES: list[tuple[Callable[[MemoryClient], Any], str, dict[str, Any]]] = [
    (lambda m: m.get("alice"), "fn-get", {"action": "get_memory", **USER}),
    (lambda m: m.history("alice", limit=5), "fn-get", {"action": "get_history", **USER, "limit": 5}),
    (lambda m: m.export("alice"), "fn-get", {"action": "export_memory", **USER}),
    (lambda m: m.job("job-1"), "fn-get", {"action": "get_job", "tenant_id": "acme", "job_id": "job-1"}),
    (lambda m: m.usage(), "fn-get", {"action": "get_usage", "tenant_id": "acme"}),
    (lambda m: m.facts("alice", limit=7), "fn-get", {"action": "list_facts", **USER, "limit": 7}),
    (
        lambda m: m.records("alice", as_of="2022-06-01T00:00:00Z", include_invalidated=True, limit=7),
        "fn-get",
        {
            "action": "list_records",
            **USER,
            "limit": 7,
            "as_of": "2022-06-01T00:00:00Z",
            "include_invalidated": True,
        },
    ),
    (
        lambda m: m.query("alice", "q", top_k=2),
        "fn-recall",
        {"action": "query_memory", **USER, "request": {"query": "q", "top_k": 2}},
    ),
    (
        lambda m: m.context("alice"),
        "fn-recall",
        {"action": "get_context", **USER, "request": {"max_words": 300}},
    ),
    (
        lambda m: m.add("alice", "hi", idempotency_key="k1"),
        "fn-ingest",
        {"action": "ingest", **USER, "items": [{"text": "hi"}], "upsert": True, "idempotency_key": "k1"},
    ),
    (
        lambda m: m.put("alice", "New.", 1),
        "fn-ingest",
        {"action": "put_memory", **USER, "memory": "New.", "expected_version": 1},
    ),
    (lambda m: m.delete("alice"), "fn-ingest", {"action": "delete_memory", **USER}),
    (lambda m: m.delete_fact("alice", "f1"), "fn-ingest", {"action": "delete_fact", **USER, "fact_id": "f1"}),
    (
        lambda m: m.delete_record("alice", "rec_1"),
        "fn-ingest",
        {"action": "delete_record", **USER, "record_id": "rec_1"},
    ),
]


@pytest.mark.parametrize(("method", "function", "payload"), CASES, ids=[c[2]["action"] for c in CASES])
def test_each_method_invokes_its_function_with_the_documented_payload(
    method: Callable[[MemoryClient], Any], function: str, payload: dict[str, Any]
) -> None:
    memory, fake = invoking(answer_for, strict=True)
    assert method(memory) not in (None, False)
    assert fake.calls == [(function, payload)]


def test_usage_is_read_by_invoking_get_memory_with_both_clients() -> None:
    memory, fake = invoking(answer_for, strict=True)
    usage = memory.usage()
    assert usage is not None and (usage.tokens, usage.budget, usage.remaining) == (100, 200_000, 199_900)
    async_fake = FakeLambda(answer_for)
    async_memory = AsyncMemoryClient(tenant="acme", transport=InvokeTransport(TARGET, client=async_fake))
    assert asyncio.run(async_memory.usage()) == usage
    assert fake.calls == async_fake.calls == [("fn-get", {"action": "get_usage", "tenant_id": "acme"})]


def test_an_error_envelope_maps_to_the_same_exceptions_as_over_http() -> None:
    memory, _ = invoking(lambda name, payload: envelope("not_found", 404), strict=True)
    with pytest.raises(hc.NotFoundError) as raised:
        memory.job("job-gone")
    assert (raised.value.status, raised.value.request_id) == (404, "lambda-req-1")
    lenient, _ = invoking(lambda name, payload: envelope("not_found", 404))
    assert lenient.job("job-gone") is None
    assert lenient.delete_fact("alice", "nope") is False


def test_a_crashed_function_is_dependency_unavailable_and_garbage_is_malformed() -> None:
    fake = FakeLambda(lambda name, payload: {"errorMessage": "boom"}, FunctionError="Unhandled")
    crashed = MemoryClient(tenant="acme", strict=True, transport=InvokeTransport(TARGET, client=fake))
    with pytest.raises(hc.DependencyUnavailableError) as raised:
        crashed.get("alice")
    assert raised.value.status == 502
    garbage, _ = invoking(lambda name, payload: b"\x00not json", strict=True)
    with pytest.raises(hc.MalformedResponseError):
        garbage.get("alice")


def test_lambda_throttling_is_retried_then_raised_as_throttled() -> None:
    error = ClientError(
        {"Error": {"Code": "TooManyRequestsException"}, "ResponseMetadata": {"HTTPStatusCode": 429}}, "Invoke"
    )

    def throttle(name: str, payload: dict[str, Any]) -> Any:
        raise error

    memory, fake = invoking(throttle, strict=True)
    with pytest.raises(hc.ThrottledError):
        memory.get("alice")
    assert len(fake.calls) == 3


class FakeSession:
    """A botocore session whose clients are fakes: CloudFormation outputs and a lambda client."""

    def __init__(self, outputs: dict[str, str], fake_lambda: FakeLambda) -> None:
        self.outputs, self.fake_lambda = outputs, fake_lambda

    def create_client(self, service: str, **options: Any) -> Any:
        if service == "lambda":
            return self.fake_lambda
        outputs = [{"OutputKey": k, "OutputValue": v} for k, v in self.outputs.items()]
        return type(
            "CloudFormation", (), {"describe_stacks": lambda _, **kw: {"Stacks": [{"Outputs": outputs}]}}
        )()


def test_from_stack_reads_the_function_names_or_the_api_url_from_the_outputs() -> None:
    outputs = {
        "GetMemoryFunctionName": "Hippocampus-dev-GetMemory-1",
        "IngestFunctionName": "Hippocampus-dev-Ingest-2",
        "RecallFunctionName": "Hippocampus-dev-Recall-3",
        "ApiUrl": "https://abc123.execute-api.eu-west-1.amazonaws.com/dev/",
    }
    fake = FakeLambda(answer_for)
    session = FakeSession(outputs, fake)
    memory = MemoryClient.from_stack("Hippocampus-dev", tenant="acme", region="eu-west-1", session=session)
    assert memory.get("alice") == "Alice sells candles."
    assert fake.calls[0][0] == "Hippocampus-dev-GetMemory-1"
    over_api = MemoryClient.from_stack(
        "Hippocampus-dev", "acme", via="api", region="eu-west-1", session=session
    )
    assert isinstance(over_api.transport, hc.SigV4Transport)
    assert over_api.transport.endpoint == "https://abc123.execute-api.eu-west-1.amazonaws.com/dev"
    with pytest.raises(hc.ConfigurationError, match="IngestFunctionName"):
        MemoryClient.from_stack("Other", tenant="acme", region="eu-west-1", session=FakeSession({}, fake))


def test_the_local_invoke_endpoint_is_called_through_botocore(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    def lambda_api(method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        return json_answer(200, answer_for("", json.loads(body)))

    with RecordingServer(lambda_api) as server:
        memory = MemoryClient(tenant="acme", transport=InvokeTransport.local(server.url))
        assert memory.get("alice") == "Alice sells candles."
        async_memory = AsyncMemoryClient(
            tenant="acme", transport=InvokeTransport.local(server.url), strict=True
        )
        assert asyncio.run(async_memory.delete("alice")) is True
    assert [(method, path) for method, path, _ in server.requests] == [
        ("POST", "/2015-03-31/functions/hippocampus-dev-get-memory/invocations"),
        ("POST", "/2015-03-31/functions/hippocampus-dev-ingest/invocations"),
    ]
