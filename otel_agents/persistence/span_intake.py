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
rejected with a one-line reason. The sessions being written, their locks, closing and
billing are intake_sessions.OpenSessions' (``max_open``, ``hold_s``); a session another live
process owns is rejected. :meth:`SpanIntake.sync` fsyncs what was written, for a receiver
that acknowledges after it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from otel_agents.persistence.span_placement import sessions_of_traces
from otel_agents.persistence.intake_sessions import IntakeResult, OpenSessions
from otel_agents.persistence.intake_state import Held, HoldPolicy, IntakeState
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.ownership import SessionBusy
from otel_agents.persistence.paths import InvalidSessionId, Paths
from otel_agents.persistence.store import StoreError
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
        self.max_traces = max_traces
        self.named_only = named_only
        self.hold = hold
        self.clock = clock
        self._since: dict[str, float] = {}  # while recovering: when each reloaded trace was first held
        self.totals = IntakeResult()
        self._traces: OrderedDict[str, _Trace] = OrderedDict()  # least recently touched first
        self._held: set[str] = set()  # ids of the traces not released yet
        self._state = IntakeState(state_dir, hold) if state_dir is not None else None
        self.sessions = OpenSessions(self.paths, warn=warn, hold_s=hold_s, max_open=max_open,
                                     checkpoint_each_batch=checkpoint_each_batch, writer=writer,
                                     from_wire=from_wire, state=self._state)
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
        self.sessions.settle(result)
        self._forget_old()
        self.sessions.close_idle(now)
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
        self.sessions.settle(result)
        self.sessions.bill_unbilled()
        self.totals.add(result)
        return result

    def sync(self) -> None:
        """fsync what was written since the last call (flushed per line: the kernel has it), for an acknowledgement."""
        self.sessions.sync()
        if self._state is not None:
            self._state.sync()

    def close(self, flush: bool = True) -> IntakeResult:
        """Flush (or, not ``flush``, keep held traces held), close every session, give up the locks; idempotent."""
        result = self.flush() if flush else IntakeResult()
        while self.sessions:
            self.sessions.close_oldest(bill_anyway=flush)
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
        self._note_released(trace_id)
        trace.session_id = sessions_of_traces(shaped)[trace_id]
        if not self.sessions.feed(trace.session_id, shaped, result):
            del self._traces[trace_id]  # not written: the same spans delivered again are tried again
        elif trace.ours or self.named_only:
            trace.spans = dict.fromkeys(trace.spans)  # later spans need no shaping: their ids suffice

    def _drop(self, trace_id: str, trace: _Trace, result: IntakeResult) -> None:
        """Ignored, spans counted; remembered (as released without a session) so its later spans are ignored too."""
        trace.released = True
        self._held.discard(trace_id)
        self._note_released(trace_id)
        result.ignored += len(trace.spans)
        trace.spans = {}  # nothing to shape later spans with

    def _note_released(self, trace_id: str) -> None:
        """Written, dropped or rejected: a restart after kill -9 must not take its spans from pending.jsonl again."""
        if self._state is not None:
            self._state.released(trace_id)

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
        if not self.sessions.feed(trace.session_id, fed, result):
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

    def _recover(self, state: IntakeState) -> None:
        """After a crash: settle the sessions written but not settled, take the spans still held again."""
        for session_id in state.unsettled():
            try:
                if (self.paths.session_dir(session_id) / "spans.jsonl").exists():
                    self.sessions.reopen(session_id)
            except (SessionBusy, InvalidSessionId, StoreError, OSError) as exc:
                self.warn(f"cannot settle session {session_id}: {exc}")
        waiting, self._since = state.pending()
        if waiting:
            self.take(waiting)  # those whose bound passed meanwhile are dropped
        self._since = {}
        self.close(flush=False)  # pending.jsonl rewritten (atomically) with what is still held
        self.sync()
