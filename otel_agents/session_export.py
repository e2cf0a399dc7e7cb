"""``otel-agents export``: a saved session's span journal sent again to an OTLP endpoint.

Reading only: the journal (``spans.jsonl``) and the event stream are read by the same
pure readers the read-only loader uses, nothing is opened for writing, and no lock is
taken, so a session another process is writing can be exported too (its spans that have
not ended yet are left out: that process sends them when they end). Spans a dead writer
left open go as interrupted, ended at the session's last sign of life, as every reader
shows them. The sending itself is ``tracing/resend.py``: the live export's filter and exporter.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_agents.persistence.events_file import EventsFileError, read_event_lines
from otel_agents.persistence.interrupted import close_interrupted
from otel_agents.persistence.journal import JournalError, read_journal, rebuild
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.ownership import owner_of
from otel_agents.persistence.store import SessionStore
from otel_agents.tracing.resend import ResendReport, ResendTarget, resend
from otel_agents.tracing.spandata import SpanData


class SessionNotExportable(ValueError):
    """The session has no readable span journal (one line)."""


@dataclass(frozen=True)
class SessionExport:
    session_id: str
    report: ResendReport
    still_open: int  # spans of a live writer's run that have not ended: not sent

    def summary(self) -> dict[str, Any]:
        return {
            "session": self.session_id,
            "endpoint": self.report.endpoint,
            "spans": self.report.spans,
            "delivered": self.report.delivered,
            "not_delivered": self.report.spans - self.report.delivered,
            "still_open": self.still_open,
            "failure": self.report.failure,
        }


def saved_spans(session_dir: Path, warn: Warn = stderr_warning) -> tuple[list[SpanData], int]:
    """(the session's ended spans, in journal order; how many are still open in a live run)."""
    store = SessionStore(Path(session_dir))
    if not store.journal_path.is_file():
        raise SessionNotExportable(f"session {store.session_id} has no span journal ({store.journal_path})")
    try:
        lines = read_event_lines(store.events_path, warn) if store.events_path.exists() else []
        rebuilt = rebuild(read_journal(store.journal_path, warn), lines)
    except (JournalError, EventsFileError, OSError) as exc:
        raise SessionNotExportable(f"session {store.session_id} cannot be exported: {exc}") from None
    spans, _ = close_interrupted(rebuilt.spans, live=owner_of(store.directory) is not None)
    ended = [span for span in spans if span.end_ns is not None]
    return ended, len(spans) - len(ended)


def export_session(session_dir: Path, target: ResendTarget, warn: Warn = stderr_warning) -> SessionExport:
    """Sends every ended span of the saved session to ``target``; the report counts what arrived."""
    spans, still_open = saved_spans(session_dir, warn)
    return SessionExport(Path(session_dir).name, resend(spans, target), still_open)
