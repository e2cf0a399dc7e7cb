"""Where a span of a trace file goes and how a session stores it: its session's id, its records, its journal form.

Shared by ``import`` (import_sessions.py) and the span intake of the exporter and ``collect``
(span_intake.py, intake_sessions.py), so the same spans land in the same session, stored alike.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable

from otel_agents.persistence.events_file import EventLine
from otel_agents.persistence.journal import context_line, decode, encode, is_record_event, rebuild, span_lines
from otel_agents.persistence.paths import InvalidSessionId, Paths
from otel_agents.persistence.timestamps import iso_ts
from otel_agents.persistence.tree import group_by_session
from otel_agents.tracing.records import from_span_event
from otel_agents.tracing.spandata import SpanData


def session_id_for(conversation_id: str | None, trace_id: str) -> str:
    """The session a trace goes to: its conversation id when usable as a directory name."""
    if conversation_id is None:
        # 64-bit ids (Jaeger, Zipkin) are left-padded with zeros: name those by their low half.
        return f"trace-{trace_id[:16] if int(trace_id[:16], 16) else trace_id[16:]}"
    if _usable_as_directory(conversation_id):
        return conversation_id
    return "conv-" + hashlib.blake2b(conversation_id.encode(), digest_size=8).hexdigest()


def _usable_as_directory(session_id: str) -> bool:
    try:
        Paths(Path("sessions"), Path("billing.jsonl")).session_dir(session_id)  # validates only
    except InvalidSessionId:
        return False
    return True


def sessions_of_traces(spans: Iterable[SpanData]) -> dict[str, str]:
    """The session id of each trace id (group_by_session decides it from the trace's spans)."""
    session_of_trace: dict[str, str] = {}
    for conversation_id, grouped in group_by_session(spans).items():
        for span in grouped:
            if span.trace_id not in session_of_trace:  # once per trace, not per span
                session_of_trace[span.trace_id] = session_id_for(conversation_id, span.trace_id)
    return session_of_trace


def record_lines(span: SpanData) -> list[EventLine]:
    """The seed-001 records a span carries as events, as events.jsonl lines (the span intake feeds them too)."""
    out = []
    for event in span.events:
        if not is_record_event(event):
            continue
        record = from_span_event(event.name, event.attributes)
        out.append(EventLine(record, iso_ts(event.time_ns), span.trace_id, span.span_id))
    return out


def in_journal_form(span: SpanData) -> SpanData:
    """The span exactly as the journal and events.jsonl give it back (JSON-safe values, records re-attached).

    ValueError when the journal could not hold it (e.g. a time beyond 64 bits).
    """
    lines = [decode(encode(line)) for line in (context_line(span.resource, span.scope), *span_lines(span))]
    return rebuild(lines, record_lines(span)).spans[0]
