"""Reading a saved session directory: ``events.jsonl``, ``spans.jsonl`` and ``tree.json.gz``.

Only the parts the views need are assumed: events are one JSON record per line,
and chat spans are dicts with ``span_id`` and ``attributes`` somewhere in the
tree document, whatever the exact nesting. Without events.jsonl the records are
taken from the tree's span events (persistence.tree_walk.iter_records). One chat span
is looked up in the span journal first (persistence/journal_lookup.py), which reads
only its lines, rather than decoding the whole tree. An events.jsonl cut short (or restored
from an older copy) gives way to the checkpoint's records (``checkpoint_to_compare``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Mapping

import orjson

from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.views.errors import SessionDataError
from otel_agents.persistence.gc_pause import collector_paused

__all__ = [
    "JOURNAL_FILE", "TREE_FILE", "checkpoint_to_compare", "find_span", "records_lacking", "read_events", "read_event_file", "read_tree", "records_from_tree",
    "span_nodes",
]

# persistence.store.TREE_FILE and persistence.journal.JOURNAL_FILE, spelled out: importing the
# store (and the tree builder) costs ~30 ms that only ``context`` and tree-only sessions need
# (tests check they agree).
TREE_FILE = "tree.json.gz"
JOURNAL_FILE = "spans.jsonl"
EVENTS_FILE, META_FILE = "events.jsonl", "meta.json"


def checkpoint_to_compare(directory: Path) -> dict[str, Any] | None:
    """tree.json.gz's payload when events.jsonl may lack records it holds, else None (nothing to compare).

    Called before events.jsonl is read: a live writer appends to it before it checkpoints. meta.json's
    checkpoint mark (persistence.session_meta.checkpoint_mark) records events.jsonl's size when this
    tree.json.gz was written: while the tree is the one marked and events.jsonl is no smaller, the
    stream (only ever appended to) holds every record the tree does, and the tree is not decoded.
    """
    tree_path = directory / TREE_FILE
    tree_stamp = _stamp(tree_path)
    if tree_stamp is None:
        return None
    try:
        files = orjson.loads((directory / META_FILE).read_bytes())["checkpoint"]["files"]
        marked = files[TREE_FILE] == tree_stamp and _stamp(directory / EVENTS_FILE)[0] >= files[EVENTS_FILE][0]
    except (OSError, orjson.JSONDecodeError, LookupError, TypeError):
        marked = False
    if marked:
        return None
    try:
        return read_tree(tree_path)
    except SessionDataError:
        return None  # a damaged checkpoint holds nothing to compare: its readers say so


def records_lacking(checkpoint: Mapping[str, Any], held: Any, events: Path, warn: Warn) -> int:
    """How many records of ``checkpoint`` (a tree.json.gz payload) events.jsonl's records (``held``: their
    message ids, or a mapping keyed by them) lack; said through ``warn`` when any."""
    from otel_agents.persistence.tree_walk import iter_records

    session = checkpoint.get("session", checkpoint)
    if session.get("id") != events.parent.name:
        return 0  # another session's checkpoint: not this stream's to complete
    lacks = len({ref.record.get("message_id") for ref in iter_records(session)
                 if ref.record.get("message_id") not in held})
    if lacks:
        warn(f"{events} lacks {lacks} records the checkpoint ({TREE_FILE}) holds (cut short, or restored from an "
             "older copy); using tree.json.gz")
    return lacks


def _stamp(path: Path) -> list[int] | None:
    # session_meta's stamp, spelled out like the file names above: importing it costs a view ~27 ms
    # (tests check they agree).
    try:
        stat = path.stat()
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns]


def read_events(path: Path, warn: Warn = stderr_warning) -> list[dict[str, Any]]:
    """Lines of an events file (record plus ts/trace_id/span_id); a torn last line is skipped."""
    return read_event_file(path, warn)[0]


def read_event_file(path: Path, warn: Warn = stderr_warning) -> tuple[list[dict[str, Any]], list[bytes] | None]:
    """``read_events``, and the raw lines when each record is exactly ``orjson.loads`` of its line.

    Fast path: one ``orjson.loads`` per line. Anything unusual is handed to the
    persistence layer's reader, so warnings and errors read the same everywhere.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SessionDataError(f"cannot read {path}: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    try:
        with collector_paused():  # 100k fresh dicts: see persistence/gc_pause.py
            records = list(map(orjson.loads, lines))
        if _plain_records(records):
            return records, lines
    except orjson.JSONDecodeError:
        pass
    return _read_slowly(path, warn), None


