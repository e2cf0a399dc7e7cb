"""SpanData batches in, session sinks fed: the one per-session intake of the span exporter and the OTLP receiver.

Spans come in batches, in any order, any number of times. A trace is held until its root
span (no parent) has come (and, while none of its spans is a GenAI one, until it has been
quiet for ``hold_s``), or until :meth:`SpanIntake.flush`; with ``named_only`` (the receiver)
until one of its spans names its session instead, or is dropped (its spans ignored) once
held unnamed longer than ``hold`` allows (intake_state.HoldPolicy; ``clock``, wall-clock
seconds, says when). It is then *released*: put in our shape
as a whole (``shape``, by default :func:`~otel_agents.tracing.foreign.understood`; an
otel-agents run's trace is in it already), its model calls priced (``price``: the caller
passes ``llm.import_pricing.priced``), given its session as ``import`` gives it
(``gen_ai.conversation.id`` / ``otel_agents.session.id``, else ``trace-<id>``) and fed,
records first (in message order, each once), to that session's
:class:`~otel_agents.persistence.session_sink.SessionSink` with ``live=False`` as import
feeds it. Later spans of a released trace are fed at once (shaped with the trace's known spans).
Touched sessions are checkpointed after each batch (or, without ``checkpoint_each_batch``,
when they close); ledger records are appended (ids dedupe) when a session closes with every
trace whole, and at :meth:`SpanIntake.flush`, so the same spans again change nothing and the
result equals one ``otel-agents import`` of all the spans. ``state_dir`` keeps the held spans
and the unsettled sessions on disk (intake_state.py), for a receiver that acknowledges them.

Traces with no GenAI span are ignored and counted; a span the tree could not hold is
rejected with a one-line reason. Each open session is owned (ownership.py) until
:meth:`SpanIntake.close`, until it is fed nothing for ``hold_s``, or until it is the least
recently used of more than ``max_open``; a session another live process owns is rejected.
:meth:`SpanIntake.sync` fsyncs what was written, for a receiver that acknowledges after it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from otel_agents.persistence.intake_order import every_trace_whole, in_message_order, sort_events_file
from otel_agents.persistence.intake_state import Held, HoldPolicy, IntakeState, fsync_path
from otel_agents.persistence.repair import mark_awaiting_trace, mark_billed
from otel_agents.persistence.import_sessions import in_journal_form, record_lines, sessions_of_traces
from otel_agents.persistence.ledger import LedgerAppender, LedgerError
from otel_agents.persistence.ledger_read import not_a_ledger
from otel_agents.persistence.ledger_records import ledger_records
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.ownership import Ownership, SessionBusy, take
from otel_agents.persistence.paths import InvalidSessionId, Paths
from otel_agents.persistence.private import open_private_append
from otel_agents.persistence.session_sink import SessionSink
from otel_agents.persistence.store import NotALedger, SessionStore, StoreError
from otel_agents.persistence.timestamps import parse_iso_ts
from otel_agents.persistence.tree_file import TREE_FILE
from otel_agents.persistence.tree_span_fields import session_id_of
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.foreign import LLM_OPERATIONS, operation_of, understood
from otel_agents.tracing.import_checks import span_problem
from otel_agents.tracing.spandata import SpanData

Shape = Callable[[list[SpanData]], list[SpanData]]


def unchanged(spans: list[SpanData]) -> list[SpanData]:
    """The spans as they came (``shape``/``price`` of an intake that takes only our own spans)."""
    return spans
GENAI_OPERATIONS = LLM_OPERATIONS | {sc.OP_EXECUTE_TOOL, sc.OP_INVOKE_AGENT, sc.OP_CREATE_AGENT, "embeddings"}


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


@dataclass
class _Trace:
    spans: dict[str, SpanData | None] = field(default_factory=dict)  # None: fed, needed no more (ours)
    last_ns: int = 0  # monotonic time of the last span that came
    has_root: bool = False  # a span without a parent came: the trace has ended (its spans end before it)
    named: bool = False  # a span names its session
    ours: bool = False  # an otel-agents run's trace (otel_agents.session.id): in our shape span by span
    looked_at: int = 0  # how many spans it had when last found to hold no GenAI span
    session_id: str | None = None  # set when released; None after release: ignored
    released: bool = False
    held_since: float = 0.0  # ``clock`` time its first span was held (kept across restarts by pending.jsonl)


class _Open:
    """One session being written: its sink and the lock that makes this process its writer."""

    def __init__(self, sink: SessionSink, ownership: Ownership):
        self.sink = sink
        self.ownership = ownership
        self.last_ns = time.monotonic_ns()  # when spans were last fed to it
        self.unbilled = False  # spans came since its ledger records were last appended


class SpanIntake:
    """Feeds session directories and the ledger from batches of plain spans; thread-unsafe (callers lock)."""

    def __init__(self, sessions_dir: Path, billing_file: Path, *, shape: Shape = understood,
                 price: Shape = unchanged, warn: Warn = stderr_warning, hold_s: float = 30.0, max_open: int = 64,
                 max_traces: int = 4096, named_only: bool = False, state_dir: Path | None = None,
                 checkpoint_each_batch: bool = True, writer: dict[str, Any] | None = None, from_wire: bool = False,
                 hold: HoldPolicy = HoldPolicy(), clock: Callable[[], float] = time.time):
        self.paths = Paths(Path(sessions_dir), Path(billing_file))
        self.shape = shape
        self.price = price
        self.warn = warn
        self.hold_s = hold_s
        self.max_open = max_open
        self.max_traces = max_traces
        self.named_only = named_only
        self.hold = hold
        self.clock = clock
        self._since: dict[str, float] = {}  # while recovering: when each reloaded trace was first held
        self.checkpoint_each_batch = checkpoint_each_batch
        self.writer = writer  # how meta.json names the writing process
        self.from_wire = from_wire  # spans decoded from OTLP: JSON values already, as the journal gives them back
        self.totals = IntakeResult()
        self._traces: OrderedDict[str, _Trace] = OrderedDict()  # least recently touched first
        self._held: set[str] = set()  # ids of the traces not released yet
        self._unsynced: set[Path] = set()  # session directories written since the last sync()
        self._open: OrderedDict[str, _Open] = OrderedDict()
        reason = not_a_ledger(self.paths.billing_file)  # a long-lived intake never appends to another file
        if reason is not None:
            raise NotALedger(reason)
        self._ledger = LedgerAppender(self.paths.billing_file)
        self._state = IntakeState(state_dir, hold) if state_dir is not None else None
        if self._state is not None:
            self._recover(self._state)

    # ------------------------------------------------------------------ input
    def take(self, spans: Iterable[SpanData]) -> IntakeResult:
        """One batch: written, held, ignored or rejected, each span."""
        result = IntakeResult()
        due: dict[str, list[SpanData]] = {}  # released trace -> its new spans to feed
        arrived: list[SpanData] = []  # new spans of traces not released: spooled if still held after this batch
        now = time.monotonic_ns()
        now_s = self.clock()
        for span in spans:
            problem = span_problem(span)
            if problem is not None:
                result.rejected.append((span, f"span {span.span_id}: {problem.part}: {problem.message}"))
                continue
            trace = self._traces.get(span.trace_id)
            if trace is None:
                trace = self._traces[span.trace_id] = _Trace(held_since=self._since.get(span.trace_id) or now_s)
                self._held.add(span.trace_id)
            self._traces.move_to_end(span.trace_id)
            trace.last_ns = now
            if span.span_id in trace.spans:
                continue  # delivered again: what it gave is there already (or held)
            trace.spans[span.span_id] = None if trace.released and (trace.ours or self.named_only) else span
            trace.has_root = trace.has_root or span.parent_span_id is None
            trace.named = trace.named or bool(session_id_of(span))
            trace.ours = trace.ours or sc.SESSION_ID in span.attributes
            if trace.released:
                due.setdefault(span.trace_id, []).append(span)
            else:
                arrived.append(span)
        for trace_id, new in due.items():
            self._feed_late(trace_id, self._traces[trace_id], new, result)
        for trace_id in list(self._held):
            trace = self._traces[trace_id]
            if self.named_only:
                if trace.named:
                    self._release(trace_id, trace, result)
                elif now_s - trace.held_since >= self.hold.unnamed_hold_seconds:
                    self._drop(trace_id, trace, result)  # another service's trace, most likely: never named
                continue
            quiet = now - trace.last_ns >= self.hold_s * 1e9
            if quiet or (trace.has_root and len(trace.spans) > trace.looked_at):
                self._release(trace_id, trace, result, final=quiet)
        result.held = self.held_spans()
        if self._state is not None:
            self._state.hold(self._held_groups(span for span in arrived if span.trace_id in self._held))
            if self._state.compact_due(result.held):  # spans released or dropped since: the file stays bounded
                self._state.rewrite_pending(self._held_groups())
        self._settle(result)
        self._forget_old()
        self._close_idle(now)
        self.totals.add(result)
        return result

    def _held_groups(self, spans: Iterable[SpanData] | None = None) -> list[Held]:
        """The given spans (default: every held one) by trace, each with when its trace was first held."""
        if spans is None:
            return [(self._traces[t].held_since, list(self._traces[t].spans.values())) for t in self._held]
        groups: dict[str, list[SpanData]] = {}
        for span in spans:
            groups.setdefault(span.trace_id, []).append(span)
        return [(self._traces[t].held_since, group) for t, group in groups.items()]

    def held_spans(self) -> int:  # waiting for their trace's root or (``named_only``) its session's name
        return sum(len(self._traces[t].spans) for t in self._held)

    def flush(self) -> IntakeResult:
        """Release every held trace now (as import would take a file holding only what came)."""
        result = IntakeResult()
        for trace_id in list(self._held):
            self._release(trace_id, self._traces[trace_id], result)
        self._settle(result)
        for session_id, session in list(self._open.items()):
            if session.unbilled:
                if not self.checkpoint_each_batch:
                    session.sink.checkpoint()
                self._bill(session_id, session)
        self.totals.add(result)
        return result

    def sync(self) -> None:
        """fsync what was written since the last call (flushed per line: the kernel has it), for an acknowledgement."""
        for directory in sorted(self._unsynced):
            for name in ("spans.jsonl", "events.jsonl"):
                fsync_path(directory / name)
        self._unsynced.clear()
        if self._state is not None:
            self._state.sync()

    def close(self, flush: bool = True) -> IntakeResult:
        """Flush (or, not ``flush``, keep held traces held), close every session, give up the locks; idempotent."""
        result = self.flush() if flush else IntakeResult()
        while self._open:
            self._close_oldest(bill_anyway=flush)
        if self._state is not None:  # a clean stop: nothing to settle at the next start
            self._state.rewrite_pending(self._held_groups())
            self._state.rewrite_unsettled([])
        return result

    # ------------------------------------------------------------------ traces
    def _release(self, trace_id: str, trace: _Trace, result: IntakeResult, final: bool = True) -> None:
        """Write the trace; one with no GenAI span yet waits (its GenAI spans may come later) unless ``final``."""
        spans = list(trace.spans.values())
        shaped = self._shaped(spans, trace)
        if not any(session_id_of(s) or operation_of(s) in GENAI_OPERATIONS for s in shaped):
            trace.looked_at = len(spans)  # looked at again only when more come
            if final:
                self._drop(trace_id, trace, result)
            return
        trace.released = True
        self._held.discard(trace_id)
        trace.session_id = sessions_of_traces(shaped)[trace_id]
        if not self._feed(trace.session_id, shaped, result):
            del self._traces[trace_id]  # not written: the same spans delivered again are tried again
        elif trace.ours or self.named_only:
            trace.spans = dict.fromkeys(trace.spans)  # later spans need no shaping: their ids suffice

    def _drop(self, trace_id: str, trace: _Trace, result: IntakeResult) -> None:
        """Ignored, spans counted; remembered (as released without a session) so its later spans are ignored too."""
        trace.released = True
        self._held.discard(trace_id)
        result.ignored += len(trace.spans)
        trace.spans = {}  # nothing to shape later spans with

    def _feed_late(self, trace_id: str, trace: _Trace, new: list[SpanData], result: IntakeResult) -> None:
        if trace.session_id is None:
            result.ignored += len(new)
            for span in new:
                trace.spans.pop(span.span_id, None)
            return
        if trace.ours or self.named_only:
            fed = self.price(new)  # in our shape span by span: the rest of the trace changes nothing
        else:
            new_ids = {span.span_id for span in new}
            shaped = self._shaped(list(trace.spans.values()), trace)
            # The new spans as the whole trace shapes them, and any synthetic span the trace now needs.
            fed = [s for s in shaped if s.span_id in new_ids or s.span_id not in trace.spans]
        if not self._feed(trace.session_id, fed, result):
            for span in new:
                trace.spans.pop(span.span_id, None)  # not written: tried again if delivered again

    def _shaped(self, spans: list[SpanData], trace: _Trace) -> list[SpanData]:
        if trace.ours:
            return self.price(spans)  # an otel-agents run's trace: in our shape already, whole or not
        return self.price(self.shape(spans))

    def _forget_old(self) -> None:
        """Released traces are kept for shaping late spans, up to ``max_traces``; held ones until released."""
        excess = len(self._traces) - self.max_traces
        if excess <= 0:
            return
        for trace_id in [t for t, trace in self._traces.items() if trace.released][:excess]:
            del self._traces[trace_id]

    # ------------------------------------------------------------------ sessions
    def _feed(self, session_id: str, spans: Sequence[SpanData], result: IntakeResult) -> bool:
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
        # Records first, in message order, each once (a crash may have left a span's records without its end).
        lines = [line for span in fresh for line in record_lines(span)
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
            self._close_oldest()
        return session

    def _settle(self, result: IntakeResult) -> None:
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

    def _close_idle(self, now: int) -> None:
        """Sessions fed nothing for ``hold_s`` are closed, so their locks do not outlive their traces."""
        closed = False
        while self._open:
            session = next(iter(self._open.values()))
            if now - session.last_ns < self.hold_s * 1e9:
                break  # least recently used first: the rest are newer
            self._close_oldest()
            closed = True
        if closed and self._state is not None:
            self._state.rewrite_unsettled(self._open)

    def _close_oldest(self, bill_anyway: bool = False) -> None:
        session_id, session = self._open.popitem(last=False)
        whole = every_trace_whole(session.sink.spans())
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

    def _recover(self, state: IntakeState) -> None:
        """After a crash: settle the sessions written but not settled, take the spans still held again."""
        for session_id in state.unsettled():
            try:
                if (self.paths.session_dir(session_id) / "spans.jsonl").exists():
                    self._session(session_id, 0).unbilled = True
            except (SessionBusy, InvalidSessionId, StoreError, OSError) as exc:
                self.warn(f"cannot settle session {session_id}: {exc}")
        waiting, self._since = state.pending()
        if waiting:
            self.take(waiting)  # those whose bound passed meanwhile are dropped
        self._since = {}
        self.close(flush=False)  # pending.jsonl rewritten (atomically) with what is still held
        self.sync()
