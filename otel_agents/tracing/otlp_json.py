"""OTLP/JSON encoding in the shape the Collector's file exporter writes.

One line per export call: ``{"resourceSpans": [...]}`` with hex trace/span ids,
64-bit integers as strings, enums as numbers and lowerCamelCase field names, as
the OTLP/JSON spec says (non-finite doubles as the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"``, as ProtoJSON writes them). Fields at their
default value are left out, except ``status``. A line parses with protobuf's
``json_format`` into the same ``ExportTraceServiceRequest`` the OTLP exporters
send, once the hex ids are turned back into bytes.
"""

from __future__ import annotations

import base64
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

import orjson
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_agents.tracing.records import storable_json
from otel_agents.tracing.spandata import SpanData, from_readable
from otel_agents.tracing.whole_lines import WholeLinesFile

KIND_NUMBERS = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
STATUS_NUMBERS = {"UNSET": 0, "OK": 1, "ERROR": 2}


def encode_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        if math.isfinite(value):
            return {"doubleValue": value}
        return {"doubleValue": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode()}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [encode_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": encode_attributes(value)}}
    return {"stringValue": str(value)}


def encode_attributes(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": encode_value(v)} for k, v in attributes.items()]


def encode_span(span: SpanData) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "kind": KIND_NUMBERS.get(span.kind, 1),
        "startTimeUnixNano": str(span.start_ns),
        "attributes": encode_attributes(span.attributes),
        "events": [
            {"timeUnixNano": str(e.time_ns), "name": e.name, "attributes": encode_attributes(e.attributes)}
            for e in span.events
        ],
        "links": [
            {"traceId": link.trace_id, "spanId": link.span_id, "attributes": encode_attributes(link.attributes)}
            for link in span.links
        ],
        "status": {"code": STATUS_NUMBERS.get(span.status, 0)},
    }
    if span.end_ns is not None:
        out["endTimeUnixNano"] = str(span.end_ns)
    if span.parent_span_id:
        out["parentSpanId"] = span.parent_span_id
    if span.status_message:
        out["status"]["message"] = span.status_message
    return out


def encode_resource_spans(spans: Iterable[SpanData]) -> dict[str, Any]:
    """Group spans by resource and scope into one ``{"resourceSpans": [...]}`` document."""
    groups: dict[bytes, dict[str | None, list[SpanData]]] = {}
    resources: dict[bytes, dict[str, Any]] = {}
    for span in spans:
        key = orjson.dumps(span.resource, option=orjson.OPT_SORT_KEYS)
        resources[key] = span.resource
        groups.setdefault(key, {}).setdefault(span.scope, []).append(span)
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": encode_attributes(resources[key])},
                "scopeSpans": [
                    {"scope": {"name": scope or ""}, "spans": [encode_span(s) for s in scope_spans]}
                    for scope, scope_spans in by_scope.items()
                ],
            }
            for key, by_scope in groups.items()
        ]
    }


class OtlpJsonFileExporter(SpanExporter):
    """``--otlp-file``: appends one OTLP/JSON line per export, written whole or not at all (whole_lines.py)."""

    def __init__(self, path: Path):
        self.file = WholeLinesFile(path, "spans", note="; the session directory holds every span")
        self.path = self.file.path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not spans:
            return SpanExportResult.SUCCESS
        line = storable_json(encode_resource_spans(from_readable(s) for s in spans)) + b"\n"
        return SpanExportResult.SUCCESS if self.file.append(line, len(spans)) else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self.file.close()
