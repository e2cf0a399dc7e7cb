"""One OTLP ExportTraceServiceRequest (protobuf or JSON bytes, or a gRPC message) into SpanData, span by span.

A body that does not parse (cut mid-way, not protobuf, not JSON) is a :class:`BadRequest`:
the request is refused whole. A span that parses but cannot be taken (a bad id, a value the
session tree cannot hold) is rejected alone, counted with the first reason, as OTLP partial
success reports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_agents.tracing.decoded_set import finish_spans
from otel_agents.tracing.decoding import ImportFormatError, Where, loads_document
from otel_agents.tracing.otlp_decode import decode_otlp_document
from otel_agents.tracing.otlp_proto_decode import decode_proto_spans
from otel_agents.tracing.spandata import SpanData

MAX_REQUEST_BYTES = 16 << 20  # a request's cap over gRPC and HTTP (decompressed too), as Jaeger's receiver takes
_SPAN_ERRORS = (ImportFormatError, ValueError, TypeError, OverflowError)


class BadRequest(ValueError):
    """The request body is not one whole ExportTraceServiceRequest; one line."""


@dataclass
class Decoded:
    spans: list[SpanData] = field(default_factory=list)
    rejected: int = 0
    message: str = ""  # the first rejected span's reason

    def reject(self, reason: str) -> None:
        self.rejected += 1
        self.message = self.message or reason


def decode_body(body: bytes, content_type: str) -> Decoded:
    """An OTLP/HTTP body: JSON when the content type says so, else protobuf."""
    if "json" in content_type.lower():
        try:
            doc = loads_document(body, Where("request", 1))
        except ImportFormatError as exc:
            raise BadRequest(f"not an OTLP/JSON request: {exc.detail or exc}") from None
        if not isinstance(doc, dict):
            raise BadRequest("not an OTLP/JSON request: the body is not a JSON object")
        return decode_json_request(doc)
    message = ExportTraceServiceRequest()
    try:
        message.ParseFromString(body)
    except (DecodeError, ValueError) as exc:
        raise BadRequest(f"not an OTLP protobuf request (cut or damaged body): {exc}") from None
    return decode_message(message)


def decode_message(message: ExportTraceServiceRequest) -> Decoded:
    spans, wheres, errors = decode_proto_spans(message)
    out = Decoded()
    for exc in errors:
        out.reject(str(exc))
    return _finish(spans, wheres, out)


def _finish(spans: list[SpanData], wheres: list[Where], out: Decoded) -> Decoded:
    """The checks import makes over a set (finish_spans), on the whole request; span by span if one fails."""
    try:
        out.spans = finish_spans(spans, wheres)
        return out
    except _SPAN_ERRORS:
        pass
    for span, where in zip(spans, wheres):
        try:
            out.spans += finish_spans([span], [where])
        except _SPAN_ERRORS as exc:
            out.reject(f"span {span.span_id}: {exc}")
    return out


def decode_json_request(doc: dict[str, Any]) -> Decoded:
    """Every span of an OTLP/JSON document that can be taken; the others counted as rejected."""
    try:  # the whole request at once, as import reads a document; span by span only when it fails
        return Decoded(finish_spans(*decode_otlp_document(doc, Where("request", 1))))
    except _SPAN_ERRORS:
        pass
    out = Decoded()
    key = "resourceSpans" if "resourceSpans" in doc else "resource_spans"
    resource_spans = doc.get(key) or []
    if not isinstance(resource_spans, list):
        raise BadRequest(f"{key} is not a list")
    for rs in resource_spans:
        if not isinstance(rs, dict):
            out.reject("a resourceSpans entry is not an object")
            continue
        skey = "scopeSpans" if "scopeSpans" in rs else "scope_spans"
        for ss in rs.get(skey) or []:
            if not isinstance(ss, dict) or not isinstance(ss.get("spans") or [], list):
                out.reject("a scopeSpans entry is not an object with a spans list")
                continue
            for span in ss.get("spans") or []:
                _decode_one(rs, ss, span, out)
    return out


def _decode_one(rs: dict, ss: dict, span: Any, out: Decoded) -> None:
    single = {"resourceSpans": [{"resource": rs.get("resource") or {}, "scopeSpans": [
        {"scope": ss.get("scope") or {}, "spans": [span]}]}]}
    try:
        out.spans += finish_spans(*decode_otlp_document(single, Where("request", 1)))
    except ImportFormatError as exc:
        span_id = span.get("spanId") if isinstance(span, dict) else None
        out.reject(f"span {span_id}: {exc.detail or exc}")
    except (ValueError, TypeError, OverflowError) as exc:
        out.reject(f"span: {exc}")
