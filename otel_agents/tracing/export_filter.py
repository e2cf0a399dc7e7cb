"""What goes to network exporters: capped, optionally content-free, and never fatal.

Local artifacts (``--otlp-file``, session directories) get every span whole. A
Collector or Jaeger gets a copy, redacted (spans hold content as the model was sent
it, pattern-labelled secrets included) and shaped so that no single giant value can
make a receiver reject a whole batch:

1. Content switch: with ``export_content=False`` message contents, tool
   arguments and results (``semconv.CONTENT_ATTRIBUTES`` on spans,
   ``CONTENT_EVENT_FIELDS`` on events) are left out.
2. Value cap: no string value (and no string array, counted as a whole) is
   longer than ``value_cap`` UTF-8 bytes, the truncation marker included. The
   marker says how many bytes were dropped and that the full value is local.
3. Attribute count: at most ``max_attributes`` (128, the OpenTelemetry default
   Jaeger and most backends expect) per span and per event; the first ones set
   are kept, because the runtime sets the identifying attributes at span start.
   The number dropped travels as OTLP ``dropped_attributes_count``.
4. Span budget: one span, events included, encodes to at most ``span_bytes``.
   A span over budget (say a ``discuss`` whose dozens of replies each sit just
   under the value cap) has its longest strings shortened to one common length,
   found by bisection, so short values (ids, names, counts) stay intact. Only if
   that is not enough are its last events dropped, counted as OTLP
   ``dropped_events_count``.
5. Batch budget: an export is split into requests of at most ``batch_bytes``
   encoded bytes (default 3 MiB), below the 4 MiB default gRPC message limit of
   collectors.

Cost: the export thread pays for each span one pass over its attributes and
events (content switch, redaction, count and cap together) that also sums an
upper bound of its encoded size (``export_size``); the OTLP encoder measures a
span only when that bound exceeds the span budget, and requests are cut by the
bounds. A span the rules leave unchanged (most: no secret, nothing over a cap)
is handed to the exporter as it is, not copied.

A failing endpoint costs one warning line on stderr for the whole process, and
at most one exporter timeout at a time: after a failed export, exports in the
next ``pause_after_failure_s`` seconds are given up at once instead of each
waiting for the endpoint again (the local artifacts have every span anyway).
So a session whose collector is down or hangs pays the timeout once, not once
per batch, and its final flush at exit is immediate if it follows a failure.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import Status

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.credentials import MARKER
from otel_agents.tracing.export_size import EVENT_FIXED, FIELD, EnvelopeSizes, attribute_bound, span_bound, text_bytes
from otel_agents.tracing.redaction import is_secret_key, known_safe_key, redact, redact_text

TRUNCATION_MARKER = "…[truncated {dropped} bytes by otel-agents; full value in the local session]"
DEFAULT_VALUE_CAP = 64 * 1024
MIN_VALUE_CAP = 256  # below this the marker itself would not fit
MAX_ATTRIBUTES = 128
MAX_SPAN_BYTES = 1024 * 1024
MAX_BATCH_BYTES = 3 * 1024 * 1024  # leaves room under the collectors' 4 MiB default
# A span over budget never has its strings cut below this many bytes.
MIN_SHARED_CAP = 512
PAUSE_AFTER_FAILURE_S = 15.0

_SCALARS = frozenset({int, float, bool, type(None)})
# attribute_bound of a string or scalar attribute, less its key's and text's bytes.
_STRING_ATTRIBUTE = attribute_bound("", "")
_SCALAR_ATTRIBUTE = attribute_bound("", 0)
_CONTENT_EVENT_KEYS = frozenset(sc.EVENT_FIELD_PREFIX + f for f in sc.CONTENT_EVENT_FIELDS) | sc.CONTENT_ATTRIBUTES


@dataclass(frozen=True)
class ExportLimits:
    """Bounds on what one span and one request may carry over the network."""

    value_cap: int = DEFAULT_VALUE_CAP
    max_attributes: int = MAX_ATTRIBUTES
    span_bytes: int = MAX_SPAN_BYTES
    batch_bytes: int = MAX_BATCH_BYTES

    def __post_init__(self) -> None:
        if self.value_cap < MIN_VALUE_CAP:
            raise ValueError(f"the export value cap must be at least {MIN_VALUE_CAP} bytes, not {self.value_cap}")
        if self.max_attributes < 1:
            raise ValueError("max_attributes must be at least 1")
        if self.span_bytes < 4 * MIN_SHARED_CAP or self.batch_bytes < self.span_bytes:
            raise ValueError("need span_bytes >= 2048 and batch_bytes >= span_bytes")


# --- values ---


def _marker_room(total: int) -> int:
    # The marker for ``total`` dropped bytes is never shorter than for fewer.
    return len(TRUNCATION_MARKER.format(dropped=total).encode("utf-8"))


def _head(raw: bytes, room: int) -> str:
    return raw[: max(0, room)].decode("utf-8", "ignore")  # never split a character


def value_bytes(value: Any) -> int:
    """Bytes a value's payload takes (strings as UTF-8; arrays summed)."""
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, (list, tuple)):
        return sum(value_bytes(v) for v in value)
    return 8


