"""The live session recorder: a SessionSink fed by an SDK span processor and a Telemetry listener.

Added to the same TracerProvider as any OTLP exporter, it sees every span of its
session start and end, and every seed-001 record the moment it is emitted. All it
adds to :class:`~otel_agents.persistence.session_sink.SessionSink` (which writes
events.jsonl, the spans.jsonl journal, tree.json.gz, meta.json and the ledger) is
the intake: which spans are this session's (:class:`SessionTraces`), and the copy
of each SDK span as plain :class:`SpanData`, scrubbed of credentials (and, with
``--redacted-save``, of secrets and contents) before anything is written.

The recorder process (``recorder_process.py``) feeds the same intake from the
SpanData fields the run sends down its pipe (:meth:`SessionRecorder.take_start` ...).
"""

from __future__ import annotations

from typing import Any, Mapping

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from otel_agents.persistence.content_redaction import redact_record_contents, redact_span_contents
from otel_agents.persistence.session_sink import CheckpointPolicy, RecorderStats, SessionSink
from otel_agents.persistence.sink_ledger import LEDGER_READ_AHEAD_BYTES
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.redaction import redact
from otel_agents.tracing.spandata import SpanData, SpanReader, hex_span_id, hex_trace_id

__all__ = ["CheckpointPolicy", "LEDGER_READ_AHEAD_BYTES", "RecorderStats", "SessionRecorder", "SessionTraces"]


class SessionTraces:
    """The traces of one session: a root span naming the session brings its trace in.

    Works on SDK spans, so a span of another session (or of the application) costs
    one look at its context, not a copy.
    """

    def __init__(self, session_id: str):
        self.session_id = session_id
        self.ids: set[int] = set()

    def admit_start(self, span: Any) -> bool:
        """Whether this starting span belongs to the session (its root names it, or its trace is known)."""
        trace_id = span.get_span_context().trace_id
        if span.parent is None or not span.parent.is_valid:
            attributes = span.attributes or {}
            if (attributes.get(sc.SESSION_ID) or attributes.get(sc.GEN_AI_CONVERSATION_ID)) == self.session_id:
                self.ids.add(trace_id)
        return trace_id in self.ids

    def admits(self, trace_id: int) -> bool:
        return trace_id in self.ids

    def __bool__(self) -> bool:
        return bool(self.ids)


class SessionRecorder(SessionSink, SpanProcessor):
    """Persists one session as it runs. Register with ``tracing.add_processor`` and ``tracing.add_listener``.

    A :class:`SessionSink` (same constructor) whose SDK-facing methods read each span
    once into plain data. Spans and records of other sessions are passed over.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._traces = SessionTraces(self.session_id)
        # The session directory keeps content as sent (credentials scrubbed); --redacted-save
        # keeps no content, and no pattern-labelled secret in what remains.
        self._reader = SpanReader(redact_patterns=self.redact_contents)

    # ------------------------------------------------------------------ span processor
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        with self._lock:
            try:
                if self._closed or not self._traces.admit_start(span):
                    return
                data = self._reader.read(span)
            except Exception as exc:  # never into the run
                self._fail_store(exc)
                return
            self.start(self._scrub(data))

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            try:
                context = span.get_span_context()
                if self._closed or not self._traces.admits(context.trace_id):
                    return
                span_id = hex_span_id(context.span_id)
                # Records Telemetry handed over are copied as they are; values unchanged since the start are not redacted again.
                recorded = () if self.redact_contents else self.recorded(span_id)
                data = self._reader.read(span, recorded, self.started(span_id))
            except Exception as exc:
                self._fail_store(exc)
                return
            self.end(self._scrub(data))

    def shutdown(self) -> None:
        self.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    # ------------------------------------------------------------------ listener
    def on_record(self, span: trace.Span, record: Mapping[str, Any], ts_ns: int) -> None:
        context = span.get_span_context()
        if context.is_valid and not self._traces.admits(context.trace_id):
            return  # another session's span
        if context.is_valid:
            self.take_record(record, ts_ns, hex_trace_id(context.trace_id), hex_span_id(context.span_id))
        else:
            self.take_record(record, ts_ns, None, None)

    def on_log(self, span: trace.Span, level: str, message: str, ts_ns: int) -> None:
        """Log lines are span events: the journal gets them with their span's end."""

    # ------------------------------------------------------------------ raw SpanData (the recorder process)
    def take_start(self, raw: SpanData, credential_free: bool = False) -> None:
        """A span start as raw SpanData fields (values as the SDK held them): read, then written.

        ``credential_free``: no known credential is in the bytes it came in (``SpanReader.clean``).
        """
        with self._lock:
            try:
                data = self._reader.clean(raw, credential_free=credential_free)
            except Exception as exc:
                self._fail_store(exc)
                return
            self.start(self._scrub(data))

    def take_end(self, raw: SpanData, credential_free: bool = False) -> None:
        with self._lock:
            try:
                recorded = () if self.redact_contents else self.recorded(raw.span_id)
                data = self._reader.clean(raw, recorded, self.started(raw.span_id), credential_free)
            except Exception as exc:
                self._fail_store(exc)
                return
            self.end(self._scrub(data))

    def take_record(self, record: Mapping[str, Any], ts_ns: int, trace_id: str | None, span_id: str | None) -> None:
        """A record as Telemetry handed it over (credentials scrubbed)."""
        if self.redact_contents:
            record = redact_record_contents(redact(record))
        self.record(record, ts_ns, trace_id, span_id)

    def _scrub(self, span: SpanData) -> SpanData:
        # The reader scrubbed credentials (and redacted secrets with --redacted-save, which drops contents too).
        return redact_span_contents(span) if self.redact_contents else span