def _plain_records(records: list[Any]) -> bool:
    """Every record a dict whose message_id, event_type and agent_id are strings, whose substance and
    cause are message ids (what the indexes key on), every transcript entry with a role (what a
    message is rebuilt from), and every ``agent_created`` record valid as a whole (a few per
    session, read by every view). Types only: ``validate_record`` checks the id pattern, and
    anything these do not pass takes the validating reader."""
    from otel_agents.tracing.records import ROLES, RecordError, validate_record

    for r in records:
        if not (
            isinstance(r, dict)
            and isinstance(r.get("message_id"), str)
            and isinstance(r.get("event_type"), str)
            and isinstance(r.get("agent_id"), str)
            and _is_str_or_none(r.get("substance"))
            and (_is_str_or_none(cause := r.get("cause")) or _is_str_list(cause))
            and (r["event_type"] != "transcript_entry" or (type(role := r.get("role")) is str and role in ROLES))
        ):
            return False
        if r["event_type"] == "agent_created":
            try:
                validate_record(r)
            except RecordError:
                return False
    return True


def _is_str_or_none(value: Any) -> bool:
    return value is None or type(value) is str


def _is_str_list(value: Any) -> bool:
    return type(value) is list and bool(value) and all(type(v) is str for v in value)


def _read_slowly(path: Path, warn: Warn) -> list[dict[str, Any]]:
    from otel_agents.persistence.events_file import EventsFileError, read_event_lines

    try:
        slow = read_event_lines(path, warn)
    except EventsFileError as exc:
        raise SessionDataError(str(exc)) from None
    return [{**line.record, "ts": line.ts, "trace_id": line.trace_id, "span_id": line.span_id} for line in slow]


def read_tree(path: Path) -> dict[str, Any]:
    """The ``tree.json.gz`` payload ``{"version", "session", "meta"}``, decoded and checked by persistence's one decoder."""
    from otel_agents.persistence.tree_file import StoreError, read_payload

    try:
        return read_payload(path)
    except StoreError as exc:
        raise SessionDataError(str(exc)) from None


def span_nodes(document: Any) -> Iterator[dict[str, Any]]:
    """Every node with span data (runs, turns, operations, sub-agent sessions) of a session
    tree or of a tree.json.gz payload holding one.

    It follows the tree's shape rather than every dict in it (attributes, records,
    accounting): at 100k entries that walk took as long as decoding the file.
    """
    from otel_agents.persistence.tree_walk import iter_nodes

    if not isinstance(document, Mapping):
        return
    session = document.get("session")
    if "version" in document and isinstance(session, Mapping):
        document = session
    for _, node in iter_nodes(document):
        if (isinstance(node, Mapping) and isinstance(node.get("span_id"), str)
                and isinstance(node.get("attributes"), Mapping)):
            yield node


def find_span(document: Any, span_id: str) -> dict[str, Any] | None:
    wanted = span_id.strip().lower()
    for node in span_nodes(document):
        if node["span_id"].lower() == wanted:
            return node
    return None


def records_from_tree(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Records (with the line fields) from the span events a tree holds, when no events file exists.

    Spans are the state: every record is also a span event on the span it concerns.
    """
    from otel_agents.persistence.timestamps import iso_ts
    from otel_agents.persistence.tree_walk import iter_records

    session = document.get("session", document)
    return [
        {**ref.record, "ts": iso_ts(ref.ts_ns), "trace_id": ref.trace_id, "span_id": ref.span_id}
        for ref in iter_records(session)
    ]
