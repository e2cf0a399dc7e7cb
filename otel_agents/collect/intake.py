"""SpanData batches in, session directories and the ledger out: one SessionSink per session.

The receiver's writer, separate from HTTP and gRPC. :meth:`Intake.accept` takes any spans
in any order, any number of times: a span id already ended in its session changes nothing,
a record (message id) already in events.jsonl is not written again, a parent may come
after its children. A trace's session is named by any of its spans (``turn`` spans carry
none); spans of a trace not yet named wait in ``.collect/pending.jsonl`` (durable like the
journals) and are written when a span naming the session comes; spans never named are
other software's and are counted as ignored. :meth:`sync` makes what was accepted durable
(fsync of the touched journals, events files and the pending file); :meth:`settle` writes
the tree, meta.json and the ledger records of sessions that had no span for a while.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from otel_agents.persistence.repair import mark_billed
from otel_agents.persistence.events_file import read_event_lines
from otel_agents.persistence.journal import is_record_event, read_journal
from otel_agents.persistence.ledger import LedgerAppender
from otel_agents.persistence.ledger_records import ledger_records
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.paths import InvalidSessionId, Paths
from otel_agents.persistence.private import make_private_dir, open_private_append
from otel_agents.persistence.session_sink import SessionSink
from otel_agents.persistence.store import SessionStore, StoreError
from otel_agents.persistence.tree_span_fields import session_id_of
from otel_agents.tracing.otlp_decode import decode_otlp_json
from otel_agents.tracing.otlp_json import encode_resource_spans
from otel_agents.tracing.records import from_span_event, message_id_number
from otel_agents.tracing.spandata import SpanData

PENDING = Path(".collect") / "pending.jsonl"
TOUCHED = Path(".collect") / "unsettled.jsonl"


@dataclass
class Accepted:
    """What one :meth:`Intake.accept` did: spans written per session, held, ignored, rejected."""

    counts: dict[str, int] = field(default_factory=dict)
    held: int = 0  # of traces not named yet (pending)
    rejected: int = 0
    message: str = ""


class _Open:
    """One session being written: its sink, what it holds already, when it last changed."""

    def __init__(self, sink: SessionSink, ended: set[str], message_ids: set[str]):
        self.sink = sink
        self.ended = ended
        self.message_ids = message_ids
        self.changed_at = time.monotonic()


class Intake:
    def __init__(self, paths: Paths, warn: Warn = stderr_warning):
        self.paths = paths
        self.warn = warn
        self._sessions: dict[str, _Open] = {}
        self._session_of_trace: dict[str, str] = {}
        self._pending: dict[str, list[SpanData]] = {}
        self._dirty: set[Path] = set()
        self._ledger = LedgerAppender(paths.billing_file)
        make_private_dir(paths.sessions_dir)
        make_private_dir(paths.sessions_dir / ".collect")
        self._recover()

    # ------------------------------------------------------------------ input
    def accept(self, spans: list[SpanData]) -> Accepted:
        out = Accepted()
        for span in spans:
            sid = session_id_of(span)
            if sid and span.trace_id not in self._session_of_trace:
                self._session_of_trace[span.trace_id] = sid
        by_session: dict[str, list[SpanData]] = {}
        new_pending: list[SpanData] = []
        for span in spans:
            sid = self._session_of_trace.get(span.trace_id)
            if sid is None:
                self._pending.setdefault(span.trace_id, []).append(span)
                new_pending.append(span)
                continue
            by_session.setdefault(sid, []).append(span)
            by_session[sid] += self._pending.pop(span.trace_id, [])
        if new_pending:
            self._spool(new_pending)
        out.held = len(new_pending)
        for sid, group in by_session.items():
            try:
                out.counts[sid] = self._write(sid, group)
            except (InvalidSessionId, StoreError) as exc:
                out.rejected += len(group)
                out.message = out.message or f"session {sid!r}: {exc}"
        return out

    def _write(self, session_id: str, spans: list[SpanData]) -> int:
        state = self._open(session_id)
        fresh: dict[str, SpanData] = {}
        for span in spans:
            if span.span_id not in state.ended and span.end_ns is not None:
                fresh.setdefault(span.span_id, span)
        # Records first, in message order, so events.jsonl reads as the run wrote it; then the spans.
        records = []
        for span in fresh.values():
            for event in span.events:
                if is_record_event(event):
                    record = from_span_event(event.name, event.attributes)
                    if record["message_id"] not in state.message_ids:
                        records.append((message_id_number(record["message_id"]), record, event.time_ns, span))
        records.sort(key=lambda r: r[0])
        for _, record, ts_ns, span in records:
            state.sink.record(record, ts_ns, span.trace_id, span.span_id)
            state.message_ids.add(record["message_id"])
        for span in sorted(fresh.values(), key=lambda s: (s.start_ns, s.span_id)):
            state.sink.start(span)
            state.sink.end(span)
            state.ended.add(span.span_id)
        if not state.sink.saved_everything:
            raise StoreError(f"cannot write {state.sink.store.directory}")
        if fresh:
            state.changed_at = time.monotonic()
            self._dirty.update((state.sink.store.journal_path, state.sink.store.events_path))
        return len(fresh)

    def _open(self, session_id: str) -> _Open:
        state = self._sessions.get(session_id)
        if state is not None:
            return state
        directory = self.paths.session_dir(session_id)  # InvalidSessionId for a name no directory can have
        existed = directory.is_dir()
        store = SessionStore.create(self.paths.sessions_dir, session_id)
        ended: set[str] = set()
        message_ids: set[str] = set()
        if existed and store.journal_path.exists():
            ended = {line["end"] for line in read_journal(store.journal_path, self.warn) if "end" in line}
        if existed and store.events_path.exists():
            message_ids = {line.record.get("message_id") for line in read_event_lines(store.events_path, self.warn)}
        sink = SessionSink(store, session_id, billing_file=self.paths.billing_file, resume=existed,
                           from_journal=True, live=False, warn=self.warn)
        sink.writer = {"command": "collect", "pid": os.getpid()}
        self._append_line(self.paths.sessions_dir / TOUCHED, {"session": session_id})
        state = self._sessions[session_id] = _Open(sink, ended, message_ids)
        return state

    # ------------------------------------------------------------------ durability
    def sync(self) -> None:
        """fsync every file written since the last call (flushed per line already: the kernel has them)."""
        for path in self._dirty:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._dirty.clear()

    def _spool(self, spans: list[SpanData]) -> None:
        self._append_line(self.paths.sessions_dir / PENDING, encode_resource_spans(spans))

    def _append_line(self, path: Path, value: Any) -> None:
        with open_private_append(path) as handle:
            handle.write(orjson.dumps(value) + b"\n")
        self._dirty.add(path)

    # ------------------------------------------------------------------ derived files
    def settle(self, idle_s: float = 0.0) -> list[str]:
        """Tree, meta.json and ledger records of the sessions without a new span for ``idle_s``."""
        now = time.monotonic()
        done = []
        for session_id, state in list(self._sessions.items()):
            if now - state.changed_at >= idle_s:
                self._settle(state)
                # Closed while idle (memory stays bounded); the next span of it opens it again.
                del self._sessions[session_id]
                done.append(session_id)
        return done

    def _settle(self, state: _Open) -> None:
        sink = state.sink
        tree = sink.checkpoint()
        whole = _every_trace_whole(sink.spans())
        sink.close()
        if tree is None:
            return
        _sort_events(sink.store.events_path)
        if not whole:
            return  # billed once whole: a record's path and run number depend on every span of the session
        self._ledger.append(ledger_records(tree))  # ids dedupe: runs billed before are not billed again
        try:
            mark_billed(sink.store.directory, sink.store.read_meta())
        except StoreError:
            pass

    def pending_spans(self) -> int:
        return sum(len(v) for v in self._pending.values())

    def close(self) -> None:
        self.settle(0.0)
        self.sync()
        # Everything is settled: nothing to redo at the next start; pending spans stay spooled.
        self._rewrite(self.paths.sessions_dir / TOUCHED, [])

    # ------------------------------------------------------------------ restart
    def _recover(self) -> None:
        """After a crash: settle the sessions written but not settled, reload the spans still waiting."""
        touched = self.paths.sessions_dir / TOUCHED
        names = {line["session"] for line in _lines(touched)}
        pending = self.paths.sessions_dir / PENDING
        waiting = [span for doc in _lines(pending) for span in decode_otlp_json(doc, str(pending))]
        for session_id in sorted(names):
            try:
                if self.paths.session_dir(session_id).is_dir():
                    self._open(session_id)
            except (InvalidSessionId, StoreError):
                continue
        self._rewrite(pending, [])
        if waiting:
            self.accept(waiting)
        self.settle(0.0)
        self.sync()


    def _rewrite(self, path: Path, values: list[Any]) -> None:
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as handle:
            handle.write(b"".join(orjson.dumps(v) + b"\n" for v in values))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        self._dirty.discard(path)


def _every_trace_whole(spans: list[SpanData]) -> bool:
    """Each trace has its root ended and every parent present (nothing known to be missing)."""
    ids = {span.span_id for span in spans}
    roots: dict[str, bool] = {}
    for span in spans:
        if span.parent_span_id is None:
            roots[span.trace_id] = roots.get(span.trace_id, False) or span.end_ns is not None
        elif span.parent_span_id not in ids:
            return False
    return all(roots.get(span.trace_id) for span in spans)


def _sort_events(path: Path) -> None:
    """events.jsonl in message order, as the run wrote it: requests may bring a session's records in
    any order (each request's are written sorted). Replaced atomically, only when out of order."""
    try:
        raw_lines = [line for line in path.read_bytes().split(b"\n") if line]
    except FileNotFoundError:
        return
    keyed = []
    for raw in raw_lines:
        try:
            keyed.append((message_id_number(orjson.loads(raw)["message_id"]), raw))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError):
            return  # not ours to reorder: leave it as it is
    if all(a[0] < b[0] for a, b in zip(keyed, keyed[1:])):
        return
    keyed.sort(key=lambda item: item[0])
    tmp = path.with_name(path.name + ".sorting")
    with open(tmp, "wb") as handle:
        handle.write(b"".join(raw + b"\n" for _, raw in keyed))
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)


def _lines(path: Path) -> list[Any]:
    """Whole JSON lines of a file the receiver appends to (a torn last line, from a kill, skipped)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out = []
    for raw in data.split(b"\n"):
        try:
            out.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue
    return out
