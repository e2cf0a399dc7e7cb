"""What goes to network exporters: each span's network copy (export_rules.py), in requests within budget, never fatal.

Requests: an export is split into requests of at most ``batch_bytes`` encoded bytes
(default 3 MiB, below the 4 MiB default gRPC message limit of collectors), cut by the
size bounds the per-span pass summed. A span the rules leave unchanged is handed to the
exporter as it is, not copied; to an exporter that writes OTLP itself
(``takes_encoded_spans``), already written, checked and encoded in that one pass
(``export_unchanged.py``).

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
from typing import Any, Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.export_rules import (
    CONTENT_EVENT_KEYS,
    DEFAULT_VALUE_CAP,
    ExportLimits,
    keeps_attribute,
    network_copy,
    within_counts,
)
from otel_agents.tracing.export_size import EnvelopeSizes, chunk_by_size
from otel_agents.tracing.export_unchanged import UnchangedSpans
from otel_agents.tracing.redaction import redact_text_once

PAUSE_AFTER_FAILURE_S = 5.0
MAX_HELD_BYTES = 64 * 1024 * 1024  # encoded bound of spans kept for a retry


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
            content_keys = CONTENT_EVENT_KEYS if is_event else sc.CONTENT_ATTRIBUTES
            return keeps_attribute(key, value, limits, content, content_keys, seen, is_event)

        return UnchangedSpans(keeps, lambda name: redact_text_once(name, seen) == name, limits.max_attributes,
                              limits.max_event_attributes, lambda span: within_counts(span, limits))

    def _filtered(self, span: ReadableSpan, seen: dict[str, str], unchanged: UnchangedSpans | None) -> tuple[Any, int]:
        """What is sent for ``span`` and a bound of its request size: written already when unchanged, else ``network_copy``."""
        if unchanged is not None:
            written = unchanged.write(span)
            if written is not None:
                bound = self._envelope(span) + len(written.data)
                if bound <= self.limits.span_bytes:  # else network_copy decides (fit_span keeps what fits)
                    return written, bound
        return network_copy(span, self.limits, self.export_content, self._envelope, seen)

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
