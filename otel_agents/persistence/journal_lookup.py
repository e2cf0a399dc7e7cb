"""One span of a saved session's journal (spans.jsonl), by span id or by the assistant entry it answered.

Only the lines that mention the key are parsed (``journal.lines_mentioning``), so a view
of one chat context costs its lines, not the session: at 100k entries decoding
tree.json.gz takes seconds and a gigabyte. Read-only; None whenever the journal cannot
say, and the caller asks the tree (tree_file.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from otel_agents.persistence.journal import JournalError, is_span_id, lines_mentioning
from otel_agents.tracing import semconv as sc


def span_from_journal(path: Path, key: str) -> dict[str, Any] | None:
    """A span as the tree holds it (``span_id``, ``name``, ``attributes`` at its end), from
    the span journal: by span id, or by the assistant entry it answered (a message id).

    Only the lines that mention the key are parsed. None when the journal cannot say
    (no such line, a damaged one, an unreadable file): the caller asks the tree.
    """
    key = key.strip()
    span_id = key.lower()
    try:
        if not is_span_id(span_id):
            span_id = next(  # set at the end as a rule; an imported span has it on its start line
                (line.get("end") or line.get("start") for line in lines_mentioning(path, key)
                 if ("start" in line or "end" in line) and line.get("attrs", {}).get(sc.RESPONSE_MESSAGE_ID) == key),
                None,
            )
            if span_id is None:
                return None
        start = end = None
        for line in lines_mentioning(path, span_id):
            if start is None and line.get("start") == span_id:
                start = line
            elif end is None and line.get("end") == span_id:
                end = line
            if start is not None and end is not None:
                break
    except JournalError:
        return None
    if start is None:
        return None
    # The end line holds what was set or changed since the start (persistence/journal.py).
    attributes = {**start.get("attrs", {}), **(end.get("attrs", {}) if end is not None else {})}
    return {"span_id": span_id, "name": start.get("name"), "attributes": attributes}


def tools_from_journal(path: Path, definitions_id: str) -> Any | None:
    """The tool definitions a chat span sent by id, from the first span of the journal that carried them."""
    try:
        for line in lines_mentioning(path, definitions_id):
            attributes = line.get("attrs", {})
            if attributes.get(sc.REQUEST_TOOLS_ID) == definitions_id and attributes.get(sc.REQUEST_TOOLS) is not None:
                return attributes[sc.REQUEST_TOOLS]
    except JournalError:
        return None
    return None
