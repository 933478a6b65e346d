"""One trace follows an item from the API through SQS to the condenser (MEMORY_TRACING=otel)."""

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

USER = "/v1/tenants/acme/users/alice/memory"
_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans(monkeypatch):
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    monkeypatch.setenv("MEMORY_TRACING", "otel")
    return _EXPORTER


def capture_trace_headers(sqs_client):
    """moto drops MessageSystemAttributes on SendMessageBatch (SQS keeps them): record what was sent."""
    sent: dict[str, str] = {}

    def capture(params, **_):
        for entry in params.get("Entries", []):
            header = entry.get("MessageSystemAttributes", {}).get("AWSTraceHeader", {}).get("StringValue")
            if header:
                sent[entry["MessageDeduplicationId"]] = header

    sqs_client.meta.events.register("provide-client-params.sqs.SendMessageBatch", capture)
    return sent


def test_trace_crosses_the_queue(spans, service):
    from hippocampus.adapters import aws_clients as aws

    sent = capture_trace_headers(aws.client("sqs"))
    job_id = service.call("POST", USER, {"items": [{"text": "Alice sells candles."}]}).body["jobs"][0][
        "job_id"
    ]
    [message] = service.receive()
    header = sent[message["Attributes"]["MessageDeduplicationId"]]
    assert header.startswith("Root=1-")
    message["Attributes"]["AWSTraceHeader"] = header  # as SQS delivers it
    service.deliver([message])
    finished = {span.name: span for span in spans.get_finished_spans()}
    send, condense = finished["sqs.send"], finished["condense.user"]
    assert condense.context.trace_id == send.context.trace_id
    assert condense.parent is not None and condense.parent.span_id == send.context.span_id
    write = finished["dynamodb.write_memory"]
    assert write.context.trace_id == send.context.trace_id
    assert write.attributes["tenant_id"] == "acme" and write.attributes["job_id"] == job_id
    assert "llm.condense" in finished and "s3.get_raw" in finished


def test_spans_never_carry_content(spans, service):
    service.call("POST", USER, {"items": [{"text": "My secret is swordfish."}]})
    service.drain()
    for span in spans.get_finished_spans():
        assert all("swordfish" not in str(value) for value in span.attributes.values())
