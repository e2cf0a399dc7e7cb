"""Plain span data: what every persistence function consumes.

Finished SDK spans, OTLP/JSON documents and Jaeger JSON all decode into these
dataclasses, so tree building is one pure function whatever the trace's route.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

KIND_NAMES = {
    SpanKind.INTERNAL: "INTERNAL",
    SpanKind.SERVER: "SERVER",
    SpanKind.CLIENT: "CLIENT",
    SpanKind.PRODUCER: "PRODUCER",
    SpanKind.CONSUMER: "CONSUMER",
}
STATUS_NAMES = {StatusCode.UNSET: "UNSET", StatusCode.OK: "OK", StatusCode.ERROR: "ERROR"}


@dataclass(frozen=True)
class EventData:
    name: str
    time_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LinkData:
    trace_id: str
    span_id: str
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SpanData:
    trace_id: str  # 32 lowercase hex digits
    span_id: str  # 16 lowercase hex digits
    parent_span_id: str | None
    name: str
    kind: str  # INTERNAL | CLIENT | SERVER | PRODUCER | CONSUMER
    start_ns: int
    end_ns: int | None  # None: the span never ended (crash) and is known only by its start
    attributes: dict[str, Any] = field(default_factory=dict)
    events: tuple[EventData, ...] = ()
    links: tuple[LinkData, ...] = ()
    status: str = "UNSET"  # UNSET | OK | ERROR
    status_message: str | None = None
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str | None = None


def hex_trace_id(value: int) -> str:
    return format(value, "032x")


def hex_span_id(value: int) -> str:
    return format(value, "016x")


def from_readable(span: ReadableSpan) -> SpanData:
    """Plain data of a finished (or open) SDK span, secrets redacted.

    Redaction here catches what never went through Telemetry: the SDK's own exception
    events (``exception.message``/``exception.stacktrace``), ``set_status`` descriptions
    and direct ``set_attribute`` calls. It is idempotent, so already-redacted data is unchanged.
    The recorder calls this at every span start and end: one pass, no intermediate copy.
    """
    from otel_agents.tracing.redaction import redact_text

    ctx = span.context
    parent = span.parent
    status = span.status
    return SpanData(
        trace_id=hex_trace_id(ctx.trace_id),
        span_id=hex_span_id(ctx.span_id),
        parent_span_id=hex_span_id(parent.span_id) if parent is not None and parent.is_valid else None,
        name=redact_text(span.name),
        kind=KIND_NAMES.get(span.kind, "INTERNAL"),
        start_ns=span.start_time or 0,
        end_ns=span.end_time,
        attributes=_redacted_plain(span.attributes),
        events=tuple(EventData(redact_text(e.name), e.timestamp, _redacted_plain(e.attributes)) for e in span.events),
        links=tuple(
            LinkData(hex_trace_id(link.context.trace_id), hex_span_id(link.context.span_id),
                     _redacted_plain(link.attributes))
            for link in span.links
        ),
        status=STATUS_NAMES.get(status.status_code, "UNSET"),
        status_message=redact_text(status.description) if status.description else status.description,
        resource=_redacted_plain(span.resource.attributes) if span.resource else {},
        scope=span.instrumentation_scope.name if span.instrumentation_scope else None,
    )


def _redacted_plain(attributes: Any) -> dict[str, Any]:
    """Attributes as a plain dict (sequences as lists), secrets redacted: ``redact_attributes`` in one pass."""
    from otel_agents.tracing.redaction import MARKER, is_secret_key, redact, redact_text

    out: dict[str, Any] = {}
    if not attributes:
        return out
    for key, value in attributes.items():
        kind = type(value)
        if is_secret_key(key):
            out[key] = MARKER
        elif kind is str:
            out[key] = redact_text(value)
        elif kind is tuple or kind is list:
            out[key] = redact(list(value))
        elif kind is int or kind is float or kind is bool:
            out[key] = value
        else:
            out[key] = redact(value)
    return out
