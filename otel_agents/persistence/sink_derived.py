"""The session sink's derived files: tree.json.gz checkpoints (when, how) and meta.json (from the settled runs)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping

from otel_agents.persistence.store import make_payload
from otel_agents.persistence.session_meta import (
    checkpoint_mark, closed_meta, created_ns_of, make_meta, meta_after_run, run_summary, this_writer,
)
from otel_agents.persistence.timestamps import iso_ts, parse_iso_ts
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData


@dataclass(frozen=True)
class CheckpointPolicy:
    """When a run ends, write the tree only if it grew enough, and never while a run is open.

    Rewriting the whole tree at every sub-agent or run end costs O(n^2) bytes
    over a session. Writing only once the tree has grown by ``growth`` times its
    size at the last write (measured from at least ``min_bytes``) makes the sizes
    of successive writes a geometric series: all checkpoints together cost at
    most ``(1 + growth) / growth`` times the final tree, plus the final write of
    ``close()``. The journal makes every finished span durable in between. Sizes
    are the bytes of spans.jsonl and events.jsonl, which grow as the tree does.
    Skipping a due write keeps the bound: the next write covers more, never less.

    ``growth`` 3 (a write once the streams are four times what the last one covered):
    half the checkpoints of doubling, and at most 1.33 times the final tree in all.

    ``during_runs`` False: no tree is written while a run is open (at a sub-agent's
    end, or at a run's end once the next run has begun). Such a checkpoint is stale
    at the next span, and readers of a session whose checkpoint is behind its
    streams rebuild from the journal (``saved.load_saved``), so it was never read:
    it cost the recorder a partial tree build and encoding for nothing. True keeps
    the old behaviour (a tool may read the tree mid-run; tests of the bound use it).
    """

    growth: float = 3.0
    min_bytes: int = 16_384
    during_runs: bool = False

    def due(self, pending: int, written: int, running: bool = False) -> bool:
        if running and not self.during_runs:
            return False
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


class DerivedFiles:
    """The derived-files half of :class:`~otel_agents.persistence.session_sink.SessionSink` (a mixin of it).

    A run's end costs its own run, not the session: meta.json comes from the runs
    before it (settled) and this run. Building the whole tree at each run's end made a
    session of many runs quadratic, and a resumed large session paid its whole tree.
    """

    def __init__(self) -> None:
        self._last_meta: dict[str, Any] | None = None  # the last meta.json written (or found, on resume)
        # make_meta of every run so far, exactly, while no run is open: a run's end adds its own
        # run to it (meta_after_run) instead of building the whole session's tree each time.
        self._settled: dict[str, Any] | None = None
        self._settled_end_ns = 0  # no entry of the settled runs completed after this
        self._base_billed = True  # resume: whether the earlier runs were all in the ledger

    @staticmethod
    def _created_ns_of(meta: Mapping[str, Any]) -> int | None:
        return created_ns_of(meta)

    def _settle_from_meta(self, meta: Mapping[str, Any]) -> None:
        try:  # meta.json was written after its runs had ended: no entry of them is later
            self._settle(meta, parse_iso_ts(meta["updated"]))
        except (KeyError, TypeError, ValueError):
            pass

    def _checkpoint_due(self) -> bool:
        return self.policy.due(self._appended() - self._appended_at_checkpoint,
                               self._saved_bytes + self._appended_at_checkpoint, running=self._open_runs > 0)

    def _appended(self) -> int:
        return self._journal.bytes_written + self._events.bytes_written

    def checkpoint(self, tree: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Write tree.json.gz and meta.json now; returns the tree written (None if not written)."""
        with self._lock:
            if self._store_failed:
                return None
            self._flush_streams()  # the mark below must cover every line handed over so far
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

    def _write_after_run(self) -> None:
        self._run_end_due = False
        if self._checkpoint_due():
            self.checkpoint()
        elif self._open_runs:
            pass  # a run began meanwhile (a recorder process writes later): its start wrote meta.json
            # from the settled runs, this one included; a summary built now would cover a partial run
        elif self._settled is None or self._changed_traces:
            self._write_meta()  # not known from the runs alone, or something else happened since
        else:
            self._write_meta_dict(self._meta_now(dict(self._settled)))

    def _settle(self, meta: Mapping[str, Any], end_ns: int) -> None:
        self._settled = {k: v for k, v in meta.items() if k != "checkpoint"}
        self._settled_end_ns = end_ns
        self._changed_traces.clear()

    def _settle_tree(self, tree: Mapping[str, Any], meta: Mapping[str, Any]) -> None:
        """``meta``: made from ``tree``, the whole session; settled only while no run is open.

        A checkpoint while a run is open leaves the settled runs as they were: they are
        still every run before it, and ``_settle_run`` checks that nothing else changed.
        Forgetting them made the next run's end summarise the whole session's tree.
        """
        ended = tree.get("ended_ns")
        if self._open_runs == 0 and isinstance(ended, int):
            self._settle(meta, ended)
        elif self._open_runs == 0:
            self._settled = None

    def _settle_run(self, root: SpanData, run_tree: Mapping[str, Any]) -> None:
        settled, self._settled = self._settled, None
        if settled is None:
            if not self._open_runs and self.defer_run_end_writes:
                # Summarised now, while no run is open: a recorder process writes a run's end
                # later, when the next run may have begun, and then never settled (each run's
                # end summarised the whole session's tree). Inline, the write follows at once.
                tree = self.tree()
                self._settle_tree(tree, self._meta(tree))
            return
        if (
            self._open_runs
            or self._changed_traces != {root.trace_id}  # nothing but this run since
            or root.start_ns <= self._settled_end_ns  # began after the settled runs' entries
            or root.end_ns is None
        ):
            return
        meta = meta_after_run(settled, run_tree)
        if meta is not None:
            self._settle(meta, root.end_ns)

    def _meta(self, tree: Mapping[str, Any]) -> dict[str, Any]:
        now = time.time_ns()
        if self.live:
            meta = make_meta(tree, created_ns=self.created_ns, updated_ns=now, running=self._open_runs > 0)
        else:  # import: no process runs it, so a run that never ended is interrupted
            meta = closed_meta(tree, created_ns=self.created_ns, updated_ns=now)
        return self._meta_now(meta)

    def _meta_now(self, meta: dict[str, Any]) -> dict[str, Any]:
        """What only this writer knows: running or not, redacted contents, the ledger complete."""
        running = self._open_runs > 0 and self.live
        meta["updated"] = iso_ts(time.time_ns())
        meta["writer"] = (self.writer or this_writer()) if running else None
        if running:
            meta["status"] = "running"
        if self.redact_contents:
            meta["redacted"] = True
        # Every run in it is in the ledger: a resume need not derive the ledger records again.
        meta["billed"] = self._open_runs == 0 and self._billing.active and self._base_billed
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
