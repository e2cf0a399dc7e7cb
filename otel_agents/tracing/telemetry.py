"""The runtime's one handle on tracing: a tracer plus listeners for live events.

Span processors only see spans start and end; session records and log lines must
reach disk as they happen (crash safety), so they are added as span events *and*
handed to listeners at the same moment. Listeners receive exactly what the span
event holds, so artifacts rebuilt later from the spans match what was written live.

Only credentials are removed here (``redaction.scrub``: environment credentials and
secret keys' values); content is kept as the model was sent it, and every copy that
leaves the session directory is redacted on its way out (``redaction.redact``).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Protocol, runtime_checkable

from opentelemetry import trace

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import storable, storable_text, to_span_attributes
from otel_agents.tracing.redaction import scrub, scrub_attributes


@runtime_checkable
class EventListener(Protocol):
    def on_record(self, span: trace.Span, record: Mapping[str, Any], ts_ns: int) -> None: ...

    def on_log(self, span: trace.Span, level: str, message: str, ts_ns: int) -> None: ...


class RecordingLost(RuntimeError):
    """A session's recording can no longer save or bill: no further model call of it is made."""


@dataclass
class Telemetry:
    tracer: trace.Tracer
    listeners: list[EventListener] = field(default_factory=list)
    # Session id -> why its recording stopped: money spent from here on would be on no ledger.
    halted: dict[str, str] = field(default_factory=dict)

    def halt(self, session_id: str, reason: str) -> None:
        """Ask that no further model call of ``session_id`` be made (``RecordingLost`` instead)."""
        self.halted.setdefault(session_id, reason)

    def record(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Add a seed-001 record to the current span and to every listener; returns it as they got it."""
        safe = storable(scrub(dict(record)))  # what a file can hold: held, sent and saved alike
        span = trace.get_current_span()
        ts = time.time_ns()
        span.add_event(sc.record_event_name(safe["event_type"]), to_span_attributes(safe), timestamp=ts)
        for listener in self.listeners:
            listener.on_record(span, safe, ts)
        return safe

    def log(self, level: str, message: str, span: trace.Span | None = None, **attributes: Any) -> None:
        """A seed-002 log line (VRB/WRN/ERR/TRC/THK/FIN) on the operation it concerns."""
        span = span or trace.get_current_span()
        message = storable_text(scrub(message))
        ts = time.time_ns()
        attrs = {sc.LOG_LEVEL: level, sc.LOG_MESSAGE: message}
        attrs.update(scrub(attributes))
        span.add_event(sc.EVENT_LOG, attrs, timestamp=ts)
        for listener in self.listeners:
            listener.on_log(span, level, message, ts)

    def request_sent(self, span: trace.Span, messages: list[dict[str, Any]]) -> None:
        """The messages an LLM attempt sends, for listeners that show them (``on_request``).

        Not recorded: the chat span refers to the transcript prefix instead. The console
        shows each request as sent, after a resume too, when it has seen none of the records.
        """
        for listener in self.listeners:
            on_request = getattr(listener, "on_request", None)
            if on_request is not None:
                on_request(span, messages)

    @staticmethod
    def set_attributes(span: trace.Span, attributes: Mapping[str, Any]) -> None:
        """Set attributes with credentials scrubbed and None values dropped."""
        span.set_attributes(scrub_attributes({k: v for k, v in attributes.items() if v is not None}))


@contextmanager
def marks_cancellation(span: trace.Span) -> Iterator[None]:
    """Mark the span ``otel_agents.cancelled`` when an interruption passes through it.

    Ctrl-C, task cancellation and a ``sys.exit()`` are not errors of the operation: the tree
    shows such spans as cancelled rather than failed. So is any other BaseException that is no
    Exception (a tool's own), which stops the run as they do.
    """
    try:
        yield
    except Exception:
        raise
    except BaseException:
        span.set_attribute(sc.CANCELLED, True)
        raise


@contextmanager
def marks_error_type(span: trace.Span) -> Iterator[None]:
    """``error.type`` (the exception's class) on a span an error ends, as the registry requires;
    an interruption is not an error of the operation."""
    try:
        yield
    except Exception as exc:
        span.set_attribute(sc.ERROR_TYPE, type(exc).__name__)
        raise


def noop_telemetry() -> Telemetry:
    return Telemetry(trace.NoOpTracer())
