"""The session tree (seed 002), built from spans by one pure function.

``build_tree(spans)`` turns plain :class:`SpanData` (finished, or known only by
their start) into the canonical tree. The live recorder, the importer and the
loaders all call it, so the tree never depends on how the spans arrived.

Shape (docs/session-tree.md has the full description)::

    session   {id, trace_ids, agent_id, agent_name, call_path, started_ns, ended_ns,
               status, success, error, attributes (ingress), totals, agents, runs, ops}
    run/child {kind: "session", span_id, trace_id, index, agent_id, agent_name, call_path,
               started_ns, ended_ns, status, error, attributes, events, logs, span_events,
               links, otel, resource, turns, ops, totals}
    turn      {kind: "turn", path, index, span_id, ..., ops, totals}
    op        {kind: llm|tool|session|create_agent|span, path, span_id, name, ..., accounting,
               reasoning, request, response, ops, session (kind session only)}

Path labels address turns and operations inside one run: ``<turn>-<op>`` for an
operation of a turn (turn 0 holds operations outside any turn), ``-<k>`` for the
k-th operation nested in an operation, and ``.`` to descend into the child
session of a ``session`` operation: ``1-4-1.2-1``. :func:`label_of` and
:func:`position_of` are inverse bijections between labels and positions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Iterable, Iterator, Mapping

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import RecordError, from_span_event, message_id_number
from otel_agents.tracing.spandata import SpanData

COST_DECIMALS = 12  # as the runtime's accounting rounds (llm/pricing.py)

STATUS_OK = "ok"
STATUS_ERROR = "error"
STATUS_IN_PROGRESS = "in_progress"
STATUS_CANCELLED = "cancelled"
STATUS_INTERRUPTED = "interrupted"  # never ended: its writer died (persistence/interrupted.py)

KIND_SESSION = "session"
KIND_TURN = "turn"
KIND_LLM = "llm"
KIND_TOOL = "tool"
KIND_CREATE_AGENT = "create_agent"
KIND_SPAN = "span"  # any other span (custom instrumentation): kept, never dropped

# A position: one segment per session level; a segment is (turn, op, nested op, ...).
Position = tuple[tuple[int, ...], ...]

_INGRESS_PREFIXES = ("otel_agents.run.",)
_INGRESS_KEYS = frozenset({sc.RESUMED_FROM, sc.SESSION_ID, sc.GEN_AI_CONVERSATION_ID})


# --------------------------------------------------------------------------- labels


def label_of(position: Position) -> str:
    """``((1, 4, 1), (2, 1))`` -> ``"1-4-1.2-1"``; raises ValueError for a malformed position."""
    _check_position(position)
    return ".".join("-".join(str(n) for n in segment) for segment in position)


_N = r"(?:0|[1-9][0-9]*)"
_LABEL = re.compile(rf"{_N}(?:-{_N})*(?:\.{_N}(?:-{_N})*)*")


def position_of(label: str) -> Position:
    """Inverse of :func:`label_of`; raises ValueError for anything that is not a label."""
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise ValueError(f"not a path label: {label!r}")
    position = tuple(tuple(map(int, segment.split("-"))) for segment in label.split("."))
    _check_position(position)
    return position


_INT_ONLY = {int}  # a bool is not a position number: its type is bool


def _check_position(position: Position) -> None:
    if not position:
        raise ValueError("a position has at least one segment")
    last = len(position) - 1
    for i, segment in enumerate(position):  # map and min: a position can be thousands of segments deep
        if not segment or set(map(type, segment)) != _INT_ONLY:
            raise ValueError(f"malformed position segment {segment!r}")
        turn, deeper = segment[0], len(segment) > 1
        if turn < 0 or (deeper and min(segment[1:]) < 1):
            raise ValueError(f"turns count from 0 (outside any turn) and operations from 1: {segment!r}")
        if turn == 0 and not deeper:
            raise ValueError("turn 0 is not a node: it only holds operations outside any turn")
        if i < last and not deeper:
            raise ValueError("only an operation's child session can be descended into")


def node_at(session_node: Mapping[str, Any], position: Position) -> dict[str, Any]:
    """The turn or operation at ``position`` inside a run (or child session) node."""
    _check_position(position)
    node: Any = session_node
    for depth, segment in enumerate(position):
        if depth:
            if node.get("kind") != KIND_SESSION or node.get("session") is None:
                raise KeyError(f"{label_of(position)}: {label_of(position[:depth])} is not a session operation")
            node = node["session"]
        turn, ops = segment[0], segment[1:]
        if turn == 0:
            container = node["ops"]
        else:
            if turn > len(node["turns"]):
                raise KeyError(f"no turn {turn} at {label_of(position)}")
            node = node["turns"][turn - 1]
            if not ops:
                return node
            container = node["ops"]
        for k in ops:
            if k > len(container):
                raise KeyError(f"no operation {k} at {label_of(position)}")
            node = container[k - 1]
            container = node["ops"]
    return node


# --------------------------------------------------------------------------- traversal


@dataclass(frozen=True)
class OpRef:
    """An operation with its context: the run (None for spans outside any run),
    the session-like node it belongs to (for agent and call path) and its label."""

    run: dict[str, Any] | None
    session: dict[str, Any]
    turn: dict[str, Any] | None
    op: dict[str, Any]
    label: str


def iter_ops(tree: Mapping[str, Any]) -> Iterator[OpRef]:
    """Every operation of the session, depth first in tree order.

    Walks with a stack of its own (no recursion: a chain of sub-agents may be thousands
    deep); labels are built from the parent's label, never from a whole position.
    """
    pseudo = {"ops": tree.get("ops", []), "turns": []}
    # ("s", run, session node, label prefix) or ("o", run, session, turn, op, label)
    work: list[tuple] = [("s", run, run, "") for run in tree.get("runs", [])]
    work += [("o", None, pseudo, None, op, f"0-{k}") for k, op in enumerate(tree.get("ops", []), start=1)]
    work.reverse()
    while work:
        item = work.pop()
        if item[0] == "s":
            _, run, node, prefix = item
            work.extend(reversed(_session_op_items(run, node, prefix)))
            continue
        _, run, session, turn, op, label = item
        yield OpRef(run, session, turn, op, label)
        pending = [("o", run, session, turn, child, f"{label}-{k}") for k, child in enumerate(op.get("ops", []), start=1)]
        if op.get("session") is not None:
            pending.append(("s", run, op["session"], label + "."))
        work.extend(reversed(pending))


def _session_op_items(run: dict, node: dict, prefix: str) -> list[tuple]:
    items = [("o", run, node, None, op, f"{prefix}0-{k}") for k, op in enumerate(node.get("ops", []), start=1)]
    for t, turn in enumerate(node.get("turns", []), start=1):
        items += [("o", run, node, turn, op, f"{prefix}{t}-{k}") for k, op in enumerate(turn.get("ops", []), start=1)]
    return items


def iter_sessions(tree: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every session-like node: each run, then its child sessions, depth first."""
    for run in tree.get("runs", []):
        yield run
        yield from _child_sessions(run)