def cap_value(value: Any, cap: int) -> Any:
    """``value`` with at most ``cap`` bytes of string payload, marker included.

    A string array is capped as a whole: elements are kept while they fit, the
    element that crosses the cap is cut, and its marker counts every byte left
    out (of it and of the elements after it).
    """
    if isinstance(value, str):
        raw = value.encode("utf-8")
        if len(raw) <= cap:
            return value
        head = _head(raw, cap - _marker_room(len(raw)))
        return head + TRUNCATION_MARKER.format(dropped=len(raw) - len(head.encode("utf-8")))
    if isinstance(value, bytes):
        return value[:cap]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        total = value_bytes(value)
        if total <= cap:
            return list(value)
        room = _marker_room(total)
        out: list[str] = []
        used = 0
        for item in value:
            size = value_bytes(item)
            if used + size + room <= cap:
                out.append(item)
                used += size
                continue
            head = _head(item.encode("utf-8"), cap - used - room)
            out.append(head + TRUNCATION_MARKER.format(dropped=total - used - value_bytes(head)))
            break
        return out
    return list(value) if isinstance(value, tuple) else value


def _is_text(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, str) for v in value)
    )


# --- attributes ---


def _bounded(attributes: Mapping[str, Any], dropped: int) -> BoundedAttributes:
    bounded = BoundedAttributes(maxlen=None, attributes=dict(attributes), immutable=True)
    bounded.dropped = dropped  # read by the OTLP encoder as dropped_attributes_count
    return bounded


def _dropped(attributes: Any) -> int:
    return getattr(attributes, "dropped", 0) or 0


# --- size ---


