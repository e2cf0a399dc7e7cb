"""A session's chat spans and tool definitions, found by id for chat contexts: the span journal first, the tree after."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from otel_agents.persistence.journal_lookup import span_from_journal, tools_from_journal
from otel_agents.tracing import semconv as sc
from otel_agents.views.errors import SessionDataError
from otel_agents.views.loading import JOURNAL_FILE, TREE_FILE, read_tree, span_nodes


class ChatSpans:
    """Span nodes by span id (or by the assistant entry a chat span answered) and tool definitions by id.

    With a session directory and no tree in memory, the journal answers first: it reads
    only the lines naming the key, where the tree would be decoded whole (seconds and a
    gigabyte at 100k entries). Otherwise, or when the journal lacks the key, the tree is
    read once (from ``tree_path`` unless given) and indexed once.
    """

    def __init__(self, tree: Mapping[str, Any] | None, tree_path: Path | None):
        self._tree = tree
        self._tree_path = tree_path  # read on first use: only ``context`` needs the tree
        self._spans: dict[str, dict[str, Any]] | None = None  # span id -> tree node, on first use
        self._tools: dict[str, Any] | None = None  # tool definitions by id, indexed with the spans

    def node(self, key: str) -> dict[str, Any] | None:
        journal = self._journal_path()
        if journal is not None:
            node = span_from_journal(journal, key)
            if node is not None:
                return node
        spans = self._index_tree_spans()
        return spans.get(key.strip()) or spans.get(key.strip().lower())

    def tool_definitions(self, definitions_id: str) -> Any | None:
        journal = self._journal_path()
        if journal is not None:
            tools = tools_from_journal(journal, definitions_id)
            if tools is not None:
                return tools
        self._index_tree_spans()  # not in the journal (or none): the tree's spans
        return (self._tools or {}).get(definitions_id)

    def _journal_path(self) -> Path | None:
        """The session's span journal, next to its tree (None for a viewer built from memory)."""
        if self._spans is not None or self._tree is not None or self._tree_path is None:
            return None  # a tree in memory is already decoded (or indexed): it answers at once
        path = self._tree_path.with_name(JOURNAL_FILE)
        return path if path.is_file() else None

    def _index_tree_spans(self) -> dict[str, dict[str, Any]]:
        if self._spans is None:
            if self._tree is None:
                if self._tree_path is None or not self._tree_path.exists():
                    raise SessionDataError(f"session has no {TREE_FILE}: the span tree is needed for chat contexts")
                self._tree = read_tree(self._tree_path)
            self._spans, self._tools = {}, {}
            for node in span_nodes(self._tree):
                attrs = node["attributes"]
                self._spans.setdefault(node["span_id"].lower(), node)
                response = attrs.get(sc.RESPONSE_MESSAGE_ID)
                if isinstance(response, str):
                    self._spans.setdefault(response, node)  # message ids never look like span ids
                # Tool definitions by id: each trace holds them once, on its first chat span that sent them.
                definitions_id, text = attrs.get(sc.REQUEST_TOOLS_ID), attrs.get(sc.REQUEST_TOOLS)
                if isinstance(definitions_id, str) and text is not None:
                    self._tools.setdefault(definitions_id, text)
        return self._spans


# What a chat span's context attributes must be (a hand-edited or damaged file may hold anything).
_CONTEXT_TYPES = (
    (sc.CONTEXT_AGENT_ID, str, "a string"),
    (sc.CONTEXT_MESSAGE_COUNT, int, "a whole number"),
    (sc.CONTEXT_LAST_MESSAGE_ID, str, "a string"),
    (sc.REQUEST_TOOLS_ID, str, "a string"),
    (sc.LLM_ATTEMPT, int, "a whole number"),
)


def check_context_attributes(span_id: str, attrs: Mapping[str, Any]) -> None:
    for key, kind, what in _CONTEXT_TYPES:
        value = attrs.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise SessionDataError(f"chat span {span_id}: {key} is {value!r}, not {what}")


def tool_schemas(span_id: str, tools: Any) -> Any:
    """The schemas a chat span sent, from their JSON text (a copy cut short in transit is named)."""
    if not isinstance(tools, str):
        return tools
    try:
        return json.loads(tools)
    except ValueError:
        raise SessionDataError(f"chat span {span_id}: its tool schemas are not whole JSON (cut short in transit?)") from None
