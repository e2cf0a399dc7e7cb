"""What hooks did to the records: utterances a review hook rejected or failed to judge, deliveries a transform hook rewrote."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from otel_agents.persistence.journal import JournalError, lines_mentioning
from otel_agents.persistence.timestamps import parse_iso_ts
from otel_agents.tracing import semconv as sc
from otel_agents.views.loading import JOURNAL_FILE, read_tree, span_nodes
from otel_agents.views.model import HookMark

REJECTED = "rejected"  # a review hook refused the utterance; the agent was told and answered again
REWRITTEN = "rewritten"  # a transform hook changed the text one recipient received
UNDELIVERED = "undelivered"  # a review hook failed on the utterance: never given, the response stopped


@dataclass(frozen=True)
class _HookEvent:
    span_id: str
    ts_ns: int
    kind: str
    name: str
    decision: str
    cause: str | None = None  # a review's: the utterance it judged (sessions saved before it was recorded: None)


def hook_events(tree: Mapping[str, Any] | None, tree_path: Path | None) -> list[_HookEvent]:
    """The review rejections and transform rewrites recorded on the session's spans."""
    return [e for e in _recorded(tree, tree_path) if _wanted(e)]


def hook_names(tree: Mapping[str, Any] | None, tree_path: Path | None) -> set[str]:
    """The name of every hook whose decision the session's spans recorded (a hook that never acted is not known)."""
    return {e.name for e in _recorded(tree, tree_path)}


def _recorded(tree: Mapping[str, Any] | None, tree_path: Path | None) -> Iterable[_HookEvent]:
    """Every hook decision recorded on the session's spans.

    A tree in memory answers; else the span journal, whose bytes are searched for the event's
    name so that only the lines holding one are parsed; else tree.json.gz. None of it: none.
    """
    if tree is None and tree_path is not None:
        journal = tree_path.with_name(JOURNAL_FILE)
        if journal.is_file():
            try:
                return list(_journal_events(journal))
            except JournalError:
                pass  # unreadable: the tree answers, as for chat contexts
        if tree_path.is_file():
            tree = read_tree(tree_path)
    if tree is None:
        return []
    return list(_tree_events(tree))


def _wanted(event: _HookEvent) -> bool:
    return (event.kind, event.decision) in (("review", "reject"), ("review", "error"), ("transform", "rewrite"))


def _event(span_id: Any, ts_ns: Any, attrs: Any) -> _HookEvent | None:
    if not isinstance(span_id, str) or not isinstance(ts_ns, int) or not isinstance(attrs, Mapping):
        return None  # a damaged line: no mark rather than a wrong one
    cause = attrs.get(sc.HOOK_CAUSE)
    return _HookEvent(span_id, ts_ns, str(attrs.get(sc.HOOK_KIND)), str(attrs.get(sc.HOOK_NAME) or "?"),
                      str(attrs.get(sc.HOOK_DECISION)), cause if isinstance(cause, str) else None)


def _journal_events(path: Path) -> Iterator[_HookEvent]:
    for line in lines_mentioning(path, sc.EVENT_HOOK):
        for item in line.get("events") or ():
            if isinstance(item, list) and len(item) == 3 and item[0] == sc.EVENT_HOOK:
                event = _event(line.get("end"), item[1], item[2])
                if event is not None:
                    yield event


def _tree_events(tree: Mapping[str, Any]) -> Iterator[_HookEvent]:
    for node in span_nodes(tree):
        for log in node.get("logs") or ():
            if isinstance(log, Mapping) and log.get("event") == sc.EVENT_HOOK:
                event = _event(node["span_id"], log.get("ts"), log.get("attributes"))
                if event is not None:
                    yield event


def hook_marks(events: list[_HookEvent], records: Iterable[Mapping[str, Any]],
               previous_entry: Any) -> dict[str, list[HookMark]]:
    """Entry message id -> the marks hooks left on it.

    A hook event carries no message id, but it is recorded on the span current when the hook
    was asked, and what it concerns is recorded on that same span right after it: a rewrite
    comes just before the rewritten delivery is logged (``Agent.inform``), a rejection just
    before the agent is told why (a system-sourced entry), whose previous entry in that agent's
    transcript is the rejected utterance (``previous_entry(message_id)``). So each event
    marks the first transcript entry of its span at or after its time.
    """
    if not events:
        return {}
    spans = {e.span_id for e in events}
    on_span: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for record in records:
        span_id = record.get("span_id")
        if span_id in spans and record.get("event_type") == sc.EVENT_TRANSCRIPT_ENTRY:
            ts = _ns(record.get("ts"))
            if ts is not None:
                on_span.setdefault(span_id, []).append((ts, record))
    marks: dict[str, list[HookMark]] = {}
    for event in sorted(events, key=lambda e: e.ts_ns):
        entry = next((r for ts, r in on_span.get(event.span_id, ()) if ts >= event.ts_ns), None)
        if entry is None:
            continue
        if event.kind == "transform":
            if entry.get("substance") is None:
                continue  # not a delivery of someone's words (a tool result told to the caller)
            mark = HookMark(REWRITTEN, event.name, entry["message_id"], entry.get("agent_id"))
        else:
            if entry.get("role") != "user" or entry.get("source") != "system":
                continue  # not the rejection (or failure) told to the agent: nothing to mark surely
            if event.decision == "error":  # named by every session that tells the agent of the failure
                if event.cause is None:
                    continue
                mark = HookMark(UNDELIVERED, event.name, event.cause, entry.get("agent_id"))
            else:
                # The event names the utterance it rejected; an older one is known by where it stands.
                rejected = event.cause or previous_entry(entry["message_id"])
                if rejected is None:
                    continue
                mark = HookMark(REJECTED, event.name, rejected, entry.get("agent_id"))
        found = marks.setdefault(mark.message_id, [])
        if mark not in found:
            found.append(mark)
    return marks


def _ns(ts: Any) -> int | None:
    if isinstance(ts, int) and not isinstance(ts, bool):
        return ts
    if isinstance(ts, str):
        try:
            return parse_iso_ts(ts)
        except ValueError:
            return None
    return None
