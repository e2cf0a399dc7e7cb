"""The cost of this project's instrumentation, per turn, against bare OpenTelemetry spans.

A real scripted session is run once with a capturing processor and listener,
which note every instrumentation call in order: span starts (with the
attributes they started with), seed-001 records and log lines (with the span
they were emitted on), and span ends (attributes set since the start, other
span events, status). That list is then replayed without the runtime or
litellm:

- instrumented: the CLI's own set-up (``configure_tracing``, ``start_recording``,
  ``attach_console``) receives the same calls through the real ``Telemetry``:
  spans with their attributes, record and log events, the recorder's
  events.jsonl, spans.jsonl, live tree, checkpoints and ledger, the console's
  path labels;
- bare: a plain ``TracerProvider`` with a ``SimpleSpanProcessor`` and an
  exporter that does nothing gets the same number of spans, same names and
  nesting, with no attributes and no events: the floor any OpenTelemetry
  instrumentation pays;
- sdk_same_data (for reference): the same spans *with* every attribute and
  event, on the same bare provider: what the SDK alone costs for this data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Link, Status, StatusCode

from otel_agents.tracing import semconv as sc

# One instrumentation call: (kind, span number, payload, time in ns)
Action = tuple[str, int, Any, int]


@dataclass
class Capture(SpanProcessor):
    """A span processor and Telemetry listener that notes every instrumentation call in order."""

    actions: list[Action] = field(default_factory=list)
    numbers: dict[int, int] = field(default_factory=dict)  # SDK span id -> span number
    started: dict[int, dict[str, Any]] = field(default_factory=dict)  # span number -> attributes at start
    session_id: str | None = None
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str | None = None

    def _number(self, span: Any) -> int | None:
        ctx = span.get_span_context()
        return self.numbers.get(ctx.span_id) if ctx.is_valid else None

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        number = len(self.numbers)
        self.numbers[span.context.span_id] = number
        parent = self.numbers.get(span.parent.span_id) if span.parent is not None else None
        links = [self.numbers[link.context.span_id] for link in span.links if link.context.span_id in self.numbers]
        attributes = dict(span.attributes or {})
        self.started[number] = attributes
        if parent is None and self.session_id is None:
            self.session_id = attributes.get(sc.SESSION_ID)
            self.resource = dict(span.resource.attributes) if span.resource else {}
            self.scope = span.instrumentation_scope.name if span.instrumentation_scope else None
        self.actions.append(("start", number, (span.name, span.kind, parent, attributes, links), span.start_time or 0))

    def on_end(self, span: ReadableSpan) -> None:
        number = self.numbers[span.context.span_id]
        start = self.started.pop(number)
        changed = {k: v for k, v in (span.attributes or {}).items() if start.get(k) != v}
        others = [
            (e.name, dict(e.attributes or {}), e.timestamp)
            for e in span.events
            if e.name not in sc.SESSION_EVENT_NAMES and e.name != sc.EVENT_LOG
        ]
        status = (span.status.status_code, span.status.description)
        self.actions.append(("end", number, (changed, others, status), span.end_time or 0))

    def on_record(self, span: Any, record: Any, ts_ns: int) -> None:
        self.actions.append(("record", self._number(span), dict(record), ts_ns))

    def on_log(self, span: Any, level: str, message: str, ts_ns: int) -> None:
        self.actions.append(("log", self._number(span), (level, message), ts_ns))

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def capture_session(script_path: Path, prompts: tuple[str, ...], home: Path) -> Capture:
    """Run the session once, traced and recorded, noting every instrumentation call."""
    from bench_session import run_session

    capture = Capture()

    def attach(tracing) -> None:
        tracing.add_processor(capture)
        tracing.add_listener(capture)

    run_session(script_path, prompts, home, traced=True, before_run=attach)
    return capture


class NoopExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def _parent_context(spans: dict[int, trace.Span], parent: int | None):
    # Every root starts a trace of its own, as Session.run does.
    return trace.set_span_in_context(spans[parent] if parent is not None else trace.INVALID_SPAN)


def replay_instrumented(capture: Capture, home: Path, *, recorded: bool = True) -> float:
    """Seconds to replay every call through the CLI's tracing, recorder and console set-up.

    ``recorded=False``: the same without the recorder (nothing saved): what the spans,
    records and console cost before any persistence.
    """
    from otel_agents.cli.execution import attach_console, start_recording
    from otel_agents.persistence.paths import Paths
    from otel_agents.session_recording import configure

    paths = Paths(Path(home) / "sessions", Path(home) / "billing.jsonl")
    started = time.perf_counter()
    tracing = configure(None)
    recorder = start_recording(tracing, paths, capture.session_id) if recorded else None
    attach_console(tracing, False, False, False)
    telemetry = tracing.telemetry
    tracer = telemetry.tracer
    spans: dict[int, trace.Span] = {}
    contexts: dict[int, trace.SpanContext] = {}  # kept after the end: later runs link to earlier ones
    for kind, number, payload, _ in capture.actions:
        if kind == "start":
            name, span_kind, parent, attributes, links = payload
            span = spans[number] = tracer.start_span(
                name, context=_parent_context(spans, parent), kind=span_kind, attributes=attributes,
                links=[Link(contexts[n]) for n in links],
            )
            contexts[number] = span.get_span_context()
        elif kind == "record":
            token = otel_context.attach(trace.set_span_in_context(spans[number]))
            try:
                telemetry.record(payload)
            finally:
                otel_context.detach(token)
        elif kind == "log":
            level, message = payload
            telemetry.log(level, message, span=spans[number])
        else:
            changed, others, (code, description) = payload
            span = spans.pop(number)
            if changed:
                span.set_attributes(changed)
            for event_name, event_attributes, _ in others:
                span.add_event(event_name, event_attributes)
            if code != StatusCode.UNSET:
                span.set_status(Status(code, description))
            span.end()
    if recorder is not None:
        recorder.close()
    tracing.shutdown()
    return time.perf_counter() - started


def _bare_provider() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(NoopExporter()))
    return provider


def replay_bare(capture: Capture, *, same_data: bool = False) -> float:
    """Seconds to create the same spans (names, kinds, nesting) on a provider with a no-op exporter.

    ``same_data``: with every attribute and event too (the SDK's cost for this data).
    """
    started = time.perf_counter()
    provider = _bare_provider()
    tracer = provider.get_tracer("bench")
    spans: dict[int, trace.Span] = {}
    for kind, number, payload, _ in capture.actions:
        if kind == "start":
            name, span_kind, parent, attributes, _ = payload
            spans[number] = tracer.start_span(
                name, context=_parent_context(spans, parent), kind=span_kind,
                attributes=attributes if same_data else None,
            )
        elif kind == "end":
            span = spans.pop(number)
            if same_data:
                changed, others, _ = payload
                span.set_attributes(changed)
                for event_name, event_attributes, _ in others:
                    span.add_event(event_name, event_attributes)
            span.end()
        elif same_data and kind == "record":
            from otel_agents.tracing.records import to_span_attributes

            spans[number].add_event(sc.record_event_name(payload["event_type"]), to_span_attributes(payload))
        elif same_data and kind == "log":
            level, message = payload
            spans[number].add_event(sc.EVENT_LOG, {sc.LOG_LEVEL: level, sc.LOG_MESSAGE: message})
    provider.shutdown()
    return time.perf_counter() - started


def turns_of(capture: Capture) -> int:
    return sum(1 for kind, _, payload, _ in capture.actions if kind == "start" and payload[0] == sc.OP_TURN)


def spans_of(capture: Capture) -> int:
    return sum(1 for kind, _, _, _ in capture.actions if kind == "start")
