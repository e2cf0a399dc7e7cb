"""OTLP protobuf (an ExportTraceServiceRequest message) into SpanData, as otlp_decode.py reads its JSON form.

Read field by field rather than through protobuf's JSON mapping (five times faster for a
receiver); the result equals ``decode_otlp_document(MessageToDict(request))``: ids as hex, a
zero or empty parent id is none, a zero end time is an open span, a zero start time is an
error, ``bytes_value`` is base64 text, ``kvlist_value`` a dict. Each span is decoded alone, so
:func:`decode_proto_spans` returns the spans that decode and the errors of those that do not.
"""

from __future__ import annotations

import base64
from typing import Any

from otel_agents.tracing.decoding import ImportFormatError, Where
from otel_agents.tracing.spandata import EventData, LinkData, SpanData

_KINDS = {0: "INTERNAL", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUSES = {0: "UNSET", 1: "OK", 2: "ERROR"}


def _id(raw: bytes, nbytes: int, where: Where, required: bool) -> str | None:
    if not raw:
        if required:
            raise where.error("missing id")
        return None
    # The length first, as the JSON reader: a zero id of the wrong length is malformed, not "none".
    if len(raw) != nbytes:
        raise where.error(f"invalid id {base64.b64encode(raw).decode()!r}: expected {nbytes} bytes")
    if not any(raw):
        if required:
            raise where.error(f"invalid all-zero id {raw.hex()!r}")
        return None
    return raw.hex()


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind)


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


def proto_span(span: Any, resource: dict[str, Any], scope: str | None, where: Where) -> SpanData:
    """One ``opentelemetry.proto.trace.v1.Span``; ImportFormatError when it cannot be a span."""
    if not span.start_time_unix_nano:
        raise where.error("missing startTimeUnixNano")
    if span.kind not in _KINDS:
        raise where.at("kind").error(f"unknown span_kind {span.kind}")
    if span.status.code not in _STATUSES:
        raise where.at("status", "code").error(f"unknown status_code {span.status.code}")
    return SpanData(
        trace_id=_id(span.trace_id, 16, where.at("traceId"), required=True),
        span_id=_id(span.span_id, 8, where.at("spanId"), required=True),
        parent_span_id=_id(span.parent_span_id, 8, where.at("parentSpanId"), required=False),
        name=span.name,
        kind=_KINDS[span.kind],
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano or None,
        attributes=_attributes(span.attributes),
        events=tuple(EventData(name=e.name, time_ns=e.time_unix_nano, attributes=_attributes(e.attributes))
                     for e in span.events),
        links=tuple(LinkData(trace_id=_id(l.trace_id, 16, where.at("links", i, "traceId"), required=True),
                             span_id=_id(l.span_id, 8, where.at("links", i, "spanId"), required=True),
                             attributes=_attributes(l.attributes))
                    for i, l in enumerate(span.links)),
        status=_STATUSES[span.status.code],
        status_message=span.status.message or None,
        resource=resource,
        scope=scope,
    )


def decode_proto_spans(request: Any, source: str = "request") -> tuple[list[SpanData], list[Where], list[ImportFormatError]]:
    """(spans, where each is, errors of the spans that could not be read) of an ExportTraceServiceRequest."""
    where = Where(source, 1).as_format("otlp")
    spans: list[SpanData] = []
    wheres: list[Where] = []
    errors: list[ImportFormatError] = []
    for i, rs in enumerate(request.resource_spans):
        resource = _attributes(rs.resource.attributes)
        for j, ss in enumerate(rs.scope_spans):
            scope = ss.scope.name or None
            for k, span in enumerate(ss.spans):
                here = where.at("resourceSpans", i, "scopeSpans", j, "spans", k)
                try:
                    spans.append(proto_span(span, resource, scope, here))
                    wheres.append(here)
                except ImportFormatError as exc:
                    errors.append(exc)
    return spans, wheres, errors
