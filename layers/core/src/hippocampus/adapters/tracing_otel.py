"""`MEMORY_TRACING=otel`: the `Tracing` port on the OpenTelemetry API (made by tracing.make_tracing)."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.propagators.aws import AwsXRayPropagator
from opentelemetry.propagators.aws.aws_xray_propagator import TRACE_HEADER_KEY

from hippocampus.adapters.trace_header import Annotation, HeaderSource, lambda_trace_header

TRACER_NAME: Final = "hippocampus"


class OtelTracing:
    """`MEMORY_TRACING=otel`: spans through the OpenTelemetry API only.

    Without an OpenTelemetry SDK in the process (e.g. no ADOT layer) the spans are no-ops and
    cost next to nothing; with one, they are exported wherever it is configured. The trace
    crosses SQS as an X-Ray `AWSTraceHeader` (`AwsXRayPropagator`), the format SQS and X-Ray
    understand, so the condenser's spans join the trace of the API call that queued the item.

    `tracer_provider` is for tests; by default the global provider is used.
    """

    def __init__(
        self,
        tracer_provider: otel_trace.TracerProvider | None = None,
        header_source: HeaderSource = lambda_trace_header,
    ) -> None:
        self._tracer = otel_trace.get_tracer(TRACER_NAME, tracer_provider=tracer_provider)
        self._propagator = AwsXRayPropagator()
        self._header_source = header_source

    @contextmanager
    def span(self, name: str, **annotations: Annotation) -> Iterator[None]:
        # Default OTel behaviour, spelled out: an exception is recorded on the span, the span
        # status is set to ERROR, and the exception propagates unchanged.
        with self._tracer.start_as_current_span(
            name,
            attributes=dict(annotations),
            record_exception=True,
            set_status_on_exception=True,
        ):
            yield

    def current_trace_header(self) -> str | None:
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier)
        # No valid current span (no SDK, or outside any span): fall back to Lambda's own header.
        return carrier.get(TRACE_HEADER_KEY) or self._header_source()

    @contextmanager
    def continue_from(self, trace_header: str | None) -> Iterator[None]:
        if not trace_header:
            yield
            return
        # Extract on top of the current context: a malformed header leaves it unchanged.
        parent = self._propagator.extract(
            {TRACE_HEADER_KEY: trace_header}, context=otel_context.get_current()
        )
        token = otel_context.attach(parent)
        try:
            yield
        finally:
            otel_context.detach(token)
