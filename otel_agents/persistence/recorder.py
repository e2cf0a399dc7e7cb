"""The live session recorder: a span processor and a Telemetry listener in one object.

Added to the same TracerProvider as any OTLP exporter, it sees every span of its
session start and end, and every seed-001 record the moment it is emitted:

- records are appended to ``events.jsonl`` as they arrive (flushed per line);
- each span start and end is appended to the ``spans.jsonl`` journal (flushed
  per line), so every finished span is durable the moment it ends;
- the live tree equals :func:`build_tree` over the spans seen so far (open spans
  included, known by their start), so it always equals what an importer would
  rebuild from the same spans, and what ``load_artifacts`` rebuilds from the
  journal after a crash. Spans of different traces are never parent and child,
  so each trace is built on its own and its nodes are kept until a span of that
  trace starts or ends: a tree is then only the finished traces' nodes put
  together (:func:`assemble_session`), not a rebuild of every span;
- ``tree.json.gz`` is checkpointed at the end of sub-agent invocations and of
  runs, coalesced geometrically (see :class:`CheckpointPolicy`), and always by
  :meth:`SessionRecorder.close`, with a ``meta.json`` naming the file sizes it
  covers (:func:`checkpoint_mark`); ``meta.json`` also at each run start (from
  the last one written: no tree is built) and end;
- at the end of each run, the run's ledger records are derived from its trace's
  nodes (in memory) and appended to the billing ledger.

Nothing here may break a run: any failure becomes one warning on stderr per
destination (session directory, billing file) and recording of that
destination stops, so a half-working disk never leaves half-written files.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from otel_agents.persistence.events_file import EventsFileError, EventsWriter, read_event_lines
from otel_agents.persistence.journal import JournalError, JournalWriter, read_journal, spans_from_journal
from otel_agents.persistence.ledger_records import ledger_records
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.content_redaction import redact_record_contents, redact_span_contents
from otel_agents.persistence.store import (
    SessionStore,
    StoreError,
    checkpoint_is_current,
    checkpoint_mark,
    created_ns_of,
    make_meta,
    make_payload,
    meta_after_run,
    run_summary,
    this_writer,
)
from otel_agents.persistence.timestamps import iso_ts, parse_iso_ts
from otel_agents.persistence.tree import assemble_session, build_tree, merge_trees
from otel_agents.persistence.tree_span_fields import span_operation
from otel_agents.persistence.tree_encoding import TreeEncoder
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.redaction import redact
from otel_agents.tracing.spandata import SpanData, SpanReader, hex_span_id, hex_trace_id

if TYPE_CHECKING:  # imported when first needed: a run with no billing file never loads it
    from otel_agents.persistence.ledger import LedgerAppender

LEDGER_READ_AHEAD_BYTES = 8 << 20  # ledger read per idle moment: the pipe is looked at again between slices


@dataclass(frozen=True)
class CheckpointPolicy:
    """When a sub-agent invocation or a run ends, write the tree only if it grew enough.

    Rewriting the whole tree at every sub-agent or run end costs O(n^2) bytes
    over a session. Writing only once the tree has grown by ``growth`` times its
    size at the last write (measured from at least ``min_bytes``) makes the sizes
    of successive writes a geometric series: all checkpoints together cost at
    most ``(1 + growth) / growth`` times the final tree, plus the final write of
    ``close()``. The journal makes every finished span durable in between. Sizes
    are the bytes of spans.jsonl and events.jsonl, which grow as the tree does.
    """

    growth: float = 1.0
    min_bytes: int = 16_384

    def due(self, pending: int, written: int) -> bool:
        return pending >= self.growth * max(written, self.min_bytes)


@dataclass
class RecorderStats:
    checkpoints: int = 0  # tree.json.gz writes
    tree_bytes_written: int = 0  # compressed bytes, all writes together
    last_tree_bytes: int = 0
    meta_writes: int = 0
    meta_bytes_written: int = 0
    event_lines: int = 0
    journal_lines: int = 0
    journal_bytes_written: int = 0
    ledger_records_written: int = 0
    ledger_bytes_read: int = 0  # of the ledger, for the ids already in it (all sessions' records)
    base_spans: int = 0  # spans of earlier runs loaded from the journal (resume)
    tree_json_compressed: int = 0  # JSON bytes gzipped for tree writes (unchanged runs are copied, not gzipped again)


class SessionRecorder(SpanProcessor):
    """Persists one session as it runs. Register with ``tracing.add_processor`` and ``tracing.add_listener``.

    ``resume=True`` continues a saved session, so checkpoints and the final tree hold
    every run; only the new runs are billed at their ends. Its earlier runs come from
    tree.json.gz when that checkpoint is current (decoded at the first checkpoint),
    else from the spans in its journal, else from tree.json.gz as it is.
    ``base_tree`` passes a saved tree explicitly instead (merged under the new runs).

    Trees returned by :meth:`tree` share nodes with the recorder's cache: read them,
    do not change them.
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
    ):
        self.store = store
        self.session_id = session_id or store.session_id
        self.billing_file = Path(billing_file) if billing_file is not None else None
        self.base_tree = dict(base_tree) if base_tree is not None else None
        self.created_ns = created_ns
        self.policy = policy
        self.warn = warn
        self._append_ledger = append_ledger
        self.redact_contents = redact_contents  # --redacted-save
        self.stats = RecorderStats()
        # How meta.json names the process running the session (recorder_process sets its own).
        self.writer: dict[str, Any] | None = None
        self._lock = threading.RLock()
        self._events = EventsWriter(store.events_path, warn)
        self._journal = JournalWriter(store.journal_path, warn)
        self._traces: set[int] = set()
        self._base: list[SpanData] = []  # earlier runs' spans (resume)
        self._base_tree_due = False  # resume: load base_tree from tree.json.gz at the first tree
        # The members of the last tree written or read: a write compresses only what changed.
        self._tree_encoder = TreeEncoder()
        self._open: dict[int, Any] = {}  # span id -> live SDK span (readable while open)
        self._started: dict[int, SpanData] = {}  # span id -> the span as its start line wrote it
        # span id -> (message id, time) of the records written to events.jsonl, as Telemetry redacted them
        self._recorded: dict[int, set[tuple[str, int]]] = {}
        # The session directory keeps content as sent (credentials scrubbed); --redacted-save
        # keeps no content, and no pattern-labelled secret in what remains.
        self._reader = SpanReader(redact_patterns=redact_contents)
        self._finished: dict[int, SpanData] = {}
        # Per trace (hex id): finished spans (earlier runs' included), open span ids, built nodes.
        self._trace_spans: dict[str, list[SpanData]] = {}
        self._trace_open: dict[str, set[int]] = {}
        self._trace_nodes: dict[str, tuple[list[dict], list[dict]]] = {}
        self._last_meta: dict[str, Any] | None = None  # the last meta.json written (or found, on resume)
        # make_meta of every run so far, exactly, while no run is open: a run's end adds its own
        # run to it (meta_after_run) instead of building the whole session's tree each time.
        self._settled: dict[str, Any] | None = None
        self._settled_end_ns = 0  # no entry of the settled runs completed after this
        self._changed_traces: set[str] = set()  # traces with a span started or ended since
        self._base_billed = True  # resume: whether the earlier runs were all in the ledger
        self._open_runs = 0
        self._saved_bytes = 0  # spans.jsonl + events.jsonl of earlier runs (resume)
        self._appended_at_checkpoint = 0  # bytes this recorder had appended to them at the last tree write
        self._dirty = False
        # With a recorder process, a run's end writes meta.json (or a checkpoint) once no
        # message waits (idle): when the process closes right after its last run, close's
        # checkpoint is the only write.
        self.defer_run_end_writes = False
        self._run_end_due = False
        self._store_failed = False
        self._billing_failed = False
        self._ledger: LedgerAppender | None = None  # the ledger's ids, read once, then only what was appended
        self._ledger_caught_up = False
        self._closed = False
        if resume:
            self._load_saved()
        if self.created_ns is None:
            self.created_ns = time.time_ns()

    def _load_saved(self) -> None:
        """The saved session this recorder continues; unreadable => nothing more is written to it."""
        store = self.store
        try:
            meta = store.read_meta()
        except StoreError:
            meta = None  # a missing or damaged summary is rewritten at the first checkpoint
        try:
            if self.base_tree is None and checkpoint_is_current(store, meta):
                # Everything the journal holds is in the checkpoint: no need to read either now.
                self._base_tree_due = True
                try:  # meta.json was written after its runs had ended: no entry of them is later
                    self._settle(meta, parse_iso_ts(meta["updated"]))
                except (KeyError, TypeError, ValueError):
                    pass
            elif store.journal_path.exists():
                lines = read_event_lines(store.events_path, self.warn) if store.events_path.exists() else []
                self._base = spans_from_journal(read_journal(store.journal_path, self.warn), lines)
                self.stats.base_spans = len(self._base)
                for span in self._base:
                    self._trace_spans.setdefault(span.trace_id, []).append(span)
            elif store.tree_path.exists() and self.base_tree is None:
                self.base_tree = store.load_tree(self._tree_encoder)
            self._saved_bytes = sum(p.stat().st_size for p in (store.journal_path, store.events_path) if p.exists())
        except (JournalError, EventsFileError, StoreError, OSError) as exc:
            self._fail_store(exc)
            return
        self._base_billed = bool(meta and meta.get("billed"))
        if meta is not None:
            self._last_meta = meta
            self.created_ns = self.created_ns or created_ns_of(meta)

    def set_warn(self, warn: Warn) -> None:
        """Say warnings another way from now on (the recorder process sends them to the run's)."""
        self.warn = self._events.warn = self._journal.warn = warn

    # ------------------------------------------------------------------ span processor
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        with self._lock:
            try:
                context = span.get_span_context()
                if span.parent is None or not span.parent.is_valid:
                    if self._names_session(span.attributes or {}):
                        self._traces.add(context.trace_id)
                if context.trace_id not in self._traces:
                    return
                self._open[context.span_id] = span
                data = self._scrub(self._reader.read(span))
                self._changed_traces.add(data.trace_id)
                self._trace_open.setdefault(data.trace_id, set()).add(context.span_id)
                self._trace_nodes.pop(data.trace_id, None)
                self._dirty = True
                run_started = span.parent is None and span_operation(data) == sc.OP_INVOKE_AGENT
                if run_started:
                    self._open_runs += 1
                if self._store_failed:
                    return
                if run_started:
                    self._run_started(data)  # "running" first: a reader never takes a live run for a crashed one
                    if self._store_failed:
                        return
                self._started[context.span_id] = data
                self._journal.start(data)
                self._journal_stats()
            except Exception as exc:  # never into the run
                self._fail_store(exc)

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            try:
                context = span.get_span_context()
                if context.trace_id not in self._traces:
                    return
                self._open.pop(context.span_id, None)
                recorded = self._recorded.pop(context.span_id, set())
                started = self._started.pop(context.span_id, None)
                # Values unchanged since the start's read are not redacted again.
                data = self._scrub(self._reader.read(span, () if self.redact_contents else recorded, started))
                self._finished[context.span_id] = data
                self._changed_traces.add(data.trace_id)
                self._trace_open.get(data.trace_id, set()).discard(context.span_id)
                self._trace_spans.setdefault(data.trace_id, []).append(data)
                self._trace_nodes.pop(data.trace_id, None)
                self._dirty = True
                if not self._store_failed:
                    try:
                        self._journal.end(data, started, {message_id for message_id, _ in recorded})
                        self._journal_stats()
                    except Exception as exc:
                        self._fail_store(exc)
                if span_operation(data) != sc.OP_INVOKE_AGENT:
                    return
                if data.parent_span_id is None:
                    self._open_runs = max(0, self._open_runs - 1)
                    self._run_ended(data)
                elif self._checkpoint_due():
                    self.checkpoint()
            except Exception as exc:
                self._fail_store(exc)

    def shutdown(self) -> None:
        self.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    # ------------------------------------------------------------------ listener
    def _scrub(self, span: SpanData) -> SpanData:
        # The reader scrubbed credentials (and redacted secrets with --redacted-save, which drops contents too).
        return redact_span_contents(span) if self.redact_contents else span

    def on_record(self, span: trace.Span, record: Mapping[str, Any], ts_ns: int) -> None:
        if self.redact_contents:
            record = redact_record_contents(redact(record))
        with self._lock:
            if self._store_failed or self._closed:
                return
            try:
                context = span.get_span_context()
                if context.is_valid and context.trace_id not in self._traces:
                    return  # another session's span
                trace_id = hex_trace_id(context.trace_id) if context.is_valid else None
                span_id = hex_span_id(context.span_id) if context.is_valid else None
                self._events.append(record, ts_ns, trace_id, span_id)
                if context.is_valid:
                    # Written here, so the span's end line leaves this event out.
                    self._recorded.setdefault(context.span_id, set()).add((record.get("message_id"), ts_ns))
                self.stats.event_lines += 1
            except Exception as exc:
                self._fail_store(exc)

    def on_log(self, span: trace.Span, level: str, message: str, ts_ns: int) -> None:
        """Log lines are span events: the journal gets them with their span's end."""

    # ------------------------------------------------------------------ tree
    def spans(self) -> list[SpanData]:
        """Every span of the session known so far: saved ones (resume), finished, open."""
        with self._lock:
            return (
                list(self._base)
                + list(self._finished.values())
                + [self._scrub(self._reader.read(s)) for s in self._open.values()]
            )

    def tree(self) -> dict[str, Any]:
        """The live tree: every span seen so far, open ones marked in progress.

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
            spans = self._trace_spans.get(trace_id, []) + [self._scrub(self._reader.read(self._open[i])) for i in open_ids]
            part = build_tree(spans, self.session_id)
            nodes = (part["runs"], part["ops"])
            if not open_ids:
                self._trace_nodes[trace_id] = nodes
        return nodes

    def _checkpoint_due(self) -> bool:
        return self.policy.due(self._appended() - self._appended_at_checkpoint,
                               self._saved_bytes + self._appended_at_checkpoint)

    def _appended(self) -> int:
        return self._journal.bytes_written + self._events.bytes_written

    def checkpoint(self, tree: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Write tree.json.gz and meta.json now; returns the tree written (None if not written)."""
        with self._lock:
            if self._store_failed:
                return None
            try:
                tree = tree if tree is not None else self.tree()
                meta = self._meta(tree)
                written = self.store.save_tree(make_payload(tree, meta), encoder=self._tree_encoder)
                meta["checkpoint"] = checkpoint_mark(self.store)
                self._save_meta(meta)
                self._settle_tree(tree, meta)
            except Exception as exc:
                self._fail_store(exc)
                return None
            self.stats.checkpoints += 1
            self.stats.tree_json_compressed = self._tree_encoder.compressed_bytes
            self.stats.tree_bytes_written += written
            self.stats.last_tree_bytes = written
            self._appended_at_checkpoint = self._appended()
            self._dirty = False
            return tree

    def _run_started(self, root: SpanData) -> None:
        """meta.json says "running" from the last one written (building a tree here would cost a run's worth)."""
        base = self._settled if self._settled is not None else self._last_meta
        if base is None:
            self._write_meta()
            return
        meta = self._meta_now(dict(base))
        meta.pop("checkpoint", None)
        meta["runs"] = int(meta.get("runs") or 0) + 1
        meta["last_run"] = run_summary(
            {"index": root.attributes.get(sc.RUN_INDEX), "trace_id": root.trace_id, "span_id": root.span_id,
             "attributes": root.attributes},
            meta["runs"],
        )
        self._write_meta_dict(meta)

    def _run_ended(self, root: SpanData) -> None:
        # The journal already holds every span of the run, so the ledger need not wait
        # for a tree write, and the tree is written only when the policy says so.
        runs, ops = self._nodes_of(root.trace_id)
        run_tree = assemble_session(self.session_id, runs, ops)
        run = next((r for r in run_tree["runs"] if r["span_id"] == root.span_id), None)
        if run is not None:
            self._flush_ledger(ledger_records(run_tree, runs=[run["index"]]))
        self._settle_run(root, run_tree)
        if self.defer_run_end_writes:
            self._run_end_due = True
        else:
            self._write_after_run()

    def _write_after_run(self) -> None:
        self._run_end_due = False
        if self._checkpoint_due():
            self.checkpoint()
        elif self._settled is None or (self._changed_traces and not self._open_runs):
            self._write_meta()  # not known from the runs alone, or something else happened since
        elif not self._open_runs:
            self._write_meta_dict(self._meta_now(dict(self._settled)))
        # else a run began meanwhile (a recorder process writes later): its start wrote
        # meta.json from the settled runs, this one included

    # A run's end costs its own run, not the session: meta.json comes from the runs
    # before it (settled) and this run. Building the whole tree at each run's end made a
    # session of many runs quadratic, and a resumed large session paid its whole tree.
    def _settle(self, meta: Mapping[str, Any], end_ns: int) -> None:
        self._settled = {k: v for k, v in meta.items() if k != "checkpoint"}
        self._settled_end_ns = end_ns
        self._changed_traces.clear()

    def _settle_tree(self, tree: Mapping[str, Any], meta: Mapping[str, Any]) -> None:
        """``meta``: made from ``tree``, the whole session; settled only while no run is open."""
        ended = tree.get("ended_ns")
        if self._open_runs == 0 and isinstance(ended, int):
            self._settle(meta, ended)
        else:
            self._settled = None

    def _settle_run(self, root: SpanData, run_tree: Mapping[str, Any]) -> None:
        settled, self._settled = self._settled, None
        if (
            settled is None
            or self._open_runs
            or self._changed_traces != {root.trace_id}  # nothing but this run since
            or root.start_ns <= self._settled_end_ns  # began after the settled runs' entries
            or root.end_ns is None
        ):
            return
        meta = meta_after_run(settled, run_tree)
        if meta is not None:
            self._settle(meta, root.end_ns)

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
            if self._ledger_caught_up or self.billing_file is None or self._billing_failed or self._append_ledger:
                return False
            ledger = self._ledger_appender()
            try:
                self._ledger_caught_up = ledger.read_ahead(LEDGER_READ_AHEAD_BYTES)
            except OSError:
                self._ledger_caught_up = True  # the append at the run's end says what is wrong
            self.stats.ledger_bytes_read = ledger.bytes_read
            return not self._ledger_caught_up

    def _flush_ledger(self, records: list[dict]) -> None:
        if self.billing_file is None or self._billing_failed or not records:
            return
        try:
            if self._append_ledger is not None:
                written = self._append_ledger(self.billing_file, records)
            else:
                ledger = self._ledger_appender()
                written = ledger.append(records)
                self.stats.ledger_bytes_read = ledger.bytes_read
                self._ledger_caught_up = False  # others may append before the next run's end
            self.stats.ledger_records_written += written
        except Exception as exc:
            self._billing_failed = True
            self.warn(
                f"cannot append to the billing ledger {self.billing_file}: {_reason(exc)}; "
                "the run goes on (`otel-agents sessions repair` bills them later)"
            )

    def _ledger_appender(self) -> LedgerAppender:
        if self._ledger is None:
            from otel_agents.persistence.ledger import LedgerAppender

            self._ledger = LedgerAppender(self.billing_file)
        return self._ledger

    def _meta(self, tree: Mapping[str, Any]) -> dict[str, Any]:
        meta = make_meta(tree, created_ns=self.created_ns, updated_ns=time.time_ns(), running=self._open_runs > 0)
        return self._meta_now(meta)

    def _meta_now(self, meta: dict[str, Any]) -> dict[str, Any]:
        """What only this recorder knows: running or not, redacted contents, the ledger complete."""
        running = self._open_runs > 0
        meta["updated"] = iso_ts(time.time_ns())
        meta["writer"] = (self.writer or this_writer()) if running else None
        if running:
            meta["status"] = "running"
        if self.redact_contents:
            meta["redacted"] = True
        # Every run in it is in the ledger: a resume need not derive the ledger records again.
        meta["billed"] = (
            self._open_runs == 0 and self.billing_file is not None and not self._billing_failed and self._base_billed
        )
        return meta

    def _save_meta(self, meta: dict[str, Any]) -> None:
        self.stats.meta_bytes_written += self.store.write_meta(meta, durable=False)
        self.stats.meta_writes += 1
        self._last_meta = meta

    def _write_meta_dict(self, meta: dict[str, Any]) -> None:
        if self._store_failed:
            return
        try:
            self._save_meta(meta)
        except Exception as exc:
            self._fail_store(exc)

    def _write_meta(self, tree: Mapping[str, Any] | None = None) -> None:
        if self._store_failed:
            return
        try:
            tree = tree if tree is not None else self.tree()
            meta = self._meta(tree)
            self._save_meta(meta)
            self._settle_tree(tree, meta)
        except Exception as exc:
            self._fail_store(exc)

    @property
    def saved_everything(self) -> bool:
        """Nothing failed to be written: the session directory and the ledger hold the whole session."""
        return not (self._store_failed or self._billing_failed)

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

    def _names_session(self, attributes: Mapping[str, Any]) -> bool:
        value = attributes.get(sc.SESSION_ID) or attributes.get(sc.GEN_AI_CONVERSATION_ID)
        return value == self.session_id

    def _fail_store(self, exc: BaseException) -> None:
        if self._store_failed:
            return
        self._store_failed = True
        self.warn(
            f"cannot save session {self.session_id} in {self.store.directory}: {_reason(exc)}; "
            "the run goes on without saving it"
        )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}" + (f" ({exc.filename})" if exc.filename else "")
    return f"{type(exc).__name__}: {exc}"
