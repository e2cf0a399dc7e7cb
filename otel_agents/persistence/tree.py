"""The session tree (seed 002), built from spans by one pure function, and sessions assembled from runs."""

# ``build_tree(spans)`` turns plain SpanData (finished, or known only by their start)
# into the canonical tree. The live recorder, the importer and the loaders all call it,
# so the tree never depends on how the spans arrived. Walks over a built tree are in
# tree_walk.py, path labels in tree_paths.py, totals in tree_totals.py, the agents
# table in tree_agents.py, and what one span gives its node in tree_span_fields.py.
#
# Shape (docs/session-tree.md has the full description):
#
#   session   {id, trace_ids, agent_id, agent_name, call_path, started_ns, ended_ns,
#              status, success, error, attributes (ingress), totals, agents, runs, ops}
#   run/child {kind: "session", span_id, trace_id, index, agent_id, agent_name, call_path,
#              started_ns, ended_ns, status, error, attributes, events, logs, span_events,
#              links, otel, resource, turns, ops, totals}
#   turn      {kind: "turn", path, index, span_id, ..., ops, totals}
#   op        {kind: llm|tool|session|create_agent|span, path, span_id, name, ..., accounting,
#              reasoning, request, response, ops, session (kind session only)}

from __future__ import annotations

from typing import Any, Iterable, Mapping

from otel_agents.persistence.tree_kinds import (
    KIND_CREATE_AGENT, KIND_LLM, KIND_SESSION, KIND_SPAN, KIND_TOOL, KIND_TURN, STATUS_OK, session_status,
)
from otel_agents.persistence.tree_span_fields import (
    accounting_entries, op_status, own_status, propagate, reasoning_of, request_of, response_of, session_id_of,
    span_operation, split_events, subject_of,
)
from otel_agents.persistence.tree_totals import Sums, entries_under, fold_totals, session_entries
from otel_agents.persistence.tree_agents import agents_table
from otel_agents.persistence.tree_paths import assign_paths
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData

_INGRESS_PREFIXES = ("otel_agents.run.",)
_INGRESS_KEYS = frozenset({sc.RESUMED_FROM, sc.SESSION_ID, sc.GEN_AI_CONVERSATION_ID})


def group_by_session(spans: Iterable[SpanData]) -> dict[str | None, list[SpanData]]:
    """Spans by the session their trace belongs to (None: no span of the trace names one).

    A trace's session is the id on its root span, else the first id found on any span.
    """
    spans = list(spans)
    by_trace: dict[str, str] = {}
    for span in sorted(spans, key=lambda s: (s.parent_span_id is not None, s.start_ns)):
        sid = session_id_of(span)
        if sid and span.trace_id not in by_trace:
            by_trace[span.trace_id] = sid
    groups: dict[str | None, list[SpanData]] = {}
    for span in spans:
        groups.setdefault(by_trace.get(span.trace_id), []).append(span)
    return groups


def build_tree(spans: Iterable[SpanData], session_id: str | None = None) -> dict[str, Any]:
    """The session node for these spans (all of them: filter with :func:`group_by_session`).

    Pure: the same spans give the same tree, whatever order they come in.
    """
    return assemble_session(*build_nodes(spans, session_id))


def build_nodes(spans: Iterable[SpanData], session_id: str | None = None) -> tuple[str | None, list[dict], list[dict]]:
    """``(session id, run nodes, operation nodes)`` of these spans, not yet assembled: a writer
    that assembles several traces' nodes into one session summarises once, not once per trace."""
    index: dict[str, SpanData] = {}
    for span in spans:
        known = index.get(span.span_id)
        # The same span twice (overlapping imports, live + finished): the finished copy wins.
        if known is None or (known.end_ns is None and span.end_ns is not None):
            index[span.span_id] = span
    children: dict[str, list[SpanData]] = {}
    roots: list[SpanData] = []
    for span in index.values():
        if span.parent_span_id and span.parent_span_id in index:
            children.setdefault(span.parent_span_id, []).append(span)
        else:
            roots.append(span)
    order = lambda s: (s.start_ns, s.span_id)  # noqa: E731
    for siblings in children.values():
        siblings.sort(key=order)
    roots.sort(key=order)
    builder = _Builder(children)
    runs = [builder.session_node(span) for span in roots if span_operation(span) == sc.OP_INVOKE_AGENT]
    ops = [dict(builder.op_node(span), trace_id=span.trace_id) for span in roots if span_operation(span) != sc.OP_INVOKE_AGENT]
    if session_id is None:
        for span in roots + sorted(index.values(), key=order):
            session_id = session_id_of(span)
            if session_id:
                break
    return session_id, runs, ops


def merge_trees(base: Mapping[str, Any], newer: Mapping[str, Any]) -> dict[str, Any]:
    """Runs of ``base`` plus those of ``newer`` (a run in both: newer wins), as one session.

    A resumed session keeps its earlier runs from the saved tree and adds the new ones.
    """
    runs = {run["span_id"]: run for run in base.get("runs", [])}
    runs.update({run["span_id"]: run for run in newer.get("runs", [])})
    ops = {op["span_id"]: op for op in base.get("ops", [])}
    ops.update({op["span_id"]: op for op in newer.get("ops", [])})
    return assemble_session(newer.get("id") or base.get("id"), list(runs.values()), list(ops.values()))


