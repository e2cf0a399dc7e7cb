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


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def hex_trace_id(value: int) -> str:
    return format(value, "032x")


def hex_span_id(value: int) -> str:
    return format(value, "016x")


def from_readable(span: ReadableSpan) -> SpanData:
    ctx = span.context
    parent = span.parent
    return SpanData(
        trace_id=hex_trace_id(ctx.trace_id),
        span_id=hex_span_id(ctx.span_id),
        parent_span_id=hex_span_id(parent.span_id) if parent is not None and parent.is_valid else None,
        name=span.name,
        kind=KIND_NAMES.get(span.kind, "INTERNAL"),
        start_ns=span.start_time or 0,
        end_ns=span.end_time,
        attributes={k: _plain(v) for k, v in (span.attributes or {}).items()},
        events=tuple(
            EventData(e.name, e.timestamp, {k: _plain(v) for k, v in (e.attributes or {}).items()})
            for e in span.events
        ),
        links=tuple(
            LinkData(
                hex_trace_id(link.context.trace_id),
                hex_span_id(link.context.span_id),
                {k: _plain(v) for k, v in (link.attributes or {}).items()},
            )
            for link in span.links
        ),
        status=STATUS_NAMES.get(span.status.status_code, "UNSET"),
        status_message=span.status.description,
        resource={k: _plain(v) for k, v in span.resource.attributes.items()} if span.resource else {},
        scope=span.instrumentation_scope.name if span.instrumentation_scope else None,
    )
