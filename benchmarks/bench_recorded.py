"""A large saved session in the format the recorder writes, made from a real recorded one.

Running the scripted runtime for 100,000 transcript entries would take minutes,
so a real session is recorded once (:mod:`bench_instrumentation` captures every
instrumentation call in order) and its runs are repeated, continued by the same
agents, until the transcripts sum to the entries wanted. Each repeat gets new
trace and span ids, later times, later run indexes and shifted message ids
(``cause``, ``substance`` and message-id attributes follow), and leaves out the
agent creations the agents already had. A chat span's context count grows by the
entries its agent gained in the copies before, so ``view context`` rebuilds every
call's context from the records, as in a session recorded whole. The files are
written with the persistence layer's own line encoders: ``events.jsonl``, the
``spans.jsonl`` journal and, rebuilt from them by ``load_saved`` once before
timing, ``tree.json.gz`` and ``meta.json``: what resume and the views read in a session
recorded by this version.
"""

from __future__ import annotations

import random
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench_instrumentation import Capture
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import message_id_number
from otel_agents.tracing.spandata import KIND_NAMES, STATUS_NAMES, EventData, SpanData

_MESSAGE_ID = re.compile(r"^msg_(\d+)$")


@dataclass
class RecordedSession:
    directory: Path
    entries: int  # transcript entries, truncations not applied (there are none)
    records: int
    spans: int
    runs: int
    repeats: int


def _shift_id(value: Any, offset: int) -> Any:
    if isinstance(value, str):
        match = _MESSAGE_ID.match(value)
        return f"msg_{int(match.group(1)) + offset:06d}" if match else value
    if isinstance(value, list):
        return [_shift_id(v, offset) for v in value]
    return value


def _shift_attributes(attributes: dict[str, Any], offset: int, runs_before: int) -> dict[str, Any]:
    out = {k: _shift_id(v, offset) for k, v in attributes.items()}
    if sc.RUN_INDEX in out:
        out[sc.RUN_INDEX] = out[sc.RUN_INDEX] + runs_before
    out.pop(sc.RESUMED_FROM, None)  # links between runs are left out
    return out


def _entries_per_copy(capture: Capture) -> dict[str, int]:
    """Agent id -> transcript entries each later copy adds (those recorded outside create_agent spans)."""
    creations = {number for kind, number, payload, _ in capture.actions
                 if kind == "start" and payload[3].get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CREATE_AGENT}
    counts: dict[str, int] = {}
    for kind, number, payload, _ in capture.actions:
        if kind == "record" and number not in creations and payload["event_type"] == sc.EVENT_TRANSCRIPT_ENTRY:
            counts[payload["agent_id"]] = counts.get(payload["agent_id"], 0) + 1
    return counts


def _continued_context(attributes: dict[str, Any], copy: int, per_copy: dict[str, int]) -> dict[str, Any]:
    agent = attributes.get(sc.CONTEXT_AGENT_ID)
    if copy and agent is not None and sc.CONTEXT_MESSAGE_COUNT in attributes:
        # Agents are created before they speak, so the entries left out precede every context.
        attributes[sc.CONTEXT_MESSAGE_COUNT] += copy * per_copy.get(agent, 0)
    return attributes


