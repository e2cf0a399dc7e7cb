"""Trace documents and helpers shared by the decoder tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_agents.tracing.decoding import ImportFormatError
from otel_agents.tracing.trace_text import decode_trace_text

from support.shared_fixtures import FIXTURES, require_fixtures


def decode_file(path: Path):
    """A trace file's spans as ``import`` decodes them (reading the file is persistence/importers.py's)."""
    if Path(path).is_relative_to(FIXTURES):
        require_fixtures(Path(path).relative_to(FIXTURES))
    return decode_trace_text(Path(path).read_bytes(), str(path))


def otlp_doc(*spans, resource=None, scope="lib"):
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": resource or "svc"}}]},
                "scopeSpans": [{"scope": {"name": scope}, "spans": list(spans)}],
            }
        ]
    }



def otlp_span(span_id="00000000000000a1", parent=None, trace_id="0123456789abcdef0123456789abcdef", **extra):
    span = {"traceId": trace_id, "spanId": span_id, "name": f"op {span_id[-2:]}", "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000", "kind": 1, "status": {}}
    if parent:
        span["parentSpanId"] = parent
    span.update(extra)
    return span



def error_of(text: str, name: str = "bad.json") -> str:
    with pytest.raises(ImportFormatError) as info:
        decode_trace_text(text, name)
    message = str(info.value)
    assert "\n" not in message
    return message

