"""What goes to network exporters: capped, optionally content-free, and never fatal.

Local artifacts (``--otlp-file``, session directories) get every span whole. A
Collector or Jaeger gets a copy, redacted (spans hold content as the model was sent
it, pattern-labelled secrets included) and shaped so that no single giant value can
make a receiver reject a whole batch:

1. Content switch: with ``export_content=False`` message contents, tool
   arguments and results (``semconv.CONTENT_ATTRIBUTES`` on spans,
   ``CONTENT_EVENT_FIELDS`` on events, a failed tool's status message) are left out.
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
is handed to the exporter as it is, not copied; to an exporter that writes OTLP
itself (``takes_encoded_spans``), already written, checked and encoded in that one
pass (``export_unchanged.py``).

An endpoint that fails or answers late loses nothing it could still take: spans
of a failed request are held (up to ``max_held_bytes``) and sent again with the
next request, so a slow first answer (a cold backend) delays later batches
instead of dropping them. After a failure the endpoint is not asked again for
``pause_after_failure_s``; batches in between are held, not tried, so a
collector that is down or hangs costs at most one exporter timeout at a time.
At exit (``begin_exit``) the held spans get one more attempt, and only one: a
failure then holds the rest without asking again. Nothing is said during the
run: ``delivered`` counts the spans the endpoint accepted (at the exporter's
result), and the exit report (``network_export.py``) gives the number not
delivered, only when there is one.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.credentials import MARKER
from otel_agents.tracing.export_caps import (
    MIN_SHARED_CAP,
    bounded_attributes,
    dropped_count,
    rebuild_span,
    cap_value,
    fit_span,
    value_bytes,
)
from otel_agents.tracing.export_size import (
    EVENT_FIXED,
    FIELD,
    MAX_BATCH_BYTES,
    EnvelopeSizes,
    attribute_bound,
    chunk_by_size,
    encoded_size,
    span_bound,
    text_bytes,
)
from otel_agents.tracing.export_unchanged import UnchangedSpans
from otel_agents.tracing.redaction import is_secret_key, known_safe_key, redact, redact_text, redact_text_once

DEFAULT_VALUE_CAP = 64 * 1024
MIN_VALUE_CAP = 256  # below this the marker itself would not fit
MAX_ATTRIBUTES = 128
MAX_SPAN_BYTES = 1024 * 1024
PAUSE_AFTER_FAILURE_S = 5.0
MAX_HELD_BYTES = 64 * 1024 * 1024  # encoded bound of spans kept for a retry

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


def _export_attributes(
    attributes: Mapping[str, Any] | None,
    limits: ExportLimits,
    export_content: bool,
    content_keys: frozenset[str],
    already_dropped: int,
    seen: dict[str, str],
) -> tuple[dict[str, Any], int, bool, int]:
    """One pass over a span's or event's attributes: content switch, redaction, count, cap.

    Returns (attributes, dropped, changed, size bound): ``changed`` is False when the
    result would encode exactly as the original, so the original can be sent as is.
    ``seen``: texts already redacted in this export, each redacted once.
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
            new = redact_text_once(value, seen)
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


def _keeps_attribute(
    key: str, value: Any, limits: ExportLimits, export_content: bool, content_keys: frozenset[str], seen: dict[str, str],
) -> bool:
    """Whether :func:`_export_attributes` leaves this one attribute as it is: its loop's verdict, building nothing.

    Strings and scalars (nearly every attribute) are judged here as the loop judges them
    (``test_export_unchanged`` checks that the two agree on any attribute); anything else by the pass itself.
    """
    if not export_content and key in content_keys:
        return False
    if not known_safe_key(key) and is_secret_key(key):
        return False
    kind = type(value)
    if kind is str:
        new = redact_text_once(value, seen)
        return (new is value or new == value) and (len(value) if value.isascii() else text_bytes(value)) <= limits.value_cap
    if kind in _SCALARS:
        return True
    return not _export_attributes({key: value}, limits, export_content, content_keys, 0, seen)[2]


def _attributes_with_count(attributes: dict[str, Any], dropped: int) -> Any:
    # Only a BoundedAttributes carries a dropped count to the encoder; building one
    # validates every value again, so a plain dict goes when nothing was dropped.
    return bounded_attributes(attributes, dropped) if dropped else attributes