def _child_sessions(node: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    work = [_ops_of_session(node)]
    while work:
        op = next(work[-1], None)
        if op is None:
            work.pop()
        elif op.get("session") is not None:
            yield op["session"]
            work.append(_ops_of_session(op["session"]))


def _ops_of_session(node: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Operations of one session level in tree order (nested ops included, child sessions not entered)."""
    stack = list(node.get("ops", []))
    for turn in node.get("turns", []):
        stack.extend(turn.get("ops", []))
    stack.reverse()  # the next op is at the end: popping the front of a long list is quadratic
    while stack:
        op = stack.pop()
        yield op
        stack.extend(reversed(op.get("ops", [])))


def iter_nodes(tree: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(top node holding the trace id, node) for every node that carries span data:
    each run and everything in it, then each operation outside any run."""
    for run in tree.get("runs", []):
        for node in _walk(run):
            yield run, node
    for op in tree.get("ops", []):
        for node in _walk(op):
            yield op, node


def _walk(top: dict) -> Iterator[dict]:
    """``top`` and every node under it in tree order (a node's ops, then its turns, then its
    child session), with a stack of its own: no recursion, whatever the depth."""
    stack = [top]
    while stack:
        node = stack.pop()
        yield node
        if node.get("session") is not None:
            stack.append(node["session"])
        stack.extend(reversed(node.get("turns", [])))
        stack.extend(reversed(node.get("ops", [])))


@dataclass(frozen=True)
class RecordRef:
    record: dict[str, Any]
    ts_ns: int
    trace_id: str | None
    span_id: str


def iter_records(tree: Mapping[str, Any]) -> Iterator[RecordRef]:
    """Every seed-001 record in the tree with the span it was emitted on (tree order)."""
    for top, node in iter_nodes(tree):
        for event in node.get("events", []):
            yield RecordRef(event["record"], event["ts"], top.get("trace_id"), node["span_id"])


def records_of(tree: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The session's seed-001 event stream, ordered by message id: enough to rebuild every transcript."""
    return [ref.record for ref in sorted(iter_records(tree), key=lambda r: message_id_number(r.record["message_id"]))]


# --------------------------------------------------------------------------- building


def span_operation(span: SpanData) -> str:
    return str(span.attributes.get(sc.GEN_AI_OPERATION_NAME) or span.name.split(" ", 1)[0])


def session_id_of(span: SpanData) -> str | None:
    value = span.attributes.get(sc.SESSION_ID) or span.attributes.get(sc.GEN_AI_CONVERSATION_ID)
    return str(value) if value else None


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
    return assemble_session(session_id, runs, ops)


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
    _assign_paths([(op, f"0-{k}", False) for k, op in enumerate(ops, start=1)])
    first = numbered[0] if numbered else None
    status = session_status([r["status"] for r in numbered])
    errors = [r["error"] for r in numbered if r.get("error")]
    entries = session_entries(numbered, ops)
    self_entries = _entries_under(numbered + ops, cross_sessions=False)
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
        "error": errors[-1] if errors else None,
        "attributes": _ingress(first["attributes"]) if first else {},
        "totals": {"self": fold_totals(self_entries), "inclusive": fold_totals(entries)},
        "agents": _agents(numbered, ops),
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


def _assign_paths(work: list[tuple[dict, str, bool]]) -> None:
    """Set ``path`` on every turn and operation under the given nodes, without recursion.

    ``work``: (operation, its label, False) or (session node, the prefix of its labels, True),
    the prefix being "" for a run and ``"<label>."`` for a sub-agent's session. Labels grow
    from the parent's label, which is what :func:`label_of` of the position gives.
    """
    while work:
        node, label, is_session = work.pop()
        if is_session:
            work.extend((op, f"{label}0-{k}", False) for k, op in enumerate(node["ops"], start=1))
            for t, turn in enumerate(node["turns"], start=1):
                turn["path"] = f"{label}{t}"
                work.extend((op, f"{label}{t}-{k}", False) for k, op in enumerate(turn["ops"], start=1))
            continue
        node["path"] = label
        work.extend((child, f"{label}-{k}", False) for k, child in enumerate(node["ops"], start=1))
        if node.get("session") is not None:
            work.append((node["session"], label + ".", True))


class _Sums:
    """What a subtree's accounting entries fold to, kept so that a parent adds up its children's
    instead of folding every entry below it again (at depth thousands that was quadratic):
    the counts, which do not depend on the order, and the priced LLM entries' (completion
    time, cost) in tree order, whose rounded cost is folded in completion order as
    :func:`fold_totals` folds it, so the totals are exactly that function's."""

    __slots__ = ("counts", "priced")

    def __init__(self, entries: Iterable[Mapping[str, Any]] = ()):
        self.counts = [0] * len(_COUNT_KEYS)
        self.priced: list[tuple[int, float]] = []
        for entry in entries:
            if entry["type"] == KIND_TOOL:
                self.counts[_TOOL_CALLS] += 1
                continue
            tokens = entry["tokens"]
            for position, token_key in _TOKEN_POSITIONS:
                self.counts[position] += tokens[token_key]
            self.counts[_LLM_CALLS] += 1
            if entry["cost_usd"] is None:
                self.counts[_UNPRICED] += entry["status"] == "ok"
            else:
                self.priced.append((_completion(entry), entry["cost_usd"]))

    def add(self, other: "_Sums") -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts)]
        self.priced += other.priced

    def totals(self) -> dict[str, int | float]:
        totals = empty_totals()
        totals.update(zip(_COUNT_KEYS, self.counts))
        cost = 0.0
        for _, value in sorted(self.priced, key=_first):  # stable: ties stay in tree order, as fold_totals
            cost = round(cost + value, COST_DECIMALS)
        totals["cost_usd"] = cost
        return totals


_COUNT_KEYS = tuple(key for key in sc.TOTAL_KEYS if key != "cost_usd")
_TOOL_CALLS = _COUNT_KEYS.index("tool_calls")
_LLM_CALLS = _COUNT_KEYS.index("llm_calls")
_UNPRICED = _COUNT_KEYS.index("unpriced_calls")
_TOKEN_POSITIONS = tuple(
    (_COUNT_KEYS.index(total_key), token_key)
    for total_key, token_key in (
        ("input_tokens", "input"), ("output_tokens", "output"), ("cache_read_tokens", "cache_read"),
        ("cache_write_tokens", "cache_write"), ("reasoning_tokens", "reasoning"),
    )
)
_first = itemgetter(0)


class _Builder:
    """Span -> node conversion; holds the children index of one build_tree call.

    Builds children before parents with a stack of its own, so no depth of nesting
    reaches Python's recursion limit. Each node's accounting entries (all of them, and
    those of its own session level) are kept until its parent has taken them, so the
    totals cost one pass instead of a walk of every subtree.
    """

    def __init__(self, children: dict[str, list[SpanData]]):
        self.children = children
        self._all: dict[int, _Sums] = {}  # id(node) -> its entries and those under it, sub-agents included
        self._own: dict[int, _Sums] = {}  # id(node) -> the same, sub-agents left out

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

    def _entries(self, nodes: list[dict], entries: list[dict] = ()) -> tuple["_Sums", "_Sums"]:
        """(all, own) sums of ``entries`` and of these children's, in tree order; a child's are not asked for again."""
        every, own = _Sums(entries), _Sums(entries)
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
        status, error = _own_status(span)
        status = _propagate(status, turns + ops)
        run_index = attrs.get(sc.RUN_INDEX)
        node.update(
            {
                "kind": KIND_SESSION,
                "trace_id": span.trace_id,
                "index": run_index if span.parent_span_id is None else None,
                "agent_id": attrs.get(sc.AGENT_ID) or attrs.get(sc.GEN_AI_AGENT_ID),
                "agent_name": attrs.get(sc.GEN_AI_AGENT_NAME) or _subject(span.name),
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
            _assign_paths([(node, "", True)])
        return node

    def _turn(self, span: SpanData, ops: list[dict]) -> dict[str, Any]:
        node = self._common(span)
        status, error = _own_status(span)
        node.update(
            {
                "kind": KIND_TURN,
                "index": span.attributes.get(sc.TURN_INDEX),
                "status": _propagate(status, ops),
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
            self._all[id(wrapper)], self._own[id(wrapper)] = self._all.pop(id(child)), _Sums()
            self._own.pop(id(child))
            return wrapper
        node = self._common(span)
        ops = children
        status, error = _op_status(kind, span)
        status = _propagate(status, ops)
        node.update(
            {
                "kind": kind,
                "status": status,
                "error": error,
                "accounting": _accounting(kind, span, status, error),
                "reasoning": _reasoning(node) if kind == KIND_LLM else None,
                "request": _request(kind, span.attributes),
                "response": _response(kind, span),
                "ops": ops,
                "session": None,
            }
        )
        self._all[id(node)], self._own[id(node)] = self._entries(ops, node["accounting"])
        return node


def _subject(name: str) -> str | None:
    parts = name.split(" ", 1)
    return parts[1] if len(parts) == 2 else None


def split_events(span: SpanData) -> tuple[list[dict], list[dict], list[dict]]:
    """(records, log lines, other span events) of one span, in time order; nothing is dropped."""
    records, logs, others = [], [], []
    for event in span.events:
        attrs = dict(event.attributes)
        if event.name in sc.SESSION_EVENT_TYPES:
            try:
                record = from_span_event(event.name, attrs)
            except (RecordError, ValueError, TypeError):
                record = None
            if record is not None:
                records.append({"ts": event.time_ns, "record": record})
                continue
        if event.name == sc.EVENT_LOG:
            level = attrs.pop(sc.LOG_LEVEL, "VRB")
            message = attrs.pop(sc.LOG_MESSAGE, "")
            logs.append({"ts": event.time_ns, "event": event.name, "level": level, "message": message, "attributes": attrs})
            continue
        if event.name == sc.EVENT_HOOK:
            text = f"{attrs.get(sc.HOOK_KIND, 'hook')} hook {attrs.get(sc.HOOK_NAME, '?')}: {attrs.get(sc.HOOK_DECISION, '?')}"
            if attrs.get(sc.HOOK_REASON):
                text += f" ({attrs[sc.HOOK_REASON]})"
            logs.append({"ts": event.time_ns, "event": event.name, "level": "VRB", "message": text, "attributes": attrs})
            continue
        others.append({"name": event.name, "ts": event.time_ns, "attributes": attrs})
    return records, logs, others


# --------------------------------------------------------------------------- status


def _own_status(span: SpanData) -> tuple[str, str | None]:
    if span.end_ns is None:
        return STATUS_IN_PROGRESS, None
    if span.attributes.get(sc.INTERRUPTED):
        return STATUS_INTERRUPTED, span.status_message
    if span.attributes.get(sc.CANCELLED):
        return STATUS_CANCELLED, span.status_message
    if span.status == "ERROR":
        return STATUS_ERROR, span.status_message or str(span.attributes.get(sc.ERROR_TYPE) or "error")
    return STATUS_OK, None


def _op_status(kind: str, span: SpanData) -> tuple[str, str | None]:
    status, error = _own_status(span)
    if status != STATUS_OK:
        return status, error
    attrs = span.attributes
    # Our spans set these at completion; ended without them means cancelled mid-way
    # (asyncio cancellation and KeyboardInterrupt end spans without an error status).
    if kind == KIND_LLM and sc.LLM_ATTEMPT in attrs and sc.LLM_LATENCY_MS not in attrs:
        return STATUS_CANCELLED, "cancelled before the attempt completed"
    if kind == KIND_TOOL and sc.TOOL_CHARS_IN in attrs and sc.TOOL_STATUS not in attrs:
        return STATUS_CANCELLED, "cancelled before the tool call completed"
    if kind == KIND_TOOL and attrs.get(sc.TOOL_STATUS) in {"failed", "denied"}:
        return STATUS_ERROR, span.status_message or f"tool {attrs[sc.TOOL_STATUS]}"
    return status, error


def _propagate(status: str, children: list[dict]) -> str:
    """An ended node whose work was cut short (a child cancelled) is cancelled itself."""
    if status == STATUS_OK and any(c["status"] == STATUS_CANCELLED for c in children):
        return STATUS_CANCELLED
    return status


# --------------------------------------------------------------------------- accounting


def _num(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _accounting(kind: str, span: SpanData, status: str, error: str | None) -> list[dict[str, Any]]:
    """Per-op accounting entries: one per completed LLM attempt or tool call."""
    if kind not in {KIND_LLM, KIND_TOOL} or status in {STATUS_IN_PROGRESS, STATUS_CANCELLED, STATUS_INTERRUPTED}:
        return []
    attrs = span.attributes
    failed = status == STATUS_ERROR
    latency = attrs.get(sc.LLM_LATENCY_MS if kind == KIND_LLM else sc.TOOL_LATENCY_MS)
    if not isinstance(latency, (int, float)) or isinstance(latency, bool):
        latency = round((span.end_ns - span.start_ns) / 1e6, 3)
    entry: dict[str, Any] = {
        "type": kind,
        "status": "failed" if failed else "ok",
        "ts": span.end_ns,
        "latency_ms": latency,
        "error": error if failed else None,
    }
    if kind == KIND_LLM:
        tokens = {
            "input": _num(attrs.get(sc.GEN_AI_USAGE_INPUT_TOKENS)),
            "output": _num(attrs.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS)),
            "cache_read": _num(attrs.get(sc.GEN_AI_USAGE_CACHE_READ)),
            "cache_write": _num(attrs.get(sc.GEN_AI_USAGE_CACHE_WRITE)),
            "reasoning": _num(attrs.get(sc.GEN_AI_USAGE_REASONING)),
        }
        tokens["total"] = tokens["input"] + tokens["output"]
        cost = attrs.get(sc.GEN_AI_USAGE_COST)
        entry.update(
            {
                "provider": attrs.get(sc.GEN_AI_PROVIDER_NAME),
                "model": attrs.get(sc.GEN_AI_REQUEST_MODEL) or _subject(span.name),
                "response_model": attrs.get(sc.GEN_AI_RESPONSE_MODEL),
                "attempt": attrs.get(sc.LLM_ATTEMPT),
                "tokens": tokens,
                "cost_usd": float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
                "price_source": attrs.get(sc.LLM_PRICE_SOURCE),
            }
        )
    else:
        entry.update(
            {
                "tool": attrs.get(sc.GEN_AI_TOOL_NAME) or _subject(span.name),
                "chars_in": _num(attrs.get(sc.TOOL_CHARS_IN)),
                "chars_out": _num(attrs.get(sc.TOOL_CHARS_OUT)),
            }
        )
    return [entry]


def empty_totals() -> dict[str, int | float]:
    totals: dict[str, int | float] = {key: 0 for key in sc.TOTAL_KEYS}
    totals["cost_usd"] = 0.0
    return totals


def session_status(run_statuses: Iterable[str]) -> str:
    """A session's status from its runs': in progress, else failed, else cancelled, else ok."""
    statuses = set(run_statuses)
    for status in (STATUS_IN_PROGRESS, STATUS_ERROR, STATUS_INTERRUPTED, STATUS_CANCELLED):
        if status in statuses:
            return status
    return STATUS_OK


def session_entries(runs: Iterable[Mapping[str, Any]], ops: Iterable[Mapping[str, Any]]) -> list[dict]:
    """Every accounting entry of a session's runs and operations, sub-agents included (its inclusive totals)."""
    return _entries_under([*runs, *ops], cross_sessions=True)


def fold_totals(
    entries: Iterable[Mapping[str, Any]], start: Mapping[str, int | float] | None = None
) -> dict[str, int | float]:
    """Totals as the runtime keeps them (llm/accounting.py), in completion order.

    ``start``: the totals of entries that all completed before these (folding on from
    them is the same fold as over all the entries at once).
    """
    totals = dict(start) if start is not None else empty_totals()
    ordered = sorted(entries, key=_completion)
    # Counts and token sums do not depend on the order (integers): summed in C. Only the
    # rounded cost is a fold, as the runtime's. (Deep trees fold long lists many times.)
    llm = [entry for entry in ordered if entry["type"] != KIND_TOOL]
    totals["tool_calls"] += len(ordered) - len(llm)
    tokens = [entry["tokens"] for entry in llm]
    for total_key, token_key in _TOKEN_TOTALS:
        totals[total_key] += sum([t[token_key] for t in tokens])
    totals["llm_calls"] += len(llm)
    totals["unpriced_calls"] += sum([1 for entry in llm if entry["cost_usd"] is None and entry["status"] == "ok"])
    cost = totals["cost_usd"]
    for entry in llm:
        if entry["cost_usd"] is not None:
            cost = round(cost + entry["cost_usd"], COST_DECIMALS)
    totals["cost_usd"] = cost
    return totals


_TOKEN_TOTALS = (
    ("input_tokens", "input"), ("output_tokens", "output"), ("cache_read_tokens", "cache_read"),
    ("cache_write_tokens", "cache_write"), ("reasoning_tokens", "reasoning"),
)


def _completion(entry: Mapping[str, Any]) -> int:
    return entry.get("ts") or 0


def _entries_under(nodes: Iterable[Mapping[str, Any]], cross_sessions: bool) -> list[dict]:
    """Accounting entries of these nodes and of every node under them, in tree order
    (a node's own, its ops', its turns', then its sub-agent's session's if ``cross_sessions``)."""
    out: list[dict] = []
    stack = list(nodes)
    stack.reverse()
    while stack:
        node = stack.pop()
        out += node.get("accounting") or ()
        if cross_sessions and node.get("session") is not None:
            stack.append(node["session"])
        stack.extend(reversed(node.get("turns", [])))
        stack.extend(reversed(node.get("ops", [])))
    return out


# --------------------------------------------------------------------------- op details


def _request(kind: str, attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    """References to the request, never the request repeated: the transcript holds it."""
    if kind == KIND_LLM:
        return {
            "context_agent_id": attrs.get(sc.CONTEXT_AGENT_ID),
            "context_last_message_id": attrs.get(sc.CONTEXT_LAST_MESSAGE_ID),
            "context_message_count": attrs.get(sc.CONTEXT_MESSAGE_COUNT),
            "context_chars": attrs.get(sc.CONTEXT_CHARS),
        }
    if kind == KIND_TOOL:
        return {
            "tool_call_id": attrs.get(sc.GEN_AI_TOOL_CALL_ID),
            "call_message_id": attrs.get(sc.TOOL_CALL_MESSAGE_ID),
            "chars_in": attrs.get(sc.TOOL_CHARS_IN),
        }
    return None


def _response(kind: str, span: SpanData) -> dict[str, Any] | None:
    attrs = span.attributes
    if kind == KIND_LLM and (sc.RESPONSE_MESSAGE_ID in attrs or sc.GEN_AI_RESPONSE_ID in attrs):
        return {
            "message_id": attrs.get(sc.RESPONSE_MESSAGE_ID),
            "response_id": attrs.get(sc.GEN_AI_RESPONSE_ID),
            "chars": attrs.get(sc.RESPONSE_CHARS),
            "finish_reasons": attrs.get(sc.GEN_AI_RESPONSE_FINISH_REASONS),
        }
    if kind == KIND_TOOL and sc.TOOL_STATUS in attrs:
        return {
            "message_id": attrs.get(sc.TOOL_RESULT_MESSAGE_ID),  # None: the tool replied as it went (discuss)
            "chars_out": attrs.get(sc.TOOL_CHARS_OUT),
            "status": attrs.get(sc.TOOL_STATUS),
        }
    return None


def _reasoning(node: Mapping[str, Any]) -> dict[str, Any] | None:
    chunks = [{"text": log["message"], "ts": log["ts"]} for log in node["logs"] if log["level"] == "THK"]
    final = None
    for event in node["events"]:
        record = event["record"]
        if record.get("event_type") == sc.EVENT_TRANSCRIPT_ENTRY and record.get("reasoning_content"):
            final = record["reasoning_content"]
    if not chunks and final is None:
        return None
    return {"chunks": chunks, "final": final if final is not None else "".join(c["text"] for c in chunks)}


# --------------------------------------------------------------------------- agents


def _agents(runs: list[dict], ops: list[dict]) -> dict[str, dict[str, Any]]:
    """Every agent that was created, from its agent_created record and its spans."""
    tree = {"runs": runs, "ops": ops}
    created = [
        event["record"]
        for _, node in iter_nodes(tree)
        for event in node.get("events", [])
        if event["record"].get("event_type") == sc.EVENT_AGENT_CREATED
    ]
    created.sort(key=lambda record: message_id_number(record["message_id"]))  # stable: as sorting every record
    agents: dict[str, dict[str, Any]] = {}
    for record in created:
        agents[record["agent_id"]] = {
            "name": record.get("name"),
            "model": record.get("language_model"),
            "parent": record.get("parent"),
            "cause": record.get("cause"),
            "created_message_id": record["message_id"],
            "call_path": None,
            "tools": None,
        }
    for node in iter_sessions(tree):
        agent = agents.get(node.get("agent_id"))
        if agent is not None:
            agent["call_path"] = node.get("call_path") or agent["call_path"]
            tools = node["attributes"].get(sc.AGENT_TOOLS)
            if tools is not None:
                agent["tools"] = list(tools)
    return agents


def _session_entry_lists(tree: Mapping[str, Any]) -> dict[int, tuple[list[dict], list[dict]]]:
    """id(session-like node) -> (its own level's entries, all entries under it), in tree order,
    for every run and sub-agent session. Sessions are done innermost first, so each takes its
    sub-agents' lists whole instead of walking them again (no recursion, and no rewalk per level)."""
    sessions = [node for run in tree.get("runs", []) for node in (run, *_child_sessions(run))]
    out: dict[int, tuple[list[dict], list[dict]]] = {}
    for node in reversed(sessions):  # every sub-agent session comes after its caller's
        own: list[dict] = []
        every: list[dict] = []
        stack: list[Any] = list(node.get("ops", []))
        for turn in node.get("turns", []):
            stack.extend(turn.get("ops", []))
        stack.reverse()
        while stack:
            op = stack.pop()
            if type(op) is tuple:  # (sub-agent session,): its entries, once its caller's nested ops are in
                every += out[id(op[0])][1]
                continue
            accounting = op.get("accounting") or ()
            own += accounting
            every += accounting
            if op.get("session") is not None:
                stack.append((op["session"],))
            stack.extend(reversed(op.get("ops", [])))
        out[id(node)] = (own, every)
    return out


def agent_totals(tree: Mapping[str, Any]) -> dict[str, dict[str, dict[str, int | float]]]:
    """Per agent id: ``self`` (its own LLM attempts and tool calls) and ``inclusive``
    (plus everything its invocations caused), each attempt counted once per agent."""
    per_self: dict[str, list] = {}
    per_all: dict[str, list] = {}

    lists = _session_entry_lists(tree)
    # (session node, the agents whose invocations enclose it), depth first in tree order
    work = [(run, frozenset()) for run in reversed(tree.get("runs", []))]
    while work:
        node, open_agents = work.pop()
        agent = node.get("agent_id") or "?"
        own, every = lists[id(node)]
        per_self.setdefault(agent, []).extend(own)
        if agent not in open_agents:  # an agent nested in itself is not counted twice
            per_all.setdefault(agent, []).extend(every)
        inner = open_agents if agent in open_agents else open_agents | {agent}
        work.extend((op["session"], inner) for op in reversed(list(_ops_of_session(node))) if op.get("session") is not None)
    return {
        agent: {"self": fold_totals(per_self.get(agent, [])), "inclusive": fold_totals(per_all.get(agent, []))}
        for agent in per_self
    }
