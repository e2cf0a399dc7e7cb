"""The span intake's durable state: spans held for a session not named yet, and sessions written but not settled.

A receiver acknowledges spans once they are on disk, also those it cannot write to a session
yet: they are appended to ``pending.jsonl`` (one OTLP/JSON document a line) and fsynced with
the journals. ``unsettled.jsonl`` names each session opened since the last clean stop, so a
start after ``kill -9`` writes their tree, meta.json and ledger records. Both files are
append-only while running and rewritten (atomically) only at start and stop; a torn last
line (a kill mid-write) is skipped when read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

import orjson

from otel_agents.persistence.private import make_private_dir, open_private_append
from otel_agents.tracing.otlp_decode import decode_otlp_json
from otel_agents.tracing.otlp_json import encode_resource_spans
from otel_agents.tracing.spandata import SpanData

PENDING = "pending.jsonl"
UNSETTLED = "unsettled.jsonl"


class IntakeState:
    """The two files under ``directory`` (made 0700); :meth:`sync` fsyncs what was appended since the last call."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        make_private_dir(self.directory)
        self.pending_path = self.directory / PENDING
        self.unsettled_path = self.directory / UNSETTLED
        self._dirty: set[Path] = set()

    def pending(self) -> list[SpanData]:
        """The spans held when the last process stopped (or died)."""
        return [span for doc in _lines(self.pending_path) for span in decode_otlp_json(doc, str(self.pending_path))]

    def hold(self, spans: list[SpanData]) -> None:
        if spans:
            self._append(self.pending_path, encode_resource_spans(spans))

    def unsettled(self) -> list[str]:
        """Sessions opened and not settled (closed) since the last clean stop."""
        return sorted({line["session"] for line in _lines(self.unsettled_path)
                       if isinstance(line, dict) and isinstance(line.get("session"), str)})

    def opened(self, session_id: str) -> None:
        self._append(self.unsettled_path, {"session": session_id})

    def rewrite_pending(self, held: Iterable[SpanData]) -> None:
        """The pending file holding only the spans still held."""
        held = list(held)
        _replace(self.pending_path, [encode_resource_spans(held)] if held else [])
        self._dirty.discard(self.pending_path)

    def rewrite_unsettled(self, open_sessions: Iterable[str]) -> None:
        """The unsettled file naming only the sessions still open."""
        _replace(self.unsettled_path, [{"session": s} for s in sorted(open_sessions)])
        self._dirty.discard(self.unsettled_path)

    def sync(self) -> None:
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