def assemble_session(session_id: str | None, runs: list[dict], ops: list[dict]) -> dict[str, Any]:
    """The session node around its runs: ordered, numbered, summarised."""
    runs = sorted(runs, key=lambda r: (r["started_ns"], r["span_id"]))
    numbered: list[dict] = []
    for ordinal, run in enumerate(runs, start=1):
        declared = run["attributes"].get(sc.RUN_INDEX)
        run = dict(run)
        run["index"] = int(declared) if isinstance(declared, int) and not isinstance(declared, bool) else ordinal
        numbered.append(run)
    numbered.sort(key=lambda r: (r["index"], r["started_ns"], r["span_id"]))
    ops = [_copy_nodes(op) for op in sorted(ops, key=lambda o: (o["started_ns"], o["span_id"]))]  # paths set below
    assign_paths([(op, f"0-{k}", False) for k, op in enumerate(ops, start=1)])
    first = numbered[0] if numbered else None
    status = session_status([r["status"] for r in numbered])
    entries = session_entries(numbered, ops)
    self_entries = entries_under(numbered + ops, cross_sessions=False)
    trace_ids: list[str] = []
    for node in numbered + ops:
        trace_id = node.get("trace_id")
        if trace_id and trace_id not in trace_ids:
            trace_ids.append(trace_id)
    ended = [r["ended_ns"] for r in numbered]
    return {
        "id": session_id,
        "trace_ids": trace_ids,
        "agent_id": first["agent_id"] if first else None,
        "agent_name": first["agent_name"] if first else None,
        "call_path": first["call_path"] if first else None,
        "started_ns": min((r["started_ns"] for r in numbered), default=None),
        "ended_ns": None if not ended or None in ended else max(ended),
        "status": status,
        "success": bool(numbered) and status == STATUS_OK,
        # The session's error is its status's: the last run's. An earlier run's stays on that run.
        "error": numbered[-1].get("error") if numbered else None,
        "attributes": _ingress(first["attributes"]) if first else {},
        "totals": {"self": fold_totals(self_entries), "inclusive": fold_totals(entries)},
        "agents": agents_table(numbered, ops),
        "runs": numbered,
        "ops": ops,
    }


def _ingress(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: v for k, v in attributes.items() if k in _INGRESS_KEYS or any(k.startswith(p) for p in _INGRESS_PREFIXES)
    }


def _copy_nodes(top: dict) -> dict:
    """A copy of ``top`` and of every node under it (their other values shared), made without recursion."""
    copied = dict(top)
    stack = [copied]
    while stack:
        node = stack.pop()
        for key in ("ops", "turns"):
            if node.get(key):
                node[key] = [dict(child) for child in node[key]]
                stack.extend(node[key])
        if node.get("session") is not None:
            node["session"] = dict(node["session"])
            stack.append(node["session"])
    return copied


