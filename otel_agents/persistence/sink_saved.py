"""The session sink's resumed half: the saved session it continues, read once when it is built."""

from __future__ import annotations

from otel_agents.persistence.events_file import EventLine, EventsFileError, read_event_lines
from otel_agents.persistence.journal import JournalError, read_journal, spans_from_journal
from otel_agents.persistence.store import StoreError
from otel_agents.persistence.session_meta import checkpoint_is_current
from otel_agents.persistence.timestamps import parse_iso_ts
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData

_MESSAGE_ID = sc.EVENT_FIELD_PREFIX + "message_id"


class SavedRuns:
    """The earlier runs of a resumed :class:`~otel_agents.persistence.session_sink.SessionSink` (a mixin of it).

    Its state (``_base``, ``_open``, ``_trace_spans`` ...) is the sink's: this half only
    fills it from the session directory, so the new runs' ends and checkpoints see them.
    """

    _earliest_saved_ns: int | None = None  # the journal's first span start, when the journal was read

    def _load_saved(self, from_journal: bool) -> None:
        """The saved session this sink continues; unreadable => nothing more is written to it."""
        store = self.store
        try:
            meta = store.read_meta()
        except StoreError:
            meta = None  # a missing or damaged summary is rewritten at the first checkpoint
        try:
            if self.base_tree is None and not from_journal and checkpoint_is_current(store, meta):
                self._base_tree_due = True  # everything the journal holds is in the checkpoint: read neither now
                self._settle_from_meta(meta)
            elif store.journal_path.exists():
                lines = read_event_lines(store.events_path, self.warn) if store.events_path.exists() else []
                for span in spans_from_journal(read_journal(store.journal_path, self.warn), lines):
                    self._take_saved(span)
                    if self.message_spans is not None:  # records carried on spans, wherever they were stored
                        for event in span.events:
                            if event.attributes.get(_MESSAGE_ID) is not None:
                                self.message_spans.setdefault(event.attributes[_MESSAGE_ID], span.span_id)
                    # A journal without its meta.json (collect killed before settling it) dates the session.
                    if span.start_ns and (self._earliest_saved_ns is None or span.start_ns < self._earliest_saved_ns):
                        self._earliest_saved_ns = span.start_ns
                self._recorded_before(lines)
            elif store.tree_path.exists() and self.base_tree is None:
                self.base_tree = store.load_tree(self._tree_encoder)
            self._saved_bytes = sum(p.stat().st_size for p in (store.journal_path, store.events_path) if p.exists())
        except (JournalError, EventsFileError, StoreError, OSError) as exc:
            self._fail_store(exc)
            return
        self._base_billed = bool(meta and meta.get("billed"))
        if meta is not None:
            self._last_meta = meta
            # The saved creation time wins: a caller's (collect's earliest start of the batch that reopened
            # the session) only stands in for a meta.json without one, else `created` moves at each reopening.
            self.created_ns = self._created_ns_of(meta) or self.created_ns
        if (meta is None or self._created_ns_of(meta) is None) and self._earliest_saved_ns is not None:
            # No saved creation time: the session began no later than its first saved span (not when it was reopened).
            self.created_ns = min(self.created_ns or self._earliest_saved_ns, self._earliest_saved_ns)

    def _take_saved(self, span: SpanData) -> None:
        self.stats.base_spans += 1
        if span.end_ns is not None:
            self._base.append(span)
            self._ended_before.add(span.span_id)
            self._trace_spans.setdefault(span.trace_id, []).append(span)
            return
        # Open when saved: it may still end (import completes it).
        self._open[span.span_id] = span
        self._trace_open.setdefault(span.trace_id, set()).add(span.span_id)

    def _recorded_before(self, lines: list[EventLine]) -> None:
        """Records saved for spans that may still end (open ones, or not in the journal at all): their
        end lines must leave them out, as they would have if the records had come through :meth:`record`."""
        for line in lines:
            if self.message_spans is not None and line.span_id is not None:
                self.message_spans.setdefault(line.record.get("message_id"), line.span_id)
            if line.span_id is not None and line.span_id not in self._ended_before:
                ts_ns = parse_iso_ts(line.ts) if line.ts else 0
                self._recorded.setdefault(line.span_id, set()).add((line.record.get("message_id"), ts_ns))
