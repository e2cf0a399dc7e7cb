"""The sessions an intake writes: each one's sink and lock, fed released spans, closed when idle, billed once whole.

A session is opened (its directory owned, ownership.py) when spans are first fed to it, and
closed (final checkpoint, lock given up) by :meth:`OpenSessions.close_oldest`: when it has been
fed nothing for ``hold_s``, when more than ``max_open`` are open, or when the intake closes.
Its ledger records are appended when it closes with every trace whole (intake_order.py), or
at a flush; one closed with a trace not whole is marked ``awaiting_trace`` in meta.json.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from otel_agents.persistence.intake_order import ready_to_bill, in_message_order, sort_events_file
from otel_agents.persistence.intake_state import IntakeState, fsync_path
from otel_agents.persistence.ledger import LedgerAppender, LedgerError
from otel_agents.persistence.ledger_read import not_a_ledger
from otel_agents.persistence.ledger_records import ledger_records
from otel_agents.persistence.notices import Warn
from otel_agents.persistence.ownership import Ownership, SessionBusy, take
from otel_agents.persistence.paths import InvalidSessionId, Paths
from otel_agents.persistence.private import open_private_append
from otel_agents.persistence.repair import mark_awaiting_trace, mark_billed
from otel_agents.persistence.session_sink import SessionSink
from otel_agents.persistence.span_placement import in_journal_form, record_lines
from otel_agents.persistence.store import NotALedger, SessionStore, StoreError
from otel_agents.persistence.timestamps import parse_iso_ts
from otel_agents.persistence.tree_file import TREE_FILE
from otel_agents.tracing.spandata import SpanData


@dataclass
class IntakeResult:
    """What one :meth:`SpanIntake.take` (or :meth:`SpanIntake.flush`) did."""

    written: int = 0  # spans handed to a session's sink (durable once the call returns)
    held: int = 0  # spans waiting for their trace's root (or, ``named_only``, its session's name)
    ignored: int = 0  # spans of traces with no GenAI span
    rejected: list[tuple[SpanData, str]] = field(default_factory=list)  # (span, one-line reason)
    sessions: set[str] = field(default_factory=set)  # sessions written to

    def add(self, other: "IntakeResult") -> None:
        self.written += other.written
        self.ignored += other.ignored
        self.rejected += other.rejected
        self.sessions |= other.sessions


class _Open:
    """One session being written: its sink and the lock that makes this process its writer."""

    def __init__(self, sink: SessionSink, ownership: Ownership):
        self.sink = sink
        self.ownership = ownership
        self.diverged: dict[str, str] = {}  # trace id -> why its spans are refused (_refuse_diverged)
        self.last_ns = time.monotonic_ns()  # when spans were last fed to it
        self.unbilled = False  # spans came since its ledger records were last appended


class OpenSessions:
    """The sessions one intake has open, least recently fed first; thread-unsafe (the intake's callers lock)."""

    def __init__(self, paths: Paths, *, warn: Warn, hold_s: float, max_open: int, checkpoint_each_batch: bool,
                 writer: dict[str, Any] | None, from_wire: bool, state: IntakeState | None):
        self.paths = paths
        self.warn = warn
        self.hold_s = hold_s
        self.max_open = max_open
        self.checkpoint_each_batch = checkpoint_each_batch
        self.writer = writer  # how meta.json names the writing process
        self.from_wire = from_wire  # spans decoded from OTLP: JSON values already, as the journal gives them back
        self._state = state
        self._unsynced: set[Path] = set()  # session directories written since the last sync()
        self._open: OrderedDict[str, _Open] = OrderedDict()
        reason = not_a_ledger(paths.billing_file)  # a long-lived intake never appends to another file
        if reason is not None:
            raise NotALedger(reason)
        self._ledger = LedgerAppender(paths.billing_file)

    def __len__(self) -> int:
        return len(self._open)

    def bill_unbilled(self) -> None:
        """Every open session fed since it was last billed is billed now, whole or not (a flush)."""
        for session_id, session in list(self._open.items()):
            if session.unbilled:
                if not self.checkpoint_each_batch:
                    session.sink.checkpoint()
                self._bill(session_id, session)

    def sync(self) -> None:
        """fsync the journals written since the last call (flushed per line: the kernel has them)."""
        for directory in sorted(self._unsynced):
            for name in ("spans.jsonl", "events.jsonl"):
                fsync_path(directory / name)
        self._unsynced.clear()

    def reopen(self, session_id: str) -> None:
        """After a crash: a session written but not settled, opened to be settled (and billed) when it closes."""
        self._session(session_id, 0).unbilled = True

    def feed(self, session_id: str, spans: Sequence[SpanData], result: IntakeResult) -> bool:
        """Hand the spans to the session's sink; False when it could not take them (busy, say)."""
        stored: list[SpanData] = list(spans) if self.from_wire else []
        for span in [] if self.from_wire else spans:
            try:
                stored.append(in_journal_form(span))
            except (ValueError, OverflowError, TypeError) as exc:
                result.rejected.append((span, f"span {span.span_id}: cannot be stored: {exc}"))
        if not stored:
            return True
        try:
            session = self._session(session_id, min(s.start_ns for s in stored))
        except (SessionBusy, InvalidSessionId, StoreError, OSError) as exc:
            reason = f"session {session_id}: {exc}"
            result.rejected += [(span, reason) for span in stored]
            return False
        sink = session.sink
        fresh = [s for s in stored if not sink.has_ended(s.span_id)]
        records = {span.span_id: record_lines(span) for span in fresh}  # read once: checked, then written
        fresh = self._refuse_diverged(session_id, session, fresh, records, result)
        # Records first, in message order, each once (a crash may have left a span's records without its end).
        lines = [line for span in fresh for line in records[span.span_id]
                 if line.record.get("message_id") not in {m for m, _ in sink.recorded(span.span_id)}]
        for line in in_message_order(lines):
            sink.record(line.record, parse_iso_ts(line.ts) if line.ts else 0, line.trace_id, line.span_id)
        for span in sorted(fresh, key=lambda s: (s.start_ns, s.span_id)):
            sink.start(span)
            if span.end_ns is not None:
                sink.end(span)
        if not sink.saved_everything:  # the sink said why, once; not acknowledged as written
            result.rejected += [(span, f"session {session_id}: cannot be written") for span in fresh]
            self._open.pop(session_id, None)
            self._close(session_id, session, bill=False)
            return False
        if fresh:
            self._unsynced.add(sink.store.directory)
            session.last_ns = time.monotonic_ns()
            result.written += len(fresh)
            result.sessions.add(session_id)
        return True

    def _refuse_diverged(self, session_id: str, session: _Open, spans: list[SpanData],
                         records: dict[str, list[Any]], result: IntakeResult) -> list[SpanData]:
        """The spans whose trace holds no record the session has stored on another span; the others rejected.

        A message id names one record of a session. Found on a new span, it is another copy of the
        session carried on from the same point (resumed here and on the sending machine): its
        trace is refused whole, now and in later batches, so the saved session stays one history.
        """
        known = session.sink.message_spans or {}
        for span in spans:
            if span.trace_id in session.diverged:
                continue
            for line in records[span.span_id]:
                owner = known.get(line.record.get("message_id"))
                if owner is not None and owner != span.span_id:
                    reason = (f"session {session_id}: trace {span.trace_id} diverges from the saved session: "
                              f"record {line.record.get('message_id')} is saved on span {owner}, not {span.span_id} "
                              "(a copy of the session was carried on elsewhere)")
                    session.diverged[span.trace_id] = reason
                    self.warn(reason)
                    break
        if not session.diverged:
            return spans
        result.rejected += [(span, session.diverged[span.trace_id]) for span in spans if span.trace_id in session.diverged]
        return [span for span in spans if span.trace_id not in session.diverged]

    def _session(self, session_id: str, created_ns: int) -> _Open:
        session = self._open.get(session_id)
        if session is not None:
            self._open.move_to_end(session_id)
            return session
        directory = self.paths.session_dir(session_id)  # InvalidSessionId: not a usable name
        existed = (directory / "spans.jsonl").exists()
        if not existed and any((directory / name).exists() for name in ("events.jsonl", TREE_FILE)):
            # As import refuses it: a session saved without a journal cannot be merged with.
            raise StoreError("exists without spans.jsonl (saved by an older otel-agents), so it is left as it is")
        ownership = take(directory, create=True)
        try:
            store = SessionStore.create(self.paths.sessions_dir, session_id)
            open_private_append(store.events_path).close()  # part of a session even with no record (as import)
            if self._state is not None:
                self._state.opened(session_id)
        except BaseException:
            ownership.release()
            raise
        sink = SessionSink(store, session_id, resume=existed, from_journal=True, live=False,
                           created_ns=created_ns or None, warn=self.warn)
        sink.writer = self.writer
        session = self._open[session_id] = _Open(sink, ownership)
        while len(self._open) > self.max_open:
            self.close_oldest()
        return session

    def settle(self, result: IntakeResult) -> None:
        """The touched sessions' tree and meta.json, at once (or, batches not checkpointed, when they close)."""
        for session_id in sorted(result.sessions):
            session = self._open.get(session_id)
            if session is not None:
                if self.checkpoint_each_batch:
                    session.sink.checkpoint()  # a failure: the sink says why, once
                session.unbilled = True

    def _bill(self, session_id: str, session: _Open, tree: dict[str, Any] | None = None) -> None:
        """The session's ledger records from its tree as it is now (as import ends), ids deduped; not per batch:
        a record's path label counts its earlier siblings (maybe in a later batch), and is never rewritten."""
        session.unbilled = False
        sink = session.sink
        if not sink.saved_everything:
            return  # the sink said why; a session not wholly saved is not billed from a partial tree
        records = ledger_records(tree or sink.tree())  # the tree its last checkpoint wrote
        try:
            if records:
                self._ledger.append(records)
            mark_billed(sink.store.directory, sink.store.read_meta())
        except (LedgerError, StoreError, OSError) as exc:
            self.warn(f"cannot bill session {session_id} in {self.paths.billing_file}: {exc}")

    def close_idle(self, now: int) -> None:
        """Sessions fed nothing for ``hold_s`` are closed, so their locks do not outlive their traces."""
        closed = False
        while self._open:
            session = next(iter(self._open.values()))
            if now - session.last_ns < self.hold_s * 1e9:
                break  # least recently used first: the rest are newer
            self.close_oldest()
            closed = True
        if closed and self._state is not None:
            self._state.rewrite_unsettled(self._open)

    def close_oldest(self, bill_anyway: bool = False) -> None:
        session_id, session = self._open.popitem(last=False)
        whole = ready_to_bill(session.sink.spans())
        self._close(session_id, session, bill=session.unbilled and (whole or bill_anyway),
                    awaiting=session.unbilled and not (whole or bill_anyway))

    def _close(self, session_id: str, session: _Open, bill: bool, awaiting: bool = False) -> None:
        """Final checkpoint (events.jsonl in message order first), ledger records if ``bill``, lock given up;
        ``awaiting``: left unbilled until the rest of a trace comes, which meta.json says (as import does)."""
        sink = session.sink
        try:
            resorted = sink.saved_everything and sort_events_file(sink.store.events_path)
            # The final checkpoint (its mark names the sorted file); close() then has nothing left to write.
            tree = sink.checkpoint() if resorted or not self.checkpoint_each_batch else None
            sink.close()
            if bill:
                self._bill(session_id, session, tree)
            elif awaiting and sink.saved_everything:
                mark_awaiting_trace(sink.store)
        finally:
            session.ownership.release()

