"""OTLP/JSON encoding checked against the OTLP exporters' own protobuf encoding.

A line written by ``--otlp-file`` is parsed with protobuf's ``json_format`` (the
reference ProtoJSON reader) into an ``ExportTraceServiceRequest`` and compared
with what ``encode_spans`` (the encoder the gRPC and HTTP exporters use) makes
of the same finished spans.
"""

from __future__ import annotations

import base64
import json
import math

import orjson
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from otel_agents.tracing.otlp_json import OtlpJsonFileExporter, encode_resource_spans, encode_value
from otel_agents.tracing.spandata import from_readable


def _hex_ids_to_base64(node):
    """OTLP/JSON writes ids as hex; ProtoJSON expects bytes as base64."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in {"traceId", "spanId", "parentSpanId"} and isinstance(value, str):
                value = base64.b64encode(bytes.fromhex(value)).decode()
            out[key] = _hex_ids_to_base64(value)
        return out
    if isinstance(node, list):
        return [_hex_ids_to_base64(v) for v in node]
    return node


def _parse_line(line: bytes) -> ExportTraceServiceRequest:
    return json_format.Parse(json.dumps(_hex_ids_to_base64(orjson.loads(line))), ExportTraceServiceRequest())


def _normalise(request: ExportTraceServiceRequest) -> ExportTraceServiceRequest:
    """Clear the fields SpanData does not carry (flags, scope version, schema urls, dropped counts)."""
    copy = ExportTraceServiceRequest()
    copy.CopyFrom(request)
    for rs in copy.resource_spans:
        rs.schema_url = ""
        for ss in rs.scope_spans:
            ss.scope.version = ""
            ss.schema_url = ""
            for span in ss.spans:
                span.flags = 0
                span.dropped_attributes_count = 0
                span.dropped_events_count = 0
                span.dropped_links_count = 0
                span.trace_state = ""
                for link in span.links:
                    link.flags = 0
                    link.trace_state = ""
    return copy


def _sample_spans():
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "otlp-json-test", "deployment.n": 3}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("otel_agents", "0.1.0")
    with tracer.start_as_current_span("invoke_agent main", attributes={"gen_ai.agent.name": "main"}) as root:
        root.set_attributes(
            {
                "otel_agents.run.index": 2**40,
                "ratio": 0.25,
                "flag": True,
                "tools": ["task", "discuss"],
                "ints": [1, 2, 3],
                "unicode": "héllo \u2603 \U0001f600 \n\t\"quoted\"",
            }
        )
        root.add_event("transcript_entry", {"otel_agents.event.content": "line1\nline2", "otel_agents.event.keep": 7})
        with tracer.start_as_current_span(
            "chat scripted/x", kind=SpanKind.CLIENT, links=[Link(root.get_span_context(), {"why": "resume"})]
        ) as chat:
            chat.set_status(Status(StatusCode.ERROR, "RateLimitError: slow down"))
            chat.add_event("otel_agents.log", {"otel_agents.log.level": "WRN", "otel_agents.log.message": "retry"})
        with tracer.start_as_current_span("turn") as turn:
            turn.set_status(Status(StatusCode.OK))
    provider.shutdown()
    return memory.get_finished_spans()


def test_encoded_line_equals_the_exporters_protobuf():
    spans = _sample_spans()
    line = orjson.dumps(encode_resource_spans(from_readable(s) for s in spans))
    assert _normalise(_parse_line(line)) == _normalise(encode_spans(spans))


def test_ids_are_hex_integers_are_strings_and_kinds_are_numbers():
    spans = _sample_spans()
    doc = encode_resource_spans(from_readable(s) for s in spans)
    (resource_spans,) = doc["resourceSpans"]
    by_name = {s["name"]: s for s in resource_spans["scopeSpans"][0]["spans"]}
    root, chat = by_name["invoke_agent main"], by_name["chat scripted/x"]
    assert len(root["traceId"]) == 32 and len(root["spanId"]) == 16
    assert int(root["traceId"], 16) == spans[-1].context.trace_id
    assert "parentSpanId" not in root and chat["parentSpanId"] == root["spanId"]
    assert chat["kind"] == 3 and root["kind"] == 1
    attrs = {a["key"]: a["value"] for a in root["attributes"]}
    assert attrs["otel_agents.run.index"] == {"intValue": str(2**40)}
    assert attrs["flag"] == {"boolValue": True}
    assert attrs["ints"]["arrayValue"]["values"][0] == {"intValue": "1"}
    assert isinstance(root["startTimeUnixNano"], str) and int(root["endTimeUnixNano"]) >= int(root["startTimeUnixNano"])
    assert chat["status"] == {"code": 2, "message": "RateLimitError: slow down"}
    assert chat["links"][0]["spanId"] == root["spanId"]


def test_non_finite_doubles_and_bytes_follow_protojson():
    assert encode_value(math.nan) == {"doubleValue": "NaN"}
    assert encode_value(math.inf) == {"doubleValue": "Infinity"}
    assert encode_value(-math.inf) == {"doubleValue": "-Infinity"}
    assert encode_value(b"\x00\xff") == {"bytesValue": "AP8="}
    parsed = json_format.ParseDict({"key": "x", "value": encode_value(math.inf)}, KeyValue())
    assert parsed.value.double_value == math.inf
    assert math.isnan(json_format.ParseDict({"key": "x", "value": encode_value(math.nan)}, KeyValue()).value.double_value)


def test_file_exporter_appends_one_whole_line_per_export(tmp_path):
    spans = _sample_spans()
    path = tmp_path / "spans.jsonl"
    exporter = OtlpJsonFileExporter(path)
    exporter.export(spans[:1])
    exporter.export(spans[1:])
    lines = path.read_bytes().splitlines()
    assert len(lines) == 2
    names = [s.name for line in lines for s in _parse_line(line).resource_spans[0].scope_spans[0].spans]
    assert names == [s.name for s in spans]


def test_file_exporter_reports_failure_for_an_unwritable_path(tmp_path):
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OtlpJsonFileExporter(tmp_path / "missing-dir" / "spans.jsonl")
    assert exporter.export(_sample_spans()) is SpanExportResult.FAILURE
