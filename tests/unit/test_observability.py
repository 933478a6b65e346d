"""Logging redaction, EMF metrics and the three Tracing adapters (hippocampus.observability)."""

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.metrics.provider import cold_start
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from hippocampus.adapters.trace_header import LAMBDA_TRACE_ENV
from hippocampus.adapters.tracing import NoTracing, XRayTracing, make_tracing
from hippocampus.adapters.tracing_otel import OtelTracing
from hippocampus.contracts.names import METRICS_NAMESPACE, SERVICE_NAME
from hippocampus.observability import MetricName, metrics, record_metric
from hippocampus.settings import Settings

REPO = Path(__file__).resolve().parents[2]
LAMBDA_HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
XRAY_HEADER = re.compile(r"^Root=1-[0-9a-f]{8}-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=[01]$")


def _settings(**values: object) -> Settings:
    return Settings.model_validate(values)


# ---------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def reset_metric_set(monkeypatch):
    """Powertools' recommended reset: metric data is shared by every Metrics instance."""
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    metrics.clear_metrics()
    cold_start.is_cold_start = True
    yield
    metrics.clear_metrics()


def _emf_blobs(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{") and '"_aws"' in line]


def test_record_metric_emits_emf(capsys):
    record_metric(MetricName.LLM_LATENCY_MS, 123.4)
    record_metric(MetricName.MEMORY_READS)
    record_metric(MetricName.MEMORY_READS)
    metrics.flush_metrics()

    (blob,) = _emf_blobs(capsys.readouterr().out)
    directive = blob["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == METRICS_NAMESPACE
    assert ["service"] in directive["Dimensions"]
    assert blob["service"] == SERVICE_NAME
    units = {m["Name"]: m["Unit"] for m in directive["Metrics"]}
    assert units == {"LlmLatencyMs": "Milliseconds", "MemoryReads": "Count"}
    assert blob["LlmLatencyMs"] == [123.4]
    assert blob["MemoryReads"] == [1.0, 1.0]


def test_log_metrics_decorator_flushes_without_cold_start_metric(capsys):
    @metrics.log_metrics(capture_cold_start_metric=False)
    def handler(event, context):
        record_metric(MetricName.ITEMS_INGESTED, 3)
        return "ok"

    assert handler({}, None) == "ok"
    blobs = _emf_blobs(capsys.readouterr().out)
    assert len(blobs) == 1
    assert blobs[0]["ItemsIngested"] == [3.0]
    assert "ColdStart" not in blobs[0]


# ---------------------------------------------------------------------------------------------
# OpenTelemetry
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter) -> TracerProvider:
    """A private provider per test: OTel's global provider can be set only once per process."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return tracer_provider


def _by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in exporter.get_finished_spans()}


def test_otel_spans_are_named_annotated_and_nested(provider, exporter):
    tracing = OtelTracing(tracer_provider=provider)
    with tracing.span("condense", tenant_id="t1", job_id="j1"), tracing.span("llm.complete", attempt=2):
        pass

    spans = _by_name(exporter)
    outer, inner = spans["condense"], spans["llm.complete"]
    assert dict(outer.attributes or {}) == {"tenant_id": "t1", "job_id": "j1"}
    assert dict(inner.attributes or {}) == {"attempt": 2}
    assert inner.parent is not None
    assert inner.parent.span_id == outer.context.span_id
    assert inner.context.trace_id == outer.context.trace_id
    assert outer.parent is None


def test_otel_span_records_error_and_reraises(provider, exporter):
    tracing = OtelTracing(tracer_provider=provider)
    with pytest.raises(ValueError, match="boom"), tracing.span("dynamodb.write"):
        raise ValueError("boom")

    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert [event.name for event in span.events] == ["exception"]
    assert (span.events[0].attributes or {})["exception.type"] == "ValueError"


def test_otel_header_round_trip_through_sqs(provider, exporter):
    ingest = OtelTracing(tracer_provider=provider)
    with ingest.span("ingest.enqueue", tenant_id="t1"):
        header = ingest.current_trace_header()
    assert header is not None
    assert XRAY_HEADER.match(header), header

    # Later, in another process: the condenser reads AWSTraceHeader from the SQS record.
    condenser = OtelTracing(tracer_provider=provider)
    with condenser.continue_from(header), condenser.span("condense", tenant_id="t1"):
        pass

    spans = _by_name(exporter)
    sent, condensed = spans["ingest.enqueue"], spans["condense"]
    assert condensed.context.trace_id == sent.context.trace_id
    assert condensed.parent is not None
    assert condensed.parent.span_id == sent.context.span_id
    assert condensed.parent.is_remote
    # The propagated context is detached afterwards.
    assert not otel_trace.get_current_span().get_span_context().is_valid


def test_otel_header_encodes_the_current_span(provider, exporter):
    tracing = OtelTracing(tracer_provider=provider)
    with tracing.span("api"):
        header = tracing.current_trace_header()
    (span,) = exporter.get_finished_spans()
    trace_hex = f"{span.context.trace_id:032x}"
    assert header == f"Root=1-{trace_hex[:8]}-{trace_hex[8:]};Parent={span.context.span_id:016x};Sampled=1"


def test_otel_without_span_falls_back_to_lambda_header(provider):
    assert OtelTracing(provider, header_source=lambda: LAMBDA_HEADER).current_trace_header() == LAMBDA_HEADER
    assert OtelTracing(provider, header_source=lambda: None).current_trace_header() is None


@pytest.mark.parametrize("header", [None, "", "garbage", "Root=1-xyz;Parent=1;Sampled=1"])
def test_otel_continue_from_missing_or_bad_header_starts_a_root_span(provider, exporter, header):
    tracing = OtelTracing(tracer_provider=provider)
    with tracing.continue_from(header), tracing.span("condense"):
        pass
    (span,) = exporter.get_finished_spans()
    assert span.parent is None


def test_otel_api_without_sdk_still_propagates_the_header():
    """No OTel SDK configured (no-op tracer): spans cost nothing, the trace still crosses SQS."""
    tracing = OtelTracing(tracer_provider=otel_trace.NoOpTracerProvider(), header_source=lambda: None)
    with tracing.span("condense"):
        assert tracing.current_trace_header() is None
    with tracing.continue_from(LAMBDA_HEADER), tracing.span("condense"):
        assert tracing.current_trace_header() == LAMBDA_HEADER


# ---------------------------------------------------------------------------------------------
# No tracing
# ---------------------------------------------------------------------------------------------


def test_no_tracing_returns_lambda_header(monkeypatch):
    tracing = make_tracing("off")
    assert isinstance(tracing, NoTracing)
    monkeypatch.setenv(LAMBDA_TRACE_ENV, LAMBDA_HEADER)
    assert tracing.current_trace_header() == LAMBDA_HEADER
    monkeypatch.delenv(LAMBDA_TRACE_ENV)
    assert tracing.current_trace_header() is None


def test_no_tracing_is_a_no_op():
    tracing = NoTracing(header_source=lambda: "Root=x")
    with tracing.continue_from("Root=y"), tracing.span("anything", tenant_id="t"):
        pass
    with pytest.raises(RuntimeError), tracing.span("anything"):
        raise RuntimeError
    assert tracing.current_trace_header() == "Root=x"


# ---------------------------------------------------------------------------------------------
# X-Ray
# ---------------------------------------------------------------------------------------------


def test_make_tracing_selects_adapter():
    assert isinstance(make_tracing("otel"), OtelTracing)
    assert isinstance(make_tracing("xray"), XRayTracing)
    assert isinstance(make_tracing("xray", allow_xray_sdk=False), NoTracing)
    assert isinstance(make_tracing("otel", allow_xray_sdk=False), OtelTracing)
    assert isinstance(make_tracing("off"), NoTracing)


class _CapturingEmitter:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send_entity(self, entity) -> None:
        self.sent.append(entity)

    def set_daemon_address(self, address) -> None:
        pass


@pytest.fixture
def xray():
    from aws_xray_sdk.core.context import Context
    from aws_xray_sdk.core.recorder import AWSXRayRecorder

    emitter = _CapturingEmitter()
    recorder = AWSXRayRecorder()
    recorder.configure(emitter=emitter, context=Context(context_missing="IGNORE_ERROR"), sampling=False)
    return recorder, emitter


def test_xray_subsegments_with_annotations_and_header(xray):
    recorder, emitter = xray
    tracing = XRayTracing(recorder=recorder, header_source=lambda: None)
    segment = recorder.begin_segment("condenser", sampling=1)
    with tracing.span("condense", tenant_id="t1", job_id="j1"):
        sub = recorder.current_subsegment()
        assert sub.annotations == {"tenant_id": "t1", "job_id": "j1"}
        header = tracing.current_trace_header()
    with pytest.raises(ValueError), tracing.span("llm.complete"):
        raise ValueError("boom")
    recorder.end_segment()

    assert header == f"Root={segment.trace_id};Parent={sub.id};Sampled=1"
    (sent,) = emitter.sent
    assert [s.name for s in sent.subsegments] == ["condense", "llm.complete"]
    assert sent.subsegments[1].fault
    assert sent.subsegments[1].cause["exceptions"][0].type == "ValueError"


def test_xray_without_segment_is_harmless(xray):
    recorder, _ = xray
    tracing = XRayTracing(recorder=recorder, header_source=lambda: LAMBDA_HEADER)
    with tracing.span("condense", tenant_id="t1"):
        assert tracing.current_trace_header() == LAMBDA_HEADER
    with tracing.continue_from("Root=whatever"):
        pass


def test_xray_header_before_first_span_is_lambdas_own():
    # (That this loads no SDK is checked in a fresh interpreter below.)
    tracing = XRayTracing(header_source=lambda: LAMBDA_HEADER)
    assert tracing.current_trace_header() == LAMBDA_HEADER


# ---------------------------------------------------------------------------------------------
# Import cost (checked in a fresh interpreter)
# ---------------------------------------------------------------------------------------------


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {"AWS_XRAY_CONTEXT_MISSING": "IGNORE_ERROR", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=60
    )


def test_import_loads_no_xray_sdk_nor_openai_nor_otel_sdk():
    result = _run(
        """
        import sys
        import hippocampus.adapters.tracing as obs
        tracing = obs.make_tracing("xray")
        tracing.current_trace_header()
        obs.make_tracing("otel")
        heavy = [m for m in sys.modules if m.split(".")[0] in {"aws_xray_sdk", "openai"}
                 or m.startswith("opentelemetry.sdk")]
        print(heavy)
        with tracing.span("first"):
            pass
        print("aws_xray_sdk" in sys.modules)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "True"]