def write_recorded_session(capture: Capture, entries: int, sessions_dir: Path, seed: int = 5) -> RecordedSession:
    """Repeat the captured session's runs until its transcripts hold at least ``entries`` entries."""
    from otel_agents.persistence.events_file import encode_line
    from otel_agents.persistence.journal import context_line, encode, end_line, start_line

    rng = random.Random(seed)
    records = [p for kind, _, p, _ in capture.actions if kind == "record"]
    message_span = max(message_id_number(r["message_id"]) for r in records)
    times = [ts for *_, ts in capture.actions if ts]
    duration = max(times) - min(times) + 1_000_000
    runs = sum(1 for kind, _, p, _ in capture.actions if kind == "start" and p[2] is None)
    per_copy = _entries_per_copy(capture)
    directory = Path(sessions_dir) / str(capture.session_id)
    directory.mkdir(parents=True, exist_ok=True)
    resource, scope = capture.resource, capture.scope
    total_entries = total_records = total_spans = 0
    with open(directory / "events.jsonl", "wb") as events_file, open(directory / "spans.jsonl", "wb") as journal:
        journal.write(encode(context_line(resource, scope)))
        copy = 0
        while copy == 0 or total_entries < entries:  # later copies create no agents: count as they come
            offset, later, runs_before = copy * message_span, copy * duration, copy * runs
            ids: dict[int, tuple[str, str]] = {}  # span number -> (trace id, span id)
            started: dict[int, SpanData] = {}
            logs: dict[int, list[EventData]] = {}
            skipped: set[int] = set()  # create_agent spans of agents that exist already
            lines: list[bytes] = []
            event_lines: list[bytes] = []
            for kind, number, payload, ts in capture.actions:
                if kind == "start":
                    name, span_kind, parent, attributes, _ = payload
                    if copy and attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CREATE_AGENT:
                        skipped.add(number)
                        continue
                    trace_id = ids[parent][0] if parent is not None else f"{rng.getrandbits(128) | 1:032x}"
                    ids[number] = (trace_id, f"{rng.getrandbits(64) | 1:016x}")
                    span = SpanData(
                        trace_id, ids[number][1], ids[parent][1] if parent is not None else None, name,
                        KIND_NAMES.get(span_kind, "INTERNAL"), ts + later, None,
                        _continued_context(_shift_attributes(attributes, offset, runs_before), copy, per_copy),
                        resource=resource, scope=scope,
                    )
                    started[number] = span
                    lines.append(encode(start_line(span)))
                    total_spans += 1
                elif kind == "record":
                    if number in skipped or (copy and payload["event_type"] == sc.EVENT_AGENT_CREATED):
                        continue
                    record = {k: _shift_id(v, offset) if k in ("message_id", "cause", "substance") else v
                              for k, v in payload.items()}
                    trace_id, span_id = ids[number]
                    event_lines.append(encode_line(record, ts + later, trace_id, span_id))
                    total_records += 1
                    total_entries += record["event_type"] == sc.EVENT_TRANSCRIPT_ENTRY
                elif kind == "log":
                    if number in skipped:
                        continue
                    level, message = payload
                    logs.setdefault(number, []).append(
                        EventData(sc.EVENT_LOG, ts + later, {sc.LOG_LEVEL: level, sc.LOG_MESSAGE: message}))
                else:
                    if number in skipped:
                        continue
                    changed, others, (code, description) = payload
                    begin = started.pop(number)
                    span_events = logs.pop(number, []) + [
                        EventData(n, t + later, _shift_attributes(a, offset, runs_before)) for n, a, t in others]
                    span_events.sort(key=lambda e: e.time_ns)
                    ended = SpanData(
                        begin.trace_id, begin.span_id, begin.parent_span_id, begin.name, begin.kind, begin.start_ns,
                        ts + later, {**begin.attributes, **_shift_attributes(changed, offset, runs_before)},
                        tuple(span_events), status=STATUS_NAMES.get(code, "UNSET"), status_message=description,
                        resource=resource, scope=scope,
                    )
                    lines.append(encode(end_line(ended, begin, set())))
            journal.write(b"".join(lines))
            events_file.write(b"".join(event_lines))
            copy += 1
    meta = directory / "meta.json"
    meta.unlink(missing_ok=True)
    (directory / "tree.json.gz").unlink(missing_ok=True)
    return RecordedSession(directory, total_entries, total_records, total_spans, copy * runs, copy)


def settle(directory: Path) -> None:
    """Load once and bill, as ``sessions show`` after a crash would: tree.json.gz and meta.json are
    rebuilt from the journal, and meta.json says the checkpoint is current and every run billed, as
    the recorder's own final checkpoint says."""
    from otel_agents.persistence.repair import flush_unbilled, mark_billed
    from otel_agents.persistence.saved import load_saved

    notes: list[str] = []
    artifacts = load_saved(directory, notes.append, owned=True, repair=True)
    if artifacts.tree is None or not (directory / "tree.json.gz").exists():
        raise RuntimeError(f"{directory} did not load as a recorded session: {notes}")
    with tempfile.TemporaryDirectory(prefix="settle-ledger-") as ledger_dir:
        flush_unbilled(artifacts.tree, Path(ledger_dir) / "billing.jsonl")
    if not mark_billed(directory, artifacts.meta):
        raise RuntimeError(f"{directory}: the rebuilt checkpoint is not marked current")
    meta = orjson.loads((directory / "meta.json").read_bytes())
    if meta.get("status") not in {"ok", "error"}:
        raise RuntimeError(f"{directory}: unexpected meta status {meta.get('status')!r}")
