"""The stock OTLP/HTTP span exporter, its requests serialised by ``otlp_proto_encode`` instead of protobuf objects.

Everything else stays the SDK's: endpoint, headers, compression, retries, timeouts, its
own metrics. Its ``export`` serialises through the module-level ``encode_spans`` of its
module (in every version this project allows); that name is swapped once for a function
that gives our bytes while one of these exporters is exporting on this thread, and the
stock encoder's object otherwise, so any other exporter in the process is unchanged. If a
future SDK stops calling it, the stock encoder simply goes on doing the work
(``uses_direct_encoding`` says which, and a test keeps it true for the pinned SDK).
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from opentelemetry.exporter.otlp.proto.http import trace_exporter as _stock_module
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_agents.tracing.otlp_proto_encode import encode_request

_ours = threading.local()  # set while one of our exporters is inside the stock export, on that thread
_stock_encode = getattr(_stock_module, "encode_spans", None)


class _Encoded:
    """What the stock export expects of ``encode_spans(spans)``: something to serialise."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data

    def SerializePartialToString(self, **_: Any) -> bytes:  # noqa: N802 (protobuf's name)
        return self.data

    SerializeToString = SerializePartialToString

    def ByteSize(self) -> int:  # noqa: N802
        return len(self.data)


def _encode_spans(spans: Sequence[Any]) -> Any:
    if getattr(_ours, "active", False):
        return _Encoded(encode_request(spans))
    return _stock_encode(spans)


if _stock_encode is not None:
    _stock_module.encode_spans = _encode_spans


def uses_direct_encoding() -> bool:
    """Whether the SDK's exporter serialises through the swapped name (True for the pinned SDK)."""
    return _stock_encode is not None and _stock_module.encode_spans is _encode_spans


class HttpSpanExporter(OTLPSpanExporter):
    """``OTLPSpanExporter`` (http/protobuf) whose requests are the same bytes, written directly.

    It also takes spans written already (``otlp_proto_encode.EncodedSpan``, what the export
    filter sends for a span it leaves unchanged) wherever it takes ReadableSpans.
    """

    @property
    def takes_encoded_spans(self) -> bool:
        return uses_direct_encoding()

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        _ours.active = True
        try:
            return super().export(spans)
        finally:
            _ours.active = False
