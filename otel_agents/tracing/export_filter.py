"""What goes to network exporters: capped, optionally content-free, and never fatal.

Local artifacts get every span whole. A Collector or Jaeger gets a copy whose
attribute values are capped (with a truncation marker), whose content can be
switched off, and whose batches are split below the 4 MiB gRPC message limit,
so one giant tool output never makes a collector reject a whole batch.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Sequence

import orjson
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_agents.tracing import semconv as sc

TRUNCATION_MARKER = "…[truncated {dropped} bytes by otel-agents; full value in the local session]"
DEFAULT_VALUE_CAP = 64 * 1024
MAX_BATCH_BYTES = 3 * 1024 * 1024  # leaves room under the collectors' 4 MiB default
MAX_ATTRIBUTES = 128


def cap_value(value: Any, cap: int) -> Any:
    if isinstance(value, str):
        raw = value.encode("utf-8")
        if len(raw) <= cap:
            return value
        marker = TRUNCATION_MARKER.format(dropped=len(raw) - cap)
        return raw[:cap].decode("utf-8", "ignore") + marker
    if isinstance(value, (list, tuple)):
        return [cap_value(v, cap) for v in value]
    return value


def _filter_attributes(attributes: Any, cap: int, export_content: bool, content_keys: frozenset[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (attributes or {}).items():
        if not export_content and key in content_keys:
            continue
        out[key] = cap_value(value, cap)
        if len(out) >= MAX_ATTRIBUTES:
            break
    return out


_CONTENT_EVENT_KEYS = frozenset(sc.EVENT_FIELD_PREFIX + f for f in sc.CONTENT_EVENT_FIELDS) | sc.CONTENT_ATTRIBUTES


def filter_span(span: ReadableSpan, cap: int, export_content: bool) -> ReadableSpan:
    events = [
        Event(e.name, _filter_attributes(e.attributes, cap, export_content, _CONTENT_EVENT_KEYS), e.timestamp)
        for e in span.events
    ]
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=_filter_attributes(span.attributes, cap, export_content, sc.CONTENT_ATTRIBUTES),
        events=events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def approx_size(span: ReadableSpan) -> int:
    """A cheap upper-ish estimate of a span's encoded size."""
    size = 200 + len(span.name)
    for attrs in [span.attributes] + [e.attributes for e in span.events]:
        if attrs:
            size += len(orjson.dumps(dict(attrs), default=str)) + 16
    return size


def chunk_by_size(spans: Sequence[ReadableSpan], limit: int = MAX_BATCH_BYTES) -> list[list[ReadableSpan]]:
    chunks: list[list[ReadableSpan]] = [[]]
    used = 0
    for span in spans:
        size = approx_size(span)
        if chunks[-1] and used + size > limit:
            chunks.append([])
            used = 0
        chunks[-1].append(span)
        used += size
    return [c for c in chunks if c]


class NetworkExportFilter(SpanExporter):
    """Wraps an OTLP exporter: caps, filters, chunks, and warns once on failure."""

    def __init__(
        self,
        inner: SpanExporter,
        value_cap: int = DEFAULT_VALUE_CAP,
        export_content: bool = True,
        warn: Callable[[str], None] | None = None,
        describe: str = "OTLP endpoint",
    ):
        self.inner = inner
        self.value_cap = value_cap
        self.export_content = export_content
        self.describe = describe
        self._warn = warn or (lambda msg: print(msg, file=sys.stderr))
        self._warned = False
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        filtered = [filter_span(s, self.value_cap, self.export_content) for s in spans]
        result = SpanExportResult.SUCCESS
        for chunk in chunk_by_size(filtered):
            try:
                outcome = self.inner.export(chunk)
            except Exception as exc:  # an exporter must never break the run
                outcome = SpanExportResult.FAILURE
                self._warn_once(f"{type(exc).__name__}: {exc}")
            if outcome is not SpanExportResult.SUCCESS:
                result = SpanExportResult.FAILURE
        if result is SpanExportResult.FAILURE:
            self._warn_once("export failed")
        return result

    def _warn_once(self, why: str) -> None:
        with self._lock:
            if self._warned:
                return
            self._warned = True
        self._warn(
            f"warning: could not send spans to the {self.describe} ({why}); "
            "the local session artifacts are complete"
        )

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)
