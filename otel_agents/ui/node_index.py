"""A session tree as paged node rows: every span-carrying node once, its children in start order, totals per node."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from otel_agents.tracing import semconv as sc

# Tree statuses in the UI's words: a span still open is running; one whose writer died is interrupted and one
# ended by an interrupt (Ctrl-C) cancelled, as `sessions show` prints them; any other end but ok is an error.
_ROW_STATUS = {"ok": "ok", "in_progress": "running", "interrupted": "interrupted", "cancelled": "cancelled"}


@dataclass
class Entry:
    """One node of the tree with what its row needs that the node itself does not say."""

    node: dict[str, Any]
    kind: str
    parent: str | None
    agent_id: str | None
    agent: str | None
    children: list[str] = field(default_factory=list)
    self_tokens: int = 0
    self_cost: float | None = None
    tokens: int = 0  # inclusive
    cost: float | None = None  # inclusive
    retry_of: str | None = None


@dataclass
class NodeIndex:
    entries: dict[str, Entry]
    top: list[str]
    start_ns: int
    colors: dict[str, int]

    def children_of(self, parent: str | None) -> list[str]:
        return self.top if parent is None else self.entries[parent].children

    def ancestors(self, span_id: str) -> list[str]:
        out = []
        parent = self.entries[span_id].parent
        while parent is not None:
            out.append(parent)
            parent = self.entries[parent].parent
        return out[::-1]

    def row(self, span_id: str) -> dict[str, Any]:
        entry = self.entries[span_id]
        node = entry.node
        started, ended = node.get("started_ns"), node.get("ended_ns")
        attempt = (node.get("attributes") or {}).get(sc.LLM_ATTEMPT) if entry.kind == "llm" else None
        return {
            "id": span_id,
            "parent": entry.parent,
            "kind": entry.kind,
            "name": node.get("name"),
            "label": _label(entry),
            "agent": entry.agent,
            "agent_id": entry.agent_id,
            "status": _ROW_STATUS.get(str(node.get("status")), "error"),
            "outcome": node.get("status"),
            "error": node.get("error"),
            "start_ms": _ms(started - self.start_ns) if isinstance(started, int) else None,
            "duration_ms": _ms(ended - started) if isinstance(started, int) and isinstance(ended, int) else None,
            "child_count": len(entry.children),
            "attempt": attempt if isinstance(attempt, int) else None,
            "retry_of": entry.retry_of,
            "self": {"tokens": entry.self_tokens, "cost_usd": _money(entry.self_cost)},
            "inclusive": {"tokens": entry.tokens, "cost_usd": _money(entry.cost)},
        }


def _ms(ns: int) -> float:
    return round(ns / 1e6, 3)


def _money(cost: float | None) -> float | None:
    return None if cost is None else round(cost, 12)


def _label(entry: Entry) -> str:
    node = entry.node
    if entry.kind == "run":
        return f"run {node.get('index')}"
    if entry.kind == "turn":
        return str(node.get("path") or f"turn {node.get('index')}")
    return str(node.get("path") or node.get("name") or "?")


def agent_colors(tree: Mapping[str, Any]) -> dict[str, int]:
    """A small integer per agent, by creation order: the same in every view and every request."""
    agents = tree.get("agents") if isinstance(tree.get("agents"), Mapping) else {}
    return {agent_id: position for position, agent_id in enumerate(agents)}


def build_index(tree: Mapping[str, Any]) -> NodeIndex:
    """Every run, turn and operation; a sub-agent's session is folded into the operation that
    shares its span id (kind ``agent``). A stack, not recursion: sub-agent chains may be deep."""
    entries: dict[str, Entry] = {}
    top: list[str] = []
    runs = list(tree.get("runs") or [])
    starts = [n["started_ns"] for n in (*runs, *(tree.get("ops") or [])) if isinstance(n.get("started_ns"), int)]
    start_ns = tree.get("started_ns") if isinstance(tree.get("started_ns"), int) else (min(starts) if starts else 0)
    order: list[str] = []  # parents before children: reversed, it sums subtrees bottom-up
    # (node, kind, parent span id, session-like node owning it)
    work: list[tuple[dict, str, str | None, Mapping]] = [(run, "run", None, run) for run in runs]
    work += [(op, "op", None, tree) for op in tree.get("ops") or []]
    work.reverse()
    while work:
        node, kind, parent, session = work.pop()
        span_id = node.get("span_id")
        if not isinstance(span_id, str) or span_id in entries:
            continue
        sub = node.get("session") if kind == "op" else None
        if kind == "op":
            kind = "agent" if isinstance(sub, Mapping) else str(node.get("kind") or "span")
        owner = sub if isinstance(sub, Mapping) else session
        entry = Entry(node, kind, parent, session.get("agent_id"), session.get("agent_name"))
        if kind == "agent":
            entry.agent_id, entry.agent = sub.get("agent_id"), sub.get("agent_name")
        entries[span_id] = entry
        order.append(span_id)
        (top if parent is None else entries[parent].children).append(span_id)
        kids = [(op, "op", span_id, owner) for op in node.get("ops") or []]
        if kind == "agent":
            kids += [(op, "op", span_id, owner) for op in sub.get("ops") or []]
        if kind in ("run", "agent"):
            kids += [(turn, "turn", span_id, owner) for turn in owner.get("turns") or []]
        kids.sort(key=lambda item: item[0].get("started_ns") or 0)
        work.extend(reversed(kids))
    for span_id in reversed(order):
        entry = entries[span_id]
        entry.self_tokens, entry.self_cost = _own(entry.node)
        entry.tokens += entry.self_tokens
        entry.cost = _add(entry.cost, entry.self_cost)
        _mark_retries(entries, entry.children)
        if entry.parent is not None:
            parent_entry = entries[entry.parent]
            parent_entry.tokens += entry.tokens
            parent_entry.cost = _add(parent_entry.cost, entry.cost)
    _mark_retries(entries, top)
    return NodeIndex(entries, top, start_ns, agent_colors(tree))


def _own(node: Mapping[str, Any]) -> tuple[int, float | None]:
    """Tokens and cost of a node's own accounting entries (LLM attempts; tools cost nothing)."""
    tokens, cost = 0, None
    for entry in node.get("accounting") or ():
        counted = entry.get("tokens")
        if isinstance(counted, Mapping):
            tokens += int(counted.get("total") or 0)
        cost = _add(cost, billed(entry))
    return tokens, cost


def billed(entry: Any) -> Any:
    """An accounting entry's cost: 0 for a failed attempt without one (it billed nothing: the CLI's totals add
    nothing and count it in no unpriced calls, tree_totals.py); None only for a completed attempt without a price."""
    if not isinstance(entry, Mapping):
        return None
    cost = entry.get("cost_usd")
    failed = entry.get("type") == "llm" and entry.get("status") not in (None, "ok")
    return 0.0 if cost is None and failed else cost


def _add(total: float | None, cost: Any) -> float | None:
    if isinstance(cost, bool) or not isinstance(cost, (int, float)):
        return total
    return cost if total is None else total + cost


def _mark_retries(entries: dict[str, Entry], siblings: list[str]) -> None:
    """An LLM attempt after the first points at the attempt before it among its siblings."""
    previous = None
    for span_id in siblings:
        entry = entries[span_id]
        if entry.kind != "llm":
            continue
        attempt = (entry.node.get("attributes") or {}).get(sc.LLM_ATTEMPT)
        if isinstance(attempt, int) and attempt > 1 and previous is not None:
            entry.retry_of = previous
        previous = span_id
