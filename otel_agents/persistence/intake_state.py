"""The span intake's durable state: spans held for a session not named yet, and sessions written but not settled.

A receiver acknowledges spans once they are on disk, also those it cannot write to a session
yet: they are appended to ``pending.jsonl`` (one OTLP/JSON document a line, with ``heldAt``:
the wall-clock second its trace was first held, so a restart keeps the trace's age) and fsynced
with the journals. A trace no longer held (written to its session, or dropped) gets a line
``{"released": trace_id}``, appended when the session's lines were fsynced, so a restart after
``kill -9`` neither holds its spans again nor counts them ignored a second time. ``unsettled.jsonl`` names each session opened since the last clean stop, so
a start after ``kill -9`` writes their tree, meta.json and ledger records. Both files are
append-only while running and rewritten (atomically) at start and stop; ``pending.jsonl`` also
when it holds more than :class:`HoldPolicy` allows (compaction). A torn last line (a kill
mid-write) is skipped when read.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Iterable

import orjson

from pydantic import BaseModel, ConfigDict, Field, field_validator

from otel_agents.persistence.private import make_private_dir, open_private_append
from otel_agents.tracing.otlp_decode import decode_otlp_json
from otel_agents.tracing.otlp_json import encode_resource_spans
from otel_agents.tracing.spandata import SpanData

PENDING = "pending.jsonl"
UNSETTLED = "unsettled.jsonl"
Held = tuple[float, list[SpanData]]  # (when its trace was first held, wall-clock seconds; its spans)


class HoldPolicy(BaseModel):
    """How long a trace that names no session is held, and when ``pending.jsonl`` is compacted.

    Bound: a trace none of whose spans names an otel-agents session is dropped (its spans
    counted as ignored) ``unnamed_hold_seconds`` after its first span came, so memory holds at
    most the unnamed spans that came in that window. ``pending.jsonl`` is rewritten with only
    the spans still held once it has more than twice as many plus ``compact_min_spans``, so it
    stays within that too (amortised: each span is rewritten at most about once per expiry).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    unnamed_hold_seconds: float = Field(default=300.0, ge=0)
    compact_min_spans: int = Field(default=1024, ge=0)

    @field_validator("unnamed_hold_seconds")
    @classmethod
    def _finite(cls, value: float) -> float:
        # A validator, not allow_inf_nan, as EvictionPolicy does: that constraint's repr differs between pydantic releases.
        if not math.isfinite(value):
            raise ValueError("unnamed_hold_seconds must be a finite number of seconds")
        return value


class IntakeState:
    """The two files under ``directory`` (made 0700); :meth:`sync` fsyncs what was appended since the last call."""

    def __init__(self, directory: Path, policy: HoldPolicy = HoldPolicy()):
        self.directory = Path(directory)
        self.policy = policy
        make_private_dir(self.directory)
        self.pending_path = self.directory / PENDING
        self.unsettled_path = self.directory / UNSETTLED
        self._dirty: set[Path] = set()
        self._pending_spans = 0  # spans in pending.jsonl (held or not any more): what compaction looks at
        self._in_file: set[str] = set()  # traces with spans in pending.jsonl and no released line after them
        self._released: list[str] = []  # of those, released since the last sync: their lines go in at the next

    def pending(self) -> tuple[list[SpanData], dict[str, float]]:
        """The spans held when the last process stopped (or died), and when each of their traces was first held."""
        spans: dict[str, list[SpanData]] = {}
        since: dict[str, float] = {}
        for doc in _lines(self.pending_path):
            if isinstance(doc, dict) and isinstance(doc.get("released"), str):
                spans.pop(doc["released"], None)  # written (or dropped) after the lines before: not held
                since.pop(doc["released"], None)
                continue
            held_at = doc.get("heldAt") if isinstance(doc, dict) else None
            for span in decode_otlp_json(doc, str(self.pending_path)):
                spans.setdefault(span.trace_id, []).append(span)
                if isinstance(held_at, (int, float)):  # a line without it (older): its age counts from now
                    since[span.trace_id] = min(float(held_at), since.get(span.trace_id, float(held_at)))
        self._in_file = set(spans)
        return [span for trace in spans.values() for span in trace], since

    def hold(self, held: Iterable[Held]) -> None:
        """Append each trace's newly held spans, stamped with when that trace was first held."""
        for held_at, spans in held:
            if spans:
                self._append(self.pending_path, {**encode_resource_spans(spans), "heldAt": held_at})
                self._pending_spans += len(spans)
                self._in_file.update(span.trace_id for span in spans)

    def released(self, trace_id: str) -> None:
        """The trace is held no more: noted at the next :meth:`sync`, after the session's lines were fsynced."""
        if trace_id in self._in_file:
            self._in_file.discard(trace_id)
            self._released.append(trace_id)

    def compact_due(self, held_spans: int) -> bool:
        """More than twice the spans still held plus ``compact_min_spans`` are in the file (a released line counts one)."""
        return self._pending_spans + len(self._released) > 2 * held_spans + self.policy.compact_min_spans

    def unsettled(self) -> list[str]:
        """Sessions opened and not settled (closed) since the last clean stop."""
        return sorted({line["session"] for line in _lines(self.unsettled_path)
                       if isinstance(line, dict) and isinstance(line.get("session"), str)})

    def opened(self, session_id: str) -> None:
        self._append(self.unsettled_path, {"session": session_id})

    def rewrite_pending(self, held: Iterable[Held]) -> None:
        """The pending file holding only the spans still held (atomically, fsynced), one line per trace."""
        held = list(held)
        lines = [{**encode_resource_spans(spans), "heldAt": held_at} for held_at, spans in held if spans]
        _replace(self.pending_path, lines)
        self._pending_spans = sum(len(spans) for _, spans in held)
        self._in_file = {span.trace_id for _, spans in held for span in spans}
        self._released.clear()  # their spans are not in the new file
        self._dirty.discard(self.pending_path)

    def rewrite_unsettled(self, open_sessions: Iterable[str]) -> None:
        """The unsettled file naming only the sessions still open."""
        _replace(self.unsettled_path, [{"session": s} for s in sorted(open_sessions)])
        self._dirty.discard(self.unsettled_path)

    def sync(self) -> None:
        """fsync what was appended; the released lines first appended (callers fsync the sessions before)."""
        for trace_id in self._released:
            self._append(self.pending_path, {"released": trace_id})
            self._pending_spans += 1  # a line to compact away too
        self._released.clear()
        for path in self._dirty:
            fsync_path(path)
        self._dirty.clear()

    def _append(self, path: Path, value: Any) -> None:
        with open_private_append(path) as handle:
            handle.write(orjson.dumps(value) + b"\n")
        self._dirty.add(path)


def fsync_path(path: Path) -> None:
    """fsync a file written through another descriptor (flushed already: the kernel has it); absent: nothing."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace(path: Path, values: list[Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open_private_append(tmp) as handle:
        handle.truncate(0)
        handle.write(b"".join(orjson.dumps(v) + b"\n" for v in values))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _lines(path: Path) -> list[Any]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out = []
    for raw in data.split(b"\n"):
        try:
            out.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue  # empty, or torn by a kill mid-write
    return out
