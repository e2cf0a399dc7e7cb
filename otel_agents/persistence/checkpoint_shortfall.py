"""What tree.json.gz holds that a stream cut short (or restored from an older copy) lacks."""

from __future__ import annotations

from typing import Any, Mapping

from otel_agents.persistence.events_file import EventLine
from otel_agents.persistence.store import SessionStore
from otel_agents.persistence.tree_file import TREE_FILE
from otel_agents.persistence.tree_walk import iter_nodes, iter_records
from otel_agents.tracing.spandata import SpanData


def journal_shortfall(saved: Mapping[str, Any], spans: list[SpanData]) -> int:
    """How many spans of checkpoint ``saved`` the journal's ``spans`` (as read, open ones open) lack, or
    hold open while the checkpoint has them ended: 0 for a journal at least as complete as it, as a
    journal always is (it is flushed per line before any checkpoint), unless cut short or restored
    from an older copy."""
    ended = {span.span_id: span.end_ns is not None for span in spans}
    lacking = set()
    for _, node in iter_nodes(saved):
        span_id = node.get("span_id")
        held = ended.get(span_id)
        if held is None or (not held and node.get("ended_ns") is not None):
            lacking.add(span_id)
    return len(lacking)


def short_journal_problem(store: SessionStore, lacks: int) -> str:
    """The one line said of a journal shorter than its checkpoint."""
    return (f"{store.journal_path} is shorter than {TREE_FILE}: the journal lacks spans the checkpoint holds "
            f"({lacks} spans; cut short, or restored from an older copy)")


def events_shortfall(saved: Mapping[str, Any], lines: list[EventLine]) -> int:
    """How many records of checkpoint ``saved`` events.jsonl's ``lines`` lack: 0 for a stream at least as
    complete as it, as events.jsonl always is (flushed per line before any checkpoint), unless cut short
    or restored from an older copy. A torn last line whose record the checkpoint holds counts as held
    (the caller has put it back in ``lines``)."""
    held = {line.record.get("message_id") for line in lines}
    return len({ref.record.get("message_id") for ref in iter_records(saved)} - held)


def short_events_problem(store: SessionStore, lacks: int) -> str:
    """The one line said of an events.jsonl shorter than its checkpoint."""
    return (f"{store.events_path} lacks {lacks} records the checkpoint ({TREE_FILE}) holds "
            "(cut short, or restored from an older copy)")
