"""The one writer of a session directory: plain span starts, ends and records in; streams, tree, meta, ledger out.

A live run (``SessionRecorder``, in the run's process or in the recorder process),
``import`` and a resumed session all write through a :class:`SessionSink`.

Contract:

- Input is plain :class:`SpanData` (``start``/``end``) and seed-001 records
  (``record``), already read the way the session keeps them (credentials scrubbed
  or, with ``redact_contents``, redacted): the sink writes what it is given.
- Each record is appended to ``events.jsonl`` and each span's start and end to the
  ``spans.jsonl`` journal, flushed per line: when a call returns, what it was given
  is in the kernel's hands (a SIGKILL of the process loses nothing of it).
- Order tolerance: a record may come before its span's start (it is written at once
  and left out of the span's end line); one that comes after its span's end, which
  carried it as an event, is not written again (the journal holds it); an end without
  a start writes the start line first; children may end after their parent.
- Idempotence by span id: a second start of a span id, or a second end, is ignored
  (a span open in a resumed session's journal may still be ended once).
- Derived files: ``tree.json.gz`` and ``meta.json`` come from the existing pure
  functions (:func:`build_nodes` trace by trace, :func:`make_meta`/``meta_after_run``)
  at checkpoints (sub-agent and run ends, coalesced by :class:`CheckpointPolicy`) and
  at :meth:`close`; the ledger records of a run are derived from its trace's nodes
  when its root span ends (``sink_ledger.RunBilling``, ids dedupe). With
  ``live=False`` (import) only :meth:`checkpoint` and :meth:`close` write them.

Open spans count in trees as they started. Nothing here raises into a run: a failure
becomes one warning per destination (session directory, billing file) and that
destination is written no more, so a half-working disk never leaves half-written files.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from otel_agents.persistence.events_file import EventsWriter
from otel_agents.persistence.journal import JournalWriter
from otel_agents.persistence.ledger_records import ledger_records
from otel_agents.persistence.pricing_file import PricingSnapshot
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.sink_ledger import RunBilling, failure_reason
from otel_agents.persistence.sink_derived import CheckpointPolicy, DerivedFiles, RecorderStats
from otel_agents.persistence.sink_saved import SavedRuns
from otel_agents.persistence.store import SessionStore
from otel_agents.persistence.tree import assemble_session, build_nodes, merge_trees
from otel_agents.persistence.tree_encoding import TreeEncoder
from otel_agents.persistence.tree_span_fields import span_operation
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData

_MESSAGE_ID = sc.EVENT_FIELD_PREFIX + "message_id"

def _start_of(span: SpanData) -> SpanData:
    """A span as its start line gives it back (an end that came without its start)."""
    return dataclasses.replace(span, end_ns=None, events=(), status="UNSET", status_message=None)


class SessionSink(SavedRuns, DerivedFiles):
    """Writes one session directory (and its runs' ledger records) from plain span data.

    ``resume=True`` continues a saved session, so checkpoints and the final tree hold
    every run; only the new runs are billed at their ends. Its earlier runs come from
    tree.json.gz when that checkpoint is current (decoded at the first checkpoint, or
    while idle), else from the spans in its journal, else from tree.json.gz as it is;
    ``from_journal=True`` always reads the journal (import merges span by span).
    ``base_tree`` passes a saved tree explicitly instead (merged under the new runs).

    Trees returned by :meth:`tree` share nodes with the sink's cache: read them, do not change them.
    """

    def __init__(
        self,
        store: SessionStore,
        session_id: str | None = None,
        *,
        billing_file: Path | None = None,
        resume: bool = False,
        base_tree: Mapping[str, Any] | None = None,
        created_ns: int | None = None,
        policy: CheckpointPolicy = CheckpointPolicy(),
        warn: Warn = stderr_warning,
        append_ledger: Callable[[Path, list[dict]], int] | None = None,
        redact_contents: bool = False,
        live: bool = True,
        from_journal: bool = False,
    ):
        self.store = store
        self.session_id = session_id or store.session_id
        self.base_tree = dict(base_tree) if base_tree is not None else None
        self.created_ns = created_ns
        self.policy = policy
        self.warn = warn
        self.redact_contents = redact_contents  # --redacted-save: said in meta.json
        self.live = live
        self.stats = RecorderStats()
        self.writer: dict[str, Any] | None = None  # how meta.json names the writing process (recorder_process sets it)
        self._lock = threading.RLock()
        self._billing = RunBilling(billing_file, warn, append_ledger)
        self._events = EventsWriter(store.events_path, warn)
        self._journal = JournalWriter(store.journal_path, warn)
        self._pricing = PricingSnapshot(store.directory)
        self._base: list[SpanData] = []  # earlier runs' ended spans (resume)
        self._base_tree_due = False  # resume: load base_tree from tree.json.gz at the first tree
        self._tree_encoder = TreeEncoder()  # the members of the last tree written or read: a write compresses only what changed
        self._open: dict[str, SpanData] = {}  # span id -> the span as its start line wrote it
        self._finished: dict[str, SpanData] = {}
        self._ended_before: set[str] = set()  # ended spans of the saved session (resume): a second end is ignored
        # span id -> (message id, time ns) of the records written to events.jsonl for it
        self._recorded: dict[str, set[tuple[Any, int]]] = {}
        # Per trace: ended spans (earlier runs' included), open span ids, built nodes (kept until a span of it changes).
        self._trace_spans: dict[str, list[SpanData]] = {}
        self._trace_open: dict[str, set[str]] = {}
        self._trace_nodes: dict[str, tuple[list[dict], list[dict]]] = {}
        self._changed_traces: set[str] = set()  # traces with a span started or ended since the settled meta
        self._open_runs = 0
        self._saved_bytes = 0  # spans.jsonl + events.jsonl of earlier runs (resume)
        self._appended_at_checkpoint = 0  # bytes appended to them at the last tree write
        self._dirty = False
        # The recorder process writes a run's end (meta.json or a checkpoint) once no message waits.
        self.defer_run_end_writes = False
        self._run_end_due = False
        self._store_failed = False
        self._closed = False
        # Merging (from_journal: import, collect): message id -> the span its record is stored on, so a
        # feeder can refuse a record the session already holds on another span (a copy carried on elsewhere).
        self.message_spans: dict[Any, str] | None = {} if from_journal else None
        DerivedFiles.__init__(self)
        if resume:
            self._load_saved(from_journal)
        if self.created_ns is None:
            self.created_ns = time.time_ns()

    @property
    def billing_file(self) -> Path | None:
        return self._billing.billing_file

    def set_warn(self, warn: Warn) -> None:
        """Say warnings another way from now on (the recorder process sends them to the run's)."""
        self.warn = self._events.warn = self._journal.warn = self._billing.warn = warn

    # ------------------------------------------------------------------ input
    def started(self, span_id: str) -> SpanData | None:
        """The span as its start line wrote it, while it is open."""
        return self._open.get(span_id)

    def recorded(self, span_id: str) -> set[tuple[Any, int]]:
        """``(message id, time ns)`` of the records written for this span so far."""
        return self._recorded.get(span_id, set())

    def has_ended(self, span_id: str) -> bool:
        """Whether this span's end is written already (this sink's, or the saved session's)."""
        return span_id in self._finished or span_id in self._ended_before

    def start(self, span: SpanData) -> None:
        with self._lock:
            span_id = span.span_id
            if self._closed or span_id in self._open or span_id in self._finished or span_id in self._ended_before:
                return
            try:
                self._note_change(span.trace_id)
                self._open[span.span_id] = span
                self._trace_open.setdefault(span.trace_id, set()).add(span.span_id)
                run_started = span.parent_span_id is None and span_operation(span) == sc.OP_INVOKE_AGENT
                if run_started:
                    self._open_runs += 1
                if self._store_failed:
                    return
                if run_started and self.live:
                    self._run_started(span)  # "running" first: a reader never takes a live run for a crashed one
                    if self._store_failed:
                        return
                self._journal.start(span)
                self._journal_stats()
            except Exception as exc:  # never into the run
                self._fail_store(exc)

    def end(self, span: SpanData) -> None:
        with self._lock:
            span_id = span.span_id
            if self._closed or span_id in self._finished or span_id in self._ended_before:
                return
            try:
                started = self._open.pop(span_id, None)
                if started is None:  # ended without a start: its start line first, so the journal rebuilds it
                    started = _start_of(span)
                    if not self._store_failed:
                        self._journal.start(started)
                self._trace_open.get(span.trace_id, set()).discard(span_id)
                recorded = self._recorded.pop(span_id, set())
                self._finished[span_id] = span
                self._note_change(span.trace_id)
                self._trace_spans.setdefault(span.trace_id, []).append(span)
                if not self._store_failed:
                    try:
                        self._journal.end(span, started, {message_id for message_id, _ in recorded})
                        self._journal_stats()
                        self._pricing.take(span)  # pricing.json: the price entries the session used
                    except Exception as exc:
                        self._fail_store(exc)
                if span_operation(span) != sc.OP_INVOKE_AGENT:
                    return
                if span.parent_span_id is None:
                    self._open_runs = max(0, self._open_runs - 1)
                    if self.live:
                        self._run_ended(span)
                elif self.live and self._checkpoint_due():
                    self.checkpoint()
            except Exception as exc:
                self._fail_store(exc)

    def record(self, record: Mapping[str, Any], ts_ns: int, trace_id: str | None, span_id: str | None) -> None:
        """A seed-001 record emitted on a span (ids hex; None for none), appended to events.jsonl at once."""
        with self._lock:
            if self._store_failed or self._closed:
                return
            try:
                ended = self._finished.get(span_id) if span_id is not None else None
                if ended is not None and any(e.attributes.get(_MESSAGE_ID) == record.get("message_id")
                                             for e in ended.events):
                    return  # after its span's end, which carried it: the journal holds it, stored once
                self._events.append(record, ts_ns, trace_id, span_id)
                if span_id is not None:
                    # Written here, so the span's end line leaves this event out.
                    self._recorded.setdefault(span_id, set()).add((record.get("message_id"), ts_ns))
                    if self.message_spans is not None:
                        self.message_spans.setdefault(record.get("message_id"), span_id)
                self.stats.event_lines += 1
            except Exception as exc:
                self._fail_store(exc)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Calls inside hand their lines to the kernel once, when the batch ends, instead of one by one.

        For a feeder whose input stays durable until then (the recorder process reads a
        kernel pipe: a killed run leaves it whole), so the contract above holds at the
        batch's end. Checkpoints inside flush first, so their mark covers what is written.
        """
        with self._lock:
            writers = (self._events, self._journal)
            for writer in writers:
                writer.flush_each = False
            try:
                yield
            finally:
                for writer in writers:
                    writer.flush_each = True
                self._flush_streams()

    def _flush_streams(self) -> None:
        if self._store_failed:
            return
        try:
            self._events.flush()
            self._journal.flush()
        except Exception as exc:
            self._fail_store(exc)

    def _note_change(self, trace_id: str) -> None:
        self._changed_traces.add(trace_id)
        self._trace_nodes.pop(trace_id, None)
        self._dirty = True

    # ------------------------------------------------------------------ tree
    def spans(self) -> list[SpanData]:
        """Every span of the session known so far: saved ones (resume), finished, open (as they started)."""
        with self._lock:
            return list(self._base) + list(self._finished.values()) + list(self._open.values())

    def tree(self) -> dict[str, Any]:
        """The live tree: every span seen so far, open ones in progress.

        Equal to ``build_tree(self.spans())`` (merged over ``base_tree``), built trace by trace.
        """
        with self._lock:
            self._load_base_tree()
            runs: list[dict] = []
            ops: list[dict] = []
            for trace_id in list(self._trace_spans.keys() | self._trace_open.keys()):
                trace_runs, trace_ops = self._nodes_of(trace_id)
                runs += trace_runs
                ops += trace_ops
            tree = assemble_session(self.session_id, runs, ops)
            if self.base_tree is not None:
                tree = merge_trees(self.base_tree, tree)
            return tree

    def _load_base_tree(self) -> None:
        """A resumed session's saved tree, once; cleared only once loaded, so a tree without the
        earlier runs is never built."""
        if self._base_tree_due:
            self.base_tree = self.store.load_tree(self._tree_encoder)
            self._base_tree_due = False

    def _nodes_of(self, trace_id: str) -> tuple[list[dict], list[dict]]:
        """The run and operation nodes of one trace; kept while no span of it starts or ends."""
        nodes = self._trace_nodes.get(trace_id)
        if nodes is None:
            open_ids = self._trace_open.get(trace_id) or ()
            spans = self._trace_spans.get(trace_id, []) + [self._open[i] for i in open_ids]
            _, runs, ops = build_nodes(spans, self.session_id)  # assembled with the other traces' by the caller
            nodes = self._trace_nodes[trace_id] = (runs, ops)
        return nodes

    def _run_ended(self, root: SpanData) -> None:
        # The journal already holds every span of the run, so the ledger need not wait
        # for a tree write, and the tree is written only when the policy says so.
        runs, ops = self._nodes_of(root.trace_id)
        run_tree = assemble_session(self.session_id, runs, ops)
        run = next((r for r in run_tree["runs"] if r["span_id"] == root.span_id), None)
        if run is not None:
            self._billing.append(ledger_records(run_tree, runs=[run["index"]]))
            self._billing_stats()
        self._settle_run(root, run_tree)
        if self.defer_run_end_writes:
            self._run_end_due = True
        else:
            self._write_after_run()

    def idle(self) -> bool:
        """Nothing is waiting to be recorded: do the writes a run's end left for now; True if more remains.

        A resumed session's saved tree is decoded here too, while the run waits on its
        model, rather than at the first checkpoint (seconds for a large session), and the
        billing ledger's ids are read a slice at a time, so a run's end reads only its tail.
        """
        with self._lock:
            if self._closed:
                return False
            try:
                if self._run_end_due:
                    self._write_after_run()
                if not self._store_failed:
                    self._load_base_tree()
            except Exception as exc:
                self._fail_store(exc)
            more = self._billing.read_ahead()
            self._billing_stats()
            return more

    @property
    def saved_everything(self) -> bool:
        """Nothing failed to be written: the session directory and the ledger hold the whole session."""
        return not (self._store_failed or self._billing.failed)

    def close(self) -> None:
        """Final checkpoint if anything changed since the last one; idempotent."""
        with self._lock:
            if self._closed:
                return
            try:
                if self._dirty or self.stats.checkpoints == 0:
                    if self._finished or self._open or self._base or self.base_tree is not None or self._base_tree_due:
                        self.checkpoint()
                    else:
                        self._write_meta()
            except Exception as exc:
                self._fail_store(exc)
            finally:
                self._closed = True
                for writer in (self._events, self._journal):
                    try:
                        writer.close()
                    except Exception as exc:
                        self._fail_store(exc)

    # ------------------------------------------------------------------ helpers
    def _journal_stats(self) -> None:
        self.stats.journal_lines = self._journal.lines_written
        self.stats.journal_bytes_written = self._journal.bytes_written

    def _billing_stats(self) -> None:
        self.stats.ledger_records_written = self._billing.records_written
        self.stats.ledger_bytes_read = self._billing.bytes_read

    def _fail_store(self, exc: BaseException) -> None:
        if self._store_failed:
            return
        self._store_failed = True
        self.warn(
            f"cannot save session {self.session_id} in {self.store.directory}: {failure_reason(exc)}; "
            "the run goes on without saving it"
        )