def encoded_size(spans: Sequence[ReadableSpan]) -> int:
    """Bytes of the OTLP ``ExportTraceServiceRequest`` the exporters would send."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return encode_spans(list(spans)).ByteSize()


def _rebuild(
    span: ReadableSpan, attributes: Any, events: Sequence[Event], dropped_events: int = 0, status: Status | None = None,
    name: str | None = None,
) -> ReadableSpan:
    bounded_events = BoundedList(None)
    bounded_events.extend(events)
    bounded_events.dropped = span.dropped_events + dropped_events  # OTLP dropped_events_count
    return ReadableSpan(
        name=span.name if name is None else name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=bounded_events,
        links=span.links,
        kind=span.kind,
        status=status or span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _recap(attributes: BoundedAttributes, cap: int) -> BoundedAttributes:
    return _bounded({k: cap_value(v, cap) for k, v in attributes.items()}, _dropped(attributes))


def _longest_strings(span: ReadableSpan) -> list[int]:
    sizes = [value_bytes(v) for v in (span.attributes or {}).values() if _is_text(v)]
    for event in span.events:
        sizes += [value_bytes(v) for v in (event.attributes or {}).values() if _is_text(v)]
    return sizes


def _fit_span(span: ReadableSpan, limits: ExportLimits) -> ReadableSpan:
    """Shrink the longest strings of an over-budget span to one shared cap."""
    size = encoded_size([span])
    if size <= limits.span_bytes:
        return span
    sizes = _longest_strings(span)
    excess = size - limits.span_bytes

    def saved(cap: int) -> int:
        # Bytes saved by capping every string at ``cap`` (the marker is inside the cap).
        return sum(s - cap for s in sizes if s > cap)

    low, high = MIN_SHARED_CAP, limits.value_cap
    if saved(low) >= excess:
        while high - low > 64:
            mid = (low + high) // 2
            if saved(mid) >= excess:
                low = mid
            else:
                high = mid
        cap = low
    else:
        cap = MIN_SHARED_CAP
    shrunk = _rebuild(
        span,
        _recap(span.attributes, cap),
        [Event(e.name, _recap(e.attributes, cap), e.timestamp) for e in span.events],
    )
    if encoded_size([shrunk]) <= limits.span_bytes:
        return shrunk
    # Too many events even at the floor: keep the earliest that fit, count the rest.
    events = list(shrunk.events)
    empty = encoded_size([_rebuild(shrunk, {}, [])])
    used = encoded_size([_rebuild(shrunk, shrunk.attributes, [])])
    kept: list[Event] = []
    for event in events:
        used += encoded_size([_rebuild(shrunk, {}, [event])]) - empty
        if used > limits.span_bytes:
            break
        kept.append(event)
    return _rebuild(span, shrunk.attributes, kept, dropped_events=len(events) - len(kept))


def _export_attributes(
    attributes: Mapping[str, Any] | None,
    limits: ExportLimits,
    export_content: bool,
    content_keys: frozenset[str],
    already_dropped: int,
) -> tuple[dict[str, Any], int, bool, int]:
    """One pass over a span's or event's attributes: content switch, redaction, count, cap.

    Returns (attributes, dropped, changed, size bound): ``changed`` is False when the
    result would encode exactly as the original, so the original can be sent as is.
    """
    out: dict[str, Any] = {}
    dropped = already_dropped
    changed = False
    size = 0
    cap = limits.value_cap
    most = limits.max_attributes
    for key, value in (attributes or {}).items():
        if not export_content and key in content_keys:
            changed = True
            continue
        if len(out) >= most:
            dropped += 1
            changed = True
            continue
        if not known_safe_key(key) and is_secret_key(key):
            new: Any = MARKER
        elif type(value) is str:
            new = redact_text(value)
            length = len(new) if new.isascii() else text_bytes(new)  # isascii: O(1), no copy
            if length > cap:
                new = cap_value(new, cap)
                length = text_bytes(new)
                changed = True
            elif new is not value and new != value:
                changed = True
            out[key] = new
            # attribute_bound, inlined: this loop runs for every attribute of every exported span
            size += _STRING_ATTRIBUTE + length + (len(key) if key.isascii() else text_bytes(key))
            continue
        elif type(value) in _SCALARS:
            out[key] = value
            size += _SCALAR_ATTRIBUTE + (len(key) if key.isascii() else text_bytes(key))
            continue
        else:
            new = cap_value(redact(value), cap)
            if isinstance(value, tuple) and isinstance(new, list) and new == list(value):
                new = value
        if new is not value and new != value:
            changed = True
        out[key] = new
        size += attribute_bound(key, new)
    return out, dropped, changed, size


def _attributes_with_count(attributes: dict[str, Any], dropped: int) -> Any:
    # Only a BoundedAttributes carries a dropped count to the encoder; building one
    # validates every value again, so a plain dict goes when nothing was dropped.
    return _bounded(attributes, dropped) if dropped else attributes


def filter_span(span: ReadableSpan, limits: ExportLimits | int = ExportLimits(), export_content: bool = True) -> ReadableSpan:
    """The network copy of one span (see the module docstring for the rules)."""
    return _filter_span(span, limits if isinstance(limits, ExportLimits) else ExportLimits(value_cap=limits),
                        export_content, EnvelopeSizes())[0]


def _filter_span(
    span: ReadableSpan, limits: ExportLimits, export_content: bool, envelope: EnvelopeSizes
) -> tuple[ReadableSpan, int]:
    """The network copy of one span and a bound of its encoded request size.

    The span itself when the copy would encode the same: most spans carry no secret
    and nothing over the caps, and copying them is most of what the filter would cost.
    """
    changed = False
    events: list[Event] = []
    event_sizes: list[int] = []
    for e in span.events:
        name = redact_text(e.name)
        attributes, dropped, event_changed, size = _export_attributes(
            e.attributes, limits, export_content, _CONTENT_EVENT_KEYS, _dropped(e.attributes)
        )
        changed = changed or event_changed or name != e.name
        events.append(Event(name, _attributes_with_count(attributes, dropped), e.timestamp))
        event_sizes.append(EVENT_FIXED + FIELD + text_bytes(name) + size)
    attributes, dropped, attributes_changed, size = _export_attributes(
        span.attributes, limits, export_content, sc.CONTENT_ATTRIBUTES, span.dropped_attributes
    )
    status = span.status
    if status.description:  # set_status and SDK exception text never went through Telemetry
        status = Status(status.status_code, redact_text(status.description))
        if value_bytes(status.description) > limits.value_cap:
            status = Status(status.status_code, cap_value(status.description, limits.value_cap))
        changed = changed or status.description != span.status.description
    name = redact_text(span.name)
    if changed or attributes_changed or name != span.name:
        span = _rebuild(span, _attributes_with_count(attributes, dropped), events, status=status, name=name)
    bound = envelope(span) + span_bound(span, size, event_sizes)
    if bound <= limits.span_bytes:
        return span, bound
    fitted = _fit_span(span, limits)
    return fitted, encoded_size([fitted])


def chunk_by_size(
    spans: Sequence[ReadableSpan], limit: int = MAX_BATCH_BYTES, sizes: Sequence[int] | None = None
) -> list[list[ReadableSpan]]:
    """Consecutive groups whose encoded requests each stay within ``limit`` bytes.

    Each span is measured as a request of its own, so a group's true size (which
    shares the resource and scope) is never larger than the sum used here.
    ``sizes``: an upper bound of each span's request size, known already (else each is encoded).
    """
    chunks: list[list[ReadableSpan]] = []
    used = 0
    for number, span in enumerate(spans):
        size = encoded_size([span]) if sizes is None else sizes[number]
        if chunks and used + size <= limit:
            chunks[-1].append(span)
            used += size
        else:
            chunks.append([span])
            used = size
    return chunks


class NetworkExportFilter(SpanExporter):
    """Wraps an OTLP exporter: filters, caps, chunks, and warns once on failure."""

    def __init__(
        self,
        inner: SpanExporter,
        value_cap: int = DEFAULT_VALUE_CAP,
        export_content: bool = True,
        warn: Callable[[str], None] | None = None,
        describe: str = "OTLP endpoint",
        limits: ExportLimits | None = None,
        pause_after_failure_s: float = PAUSE_AFTER_FAILURE_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.inner = inner
        self.pause_after_failure_s = pause_after_failure_s
        self._clock = clock
        self._failed_at: float | None = None
        self.skipped_spans = 0  # given up without trying, during a pause
        self._in_flight = 0
        self.limits = limits or ExportLimits(value_cap=value_cap)
        self.export_content = export_content
        self.describe = describe
        self._warn = warn or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self._warned = False
        self._lock = threading.Lock()
        self._envelope = EnvelopeSizes()

    @property
    def value_cap(self) -> int:
        return self.limits.value_cap

    @property
    def warned(self) -> bool:
        return self._warned

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._failed_at is not None and self._clock() - self._failed_at < self.pause_after_failure_s:
            self.skipped_spans += len(spans)
            return SpanExportResult.FAILURE
        with self._lock:
            self._in_flight += 1
        try:
            result = self._export(spans)
        finally:
            with self._lock:
                self._in_flight -= 1
        self._failed_at = self._clock() if result is SpanExportResult.FAILURE else None
        return result

    def abandon(self, waited_s: float) -> bool:
        """Called when shutdown stops waiting: warns (once) if an export is still under way."""
        with self._lock:
            busy = self._in_flight > 0
        if busy:
            self._warn_once(f"no answer within {waited_s:g} s at exit")
        return busy

    def _export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            filtered = [_filter_span(s, self.limits, self.export_content, self._envelope) for s in spans]
            chunks = chunk_by_size([f for f, _ in filtered], self.limits.batch_bytes, [size for _, size in filtered])
        except Exception as exc:  # a filtering bug must not break the run either
            self._warn_once(f"{type(exc).__name__}: {exc}")
            return SpanExportResult.FAILURE
        for chunk in chunks:
            try:
                outcome = self.inner.export(chunk)
            except Exception as exc:  # an exporter must never break the run
                self._warn_once(f"{type(exc).__name__}: {exc}")
                return SpanExportResult.FAILURE
            if outcome is not SpanExportResult.SUCCESS:
                # The endpoint is failing: the rest of this batch would only add delay.
                self._warn_once("refused, unreachable or no answer in time")
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

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