class _Builder:
    """Span -> node conversion; holds the children index of one build_tree call.

    Builds children before parents with a stack of its own, so no depth of nesting
    reaches Python's recursion limit. Each node's accounting entries (all of them, and
    those of its own session level) are kept until its parent has taken them, so the
    totals cost one pass instead of a walk of every subtree.
    """

    def __init__(self, children: dict[str, list[SpanData]]):
        self.children = children
        self._all: dict[int, Sums] = {}  # id(node) -> its entries and those under it, sub-agents included
        self._own: dict[int, Sums] = {}  # id(node) -> the same, sub-agents left out

    def session_node(self, span: SpanData) -> dict[str, Any]:
        return self._build(span, KIND_SESSION)

    def op_node(self, span: SpanData) -> dict[str, Any]:
        return self._build(span, "op")

    def _build(self, top: SpanData, role: str) -> dict[str, Any]:
        """The node of ``top`` in ``role`` (session, turn or op), children first, no recursion."""
        done: dict[str, dict[str, Any]] = {}
        stack: list[tuple[SpanData, str, bool]] = [(top, role, False)]
        while stack:
            span, role, ready = stack.pop()
            kids = self.children.get(span.span_id, [])
            if not ready:
                stack.append((span, role, True))
                # A session's turns are its turn children; a sub-agent's span (an op) holds its session.
                holds_turns = role == KIND_SESSION or (role == "op" and span_operation(span) == sc.OP_INVOKE_AGENT)
                stack.extend(
                    (child, KIND_TURN if holds_turns and span_operation(child) == sc.OP_TURN else "op", False)
                    for child in reversed(kids)
                )
                continue
            nodes = [done.pop(child.span_id) for child in kids]
            if role == KIND_SESSION:
                done[span.span_id] = self._session(span, nodes)
            elif role == KIND_TURN:
                done[span.span_id] = self._turn(span, nodes)
            else:
                done[span.span_id] = self._op(span, nodes)
        node = done.pop(top.span_id)
        self._all.pop(id(node), None)
        self._own.pop(id(node), None)
        return node

    def _entries(self, nodes: list[dict], entries: list[dict] = ()) -> tuple["Sums", "Sums"]:
        """(all, own) sums of ``entries`` and of these children's, in tree order; a child's are not asked for again."""
        every, own = Sums(entries), Sums(entries)
        for node in nodes:
            every.add(self._all.pop(id(node)))
            own.add(self._own.pop(id(node)))
        return every, own

    def _common(self, span: SpanData) -> dict[str, Any]:
        events, logs, others = split_events(span)
        return {
            "span_id": span.span_id,
            "name": span.name,
            "started_ns": span.start_ns,
            "ended_ns": span.end_ns,
            "attributes": dict(span.attributes),
            "events": events,
            "logs": logs,
            "span_events": others,
            "links": [{"trace_id": l.trace_id, "span_id": l.span_id, "attributes": dict(l.attributes)} for l in span.links],
            "otel": {
                "span_kind": span.kind,
                "status_code": span.status,
                "status_message": span.status_message,
                "scope": span.scope,
            },
        }

    def _session(self, span: SpanData, children: list[dict]) -> dict[str, Any]:
        node = self._common(span)
        attrs = span.attributes
        turns = [child for child in children if child["kind"] == KIND_TURN]
        ops = [child for child in children if child["kind"] != KIND_TURN]
        status, error = own_status(span)
        status = propagate(status, turns + ops)
        run_index = attrs.get(sc.RUN_INDEX)
        node.update(
            {
                "kind": KIND_SESSION,
                "trace_id": span.trace_id,
                "index": run_index if span.parent_span_id is None else None,
                # An agent another instrumentation names only by name is known by that name.
                "agent_id": attrs.get(sc.AGENT_ID) or attrs.get(sc.GEN_AI_AGENT_ID) or attrs.get(sc.GEN_AI_AGENT_NAME),
                "agent_name": attrs.get(sc.GEN_AI_AGENT_NAME) or subject_of(span.name),
                "call_path": attrs.get(sc.CALL_PATH),
                "status": status,
                "error": error,
                "resource": dict(span.resource) if span.parent_span_id is None else None,
                "turns": turns,
                "ops": ops,
            }
        )
        every, own = self._entries(ops + turns)  # ops first, then turns: the tree's order
        node["totals"] = {"self": own.totals(), "inclusive": every.totals()}
        self._all[id(node)], self._own[id(node)] = every, own
        if span.parent_span_id is None:
            assign_paths([(node, "", True)])
        return node

    def _turn(self, span: SpanData, ops: list[dict]) -> dict[str, Any]:
        node = self._common(span)
        status, error = own_status(span)
        node.update(
            {
                "kind": KIND_TURN,
                "index": span.attributes.get(sc.TURN_INDEX),
                "status": propagate(status, ops),
                "error": error,
                "ops": ops,
            }
        )
        every, own = self._entries(ops)
        node["totals"] = {"self": own.totals(), "inclusive": every.totals()}
        self._all[id(node)], self._own[id(node)] = every, own
        return node

    def _op(self, span: SpanData, children: list[dict]) -> dict[str, Any]:
        operation = span_operation(span)
        kind = {
            sc.OP_CHAT: KIND_LLM,
            sc.OP_EXECUTE_TOOL: KIND_TOOL,
            sc.OP_CREATE_AGENT: KIND_CREATE_AGENT,
            sc.OP_INVOKE_AGENT: KIND_SESSION,
        }.get(operation, KIND_SPAN)
        if kind == KIND_SESSION:
            child = self._session(span, children)
            wrapper = {
                "kind": KIND_SESSION,
                "span_id": span.span_id,
                "name": span.name,
                "started_ns": span.start_ns,
                "ended_ns": span.end_ns,
                "status": child["status"],
                "error": child["error"],
                "attributes": {},
                "events": [],
                "logs": [],
                "span_events": [],
                "links": [],
                "otel": None,
                "accounting": [],
                "reasoning": None,
                "request": None,
                "response": None,
                "ops": [],
                "session": child,
            }
            # The wrapper holds no entries of its own: all are the child session's, none at this level.
            self._all[id(wrapper)], self._own[id(wrapper)] = self._all.pop(id(child)), Sums()
            self._own.pop(id(child))
            return wrapper
        node = self._common(span)
        ops = children
        status, error = op_status(kind, span)
        status = propagate(status, ops)
        node.update(
            {
                "kind": kind,
                "status": status,
                "error": error,
                "accounting": accounting_entries(kind, span, status, error),
                "reasoning": reasoning_of(node) if kind == KIND_LLM else None,
                "request": request_of(kind, span.attributes),
                "response": response_of(kind, span),
                "ops": ops,
                "session": None,
            }
        )
        self._all[id(node)], self._own[id(node)] = self._entries(ops, node["accounting"])
        return node