def filter_span(span: ReadableSpan, limits: ExportLimits | int = ExportLimits(), export_content: bool = True) -> ReadableSpan:
    """The network copy of one span (see the module docstring for the rules)."""
    return _filter_span(span, limits if isinstance(limits, ExportLimits) else ExportLimits(value_cap=limits),
                        export_content, EnvelopeSizes())[0]


def _filter_span(
    span: ReadableSpan, limits: ExportLimits, export_content: bool, envelope: EnvelopeSizes,
    seen: dict[str, str] | None = None,
) -> tuple[ReadableSpan, int]:
    """The network copy of one span and a bound of its encoded request size.

    The span itself when the copy would encode the same: most spans carry no secret
    and nothing over the caps, and copying them is most of what the filter would cost.
    ``seen``: texts redacted for the spans exported with this one (a batch's spans repeat
    the same tool definitions, prices, ids and names), each redacted once.
    """
    seen = {} if seen is None else seen
    changed = False
    events: list[tuple[str, dict[str, Any], int, int | None]] = []  # made Events only for a copy
    event_sizes: list[int] = []
    for e in span.events:
        name = redact_text_once(e.name, seen)
        attributes, dropped, event_changed, size = _export_attributes(
            e.attributes, limits, export_content, _CONTENT_EVENT_KEYS, dropped_count(e.attributes), seen
        )
        changed = changed or event_changed or name != e.name
        events.append((name, attributes, dropped, e.timestamp))
        event_sizes.append(EVENT_FIXED + FIELD + text_bytes(name) + size)
    attributes, dropped, attributes_changed, size = _export_attributes(
        span.attributes, limits, export_content, sc.CONTENT_ATTRIBUTES, span.dropped_attributes, seen
    )
    status = span.status
    if status.description and not export_content and span.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL:
        # A failed tool's status is its result as the model read it (a hook's reason, the tool's error): content.
        status = Status(status.status_code, str(span.attributes.get(sc.ERROR_TYPE) or "error"))
    if status.description:  # set_status and SDK exception text never went through Telemetry
        status = Status(status.status_code, redact_text(status.description))
        if value_bytes(status.description) > limits.value_cap:
            status = Status(status.status_code, cap_value(status.description, limits.value_cap))
        changed = changed or status.description != span.status.description
    name = redact_text_once(span.name, seen)
    if changed or attributes_changed or name != span.name:
        copied = [Event(n, _attributes_with_count(a, d), t) for n, a, d, t in events]
        span = rebuild_span(span, _attributes_with_count(attributes, dropped), copied, status=status, name=name)
    bound = envelope(span) + span_bound(span, size, event_sizes)
    if bound <= limits.span_bytes:
        return span, bound
    fitted = fit_span(span, limits.span_bytes, limits.value_cap)
    return fitted, encoded_size([fitted])


