"""Reading a saved session directory: ``events.jsonl`` and ``tree.json.gz``.

Only the parts the views need are assumed: events are one JSON record per line,
and chat spans are dicts with ``span_id`` and ``attributes`` somewhere in the
tree document, whatever the exact nesting. Without events.jsonl the records are
taken from the tree's span events (persistence.tree.iter_records).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Mapping

import orjson

from otel_agents.persistence.events_file import EventsFileError, read_event_lines
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.store import TREE_FILE, StoreError, decode_payload
from otel_agents.persistence.timestamps import iso_ts
from otel_agents.persistence.tree import iter_records
from otel_agents.views.errors import SessionDataError
from otel_agents.views.index import collector_paused

__all__ = ["TREE_FILE", "find_span", "read_events", "read_tree", "records_from_tree", "span_nodes", "walk_dicts"]


def read_events(path: Path, warn: Warn = stderr_warning) -> list[dict[str, Any]]:
    """Lines of an events file (record plus ts/trace_id/span_id); a torn last line is skipped.

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
        with collector_paused():  # 100k fresh dicts: see index.collector_paused
            records = [orjson.loads(line) for line in lines]
        # The fast path checks what the indexes key on; anything odd takes the full reader.
        if all(
            isinstance(r, dict)
            and isinstance(r.get("message_id"), str)
            and isinstance(r.get("event_type"), str)
            and isinstance(r.get("agent_id"), str)
            for r in records
        ):
            return records
    except orjson.JSONDecodeError:
        pass
    try:
        slow = read_event_lines(path, warn)
    except EventsFileError as exc:
        raise SessionDataError(str(exc)) from None
    return [{**line.record, "ts": line.ts, "trace_id": line.trace_id, "span_id": line.span_id} for line in slow]


def read_tree(path: Path) -> dict[str, Any]:
    """The ``tree.json.gz`` payload ``{"version", "session", "meta"}``, checked as the store checks it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SessionDataError(f"{path} does not exist") from None
    except OSError as exc:
        raise SessionDataError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        with collector_paused():
            return decode_payload(data, str(path))
    except StoreError as exc:
        raise SessionDataError(str(exc)) from None


def walk_dicts(document: Any) -> Iterator[dict[str, Any]]:
    """Every dict in a JSON document, in document order (iterative: trees can be deep)."""
    if not isinstance(document, (dict, list)):
        return
    containers = (dict, list)
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            yield value
            stack.extend([v for v in value.values() if isinstance(v, containers)][::-1])
        else:
            stack.extend([v for v in value if isinstance(v, containers)][::-1])


def span_nodes(document: Any) -> Iterator[dict[str, Any]]:
    for node in walk_dicts(document):
        if isinstance(node.get("span_id"), str) and isinstance(node.get("attributes"), Mapping):
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
    session = document.get("session", document)
    return [
        {**ref.record, "ts": iso_ts(ref.ts_ns), "trace_id": ref.trace_id, "span_id": ref.span_id}
        for ref in iter_records(session)
    ]
