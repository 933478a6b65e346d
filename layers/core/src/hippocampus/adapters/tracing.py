"""Tracing adapters of the `Tracing` port (`MEMORY_TRACING`, docs/configuration.md).

`make_tracing(mode)` returns `OtelTracing` (tracing_otel.py: OpenTelemetry API spans, X-Ray
trace header propagation), `XRayTracing` (X-Ray SDK subsegments, SDK imported lazily) or
`NoTracing`. Importing this module imports neither the X-Ray SDK nor OpenTelemetry: the read
path (get_memory) must start fast, and in the default `xray` mode it needs neither.
"""

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from hippocampus.adapters.trace_header import Annotation, HeaderSource, lambda_trace_header
from hippocampus.contracts.names import TracingMode

if TYPE_CHECKING:  # the port's module loads the models: the memory read's fast lane never does
    from hippocampus.contracts.ports import Tracing


class NoTracing:
    """`MEMORY_TRACING=off` (and the read path in X-Ray mode): no spans of our own.

    `current_trace_header()` still returns the header Lambda gives the invocation, so a message
    sent to SQS carries it (`AWSTraceHeader`) and Lambda active tracing links the condenser's
    trace to the API call, with no tracing SDK in the process.
    """

    def __init__(self, header_source: HeaderSource = lambda_trace_header) -> None:
        self._header_source = header_source

    def span(self, name: str, **annotations: Annotation) -> AbstractContextManager[None]:
        return nullcontext()

    def current_trace_header(self) -> str | None:
        return self._header_source()

    def continue_from(self, trace_header: str | None) -> AbstractContextManager[None]:
        return nullcontext()


class XRayTracing:
    """`MEMORY_TRACING=xray`: X-Ray SDK subsegments with annotations.

    The SDK (in maintenance mode; ~250 ms to import with its patches) is imported on the first
    span or header lookup, never when this module is imported. `recorder` is for tests.

    `continue_from` is a no-op: in Lambda the X-Ray segment of an invocation is owned by the
    runtime (a facade segment built from `_X_AMZN_TRACE_ID`) and cannot be re-parented by the
    SDK; for an SQS trigger, Lambda itself links the invocation to the `AWSTraceHeader` of the
    messages, so the condenser's subsegments already belong to the trace of the API call.
    """

    def __init__(self, recorder: Any = None, header_source: HeaderSource = lambda_trace_header) -> None:
        self._recorder = recorder
        self._header_source = header_source

    def _get_recorder(self) -> Any:
        if self._recorder is None:
            from aws_xray_sdk.core import xray_recorder  # lazy: keep it off the import path

            self._recorder = xray_recorder
        return self._recorder

    @contextmanager
    def span(self, name: str, **annotations: Annotation) -> Iterator[None]:
        # `in_subsegment` records an exception on the subsegment (fault) and re-raises it.
        with self._get_recorder().in_subsegment(name) as subsegment:
            if subsegment is not None:  # None when there is no segment (outside Lambda)
                for key, value in annotations.items():
                    subsegment.put_annotation(key, value)
            yield

    def current_trace_header(self) -> str | None:
        if self._recorder is None:
            # No span was opened yet: nothing of ours to be the parent; no need to load the SDK.
            return self._header_source()
        try:
            from aws_xray_sdk.core.models.trace_header import TraceHeader

            entity = self._recorder.get_trace_entity()
            segment = self._recorder.current_segment()
            if entity is None or segment is None or not getattr(segment, "trace_id", None):
                return self._header_source()
            sampled = 1 if getattr(entity, "sampled", False) else 0
            return str(TraceHeader(root=segment.trace_id, parent=entity.id, sampled=sampled).to_header_str())
        except Exception:  # tracing must never break the request
            return self._header_source()

    def continue_from(self, trace_header: str | None) -> AbstractContextManager[None]:
        return nullcontext()


def make_tracing(mode: TracingMode, *, allow_xray_sdk: bool = True) -> "Tracing":
    """The `Tracing` adapter for `MEMORY_TRACING`.

    `allow_xray_sdk=False` is for the read path (get_memory): its cold start must never pay for
    the X-Ray SDK, so "xray" mode gives `NoTracing` there. Lambda active tracing still records
    the invocation and its duration in X-Ray; only our own subsegments are missing, and a
    single GetItem needs none.
    """
    if mode == "otel":
        from hippocampus.adapters.tracing_otel import OtelTracing  # lazy: ~4 ms of imports

        return OtelTracing()
    if mode == "xray" and allow_xray_sdk:
        return XRayTracing()
    return NoTracing()