class NetworkExportFilter(SpanExporter):
    """Wraps an OTLP exporter: filters, caps, chunks, holds what failed for a retry, counts deliveries."""

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
        max_held_bytes: int = MAX_HELD_BYTES,
    ):
        self.inner = inner
        self.pause_after_failure_s = pause_after_failure_s
        self.max_held_bytes = max_held_bytes
        self._clock = clock
        self._failed_at: float | None = None
        self.failure: str | None = None  # why the last failed attempt failed
        self.delivered = 0  # spans the endpoint accepted
        self.discarded = 0  # spans given up for good (filter error, held-bytes bound)
        self.skipped_spans = 0  # held without trying, during a pause
        self._held: list[tuple[ReadableSpan, int]] = []  # filtered copies with their size bounds
        self._held_bytes = 0
        self._exiting = False
        self._failed_at_exit = False
        self._in_flight = 0
        self.limits = limits or ExportLimits(value_cap=value_cap)
        self.export_content = export_content
        self.describe = describe
        self._warn = warn or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()  # the batch worker and a force_flush may export at once
        self._envelope = EnvelopeSizes()

    @property
    def value_cap(self) -> int:
        return self.limits.value_cap

    @property
    def held(self) -> int:
        """Spans waiting for a retry."""
        return len(self._held)

    @property
    def busy(self) -> bool:
        """An export is under way (at exit: the endpoint has not answered yet)."""
        with self._lock:
            return self._in_flight > 0

    def warn(self, message: str) -> None:
        self._warn(message)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            seen: dict[str, str] = {}
            unchanged = self._unchanged_spans(seen)
            filtered = [self._filtered(s, seen, unchanged) for s in spans]
        except Exception as exc:  # a filtering bug must not break the run either
            self.failure = f"{type(exc).__name__}: {exc}"
            self.discarded += len(spans)
            return SpanExportResult.FAILURE
        with self._send_lock:
            self._hold(filtered)
            if self._pausing():
                self.skipped_spans += len(spans)
                return SpanExportResult.FAILURE
            return self._send_held()

    def _unchanged_spans(self, seen: dict[str, str]) -> UnchangedSpans | None:
        """This export's one-pass writer of unchanged spans, if the exporter takes spans already written."""
        if not getattr(self.inner, "takes_encoded_spans", False):
            return None
        limits, content = self.limits, self.export_content

        def keeps(key: str, value: Any, is_event: bool) -> bool:
            return _keeps_attribute(key, value, limits, content, _CONTENT_EVENT_KEYS if is_event else sc.CONTENT_ATTRIBUTES, seen)

        return UnchangedSpans(keeps, lambda name: redact_text_once(name, seen) == name, limits.max_attributes)

    def _filtered(self, span: ReadableSpan, seen: dict[str, str], unchanged: UnchangedSpans | None) -> tuple[Any, int]:
        """What is sent for ``span`` and a bound of its request size: written already when unchanged, else ``_filter_span``."""
        if unchanged is not None:
            written = unchanged.write(span)
            if written is not None:
                bound = self._envelope(span) + len(written.data)
                if bound <= self.limits.span_bytes:  # else _filter_span decides (fit_span keeps what fits)
                    return written, bound
        return _filter_span(span, self.limits, self.export_content, self._envelope, seen)

    def begin_exit(self) -> None:
        """The final flush starts: the held spans get one more attempt whatever the pause."""
        self._exiting = True

    def _pausing(self) -> bool:
        if self._failed_at is None:
            return False
        if self._exiting:
            return self._failed_at_exit  # one attempt at exit, not one timeout per batch
        return self._clock() - self._failed_at < self.pause_after_failure_s

    def _hold(self, filtered: Sequence[tuple[ReadableSpan, int]]) -> None:
        self._held.extend(filtered)
        self._held_bytes += sum(size for _, size in filtered)
        dropped = 0
        while self._held_bytes > self.max_held_bytes and len(self._held) > dropped + 1:
            self._held_bytes -= self._held[dropped][1]  # the oldest go first: the newest matter most live
            dropped += 1
        if dropped:
            del self._held[:dropped]
            self.discarded += dropped

    def _send_held(self) -> SpanExportResult:
        with self._lock:
            self._in_flight += 1
        try:
            sent = self._send([span for span, _ in self._held], [size for _, size in self._held])
        finally:
            with self._lock:
                self._in_flight -= 1
        self.delivered += sent
        self._held_bytes -= sum(size for _, size in self._held[:sent])
        del self._held[:sent]
        if self._held:
            self._failed_at = self._clock()
            self._failed_at_exit = self._exiting
            return SpanExportResult.FAILURE
        self._failed_at = None
        return SpanExportResult.SUCCESS

    def _send(self, spans: list[ReadableSpan], sizes: list[int]) -> int:
        """How many of ``spans``, from the first, the endpoint accepted."""
        sent = 0
        for chunk in chunk_by_size(spans, self.limits.batch_bytes, sizes):
            try:
                outcome = self.inner.export(chunk)
            except Exception as exc:  # an exporter must never break the run
                self.failure = f"{type(exc).__name__}: {exc}"
                return sent
            if outcome is not SpanExportResult.SUCCESS:
                # The endpoint is failing: the rest of this batch would only add delay.
                self.failure = "refused, unreachable or no answer in time"
                return sent
            sent += len(chunk)
        return sent

    def shutdown(self) -> None:
        with self._send_lock:
            if self._held and not (self._exiting and self._failed_at_exit):
                self._exiting = True  # the last chance of spans held since a failure during the run
                self._send_held()
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)
