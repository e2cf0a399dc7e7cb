"""Is a decoded tree.json.gz session node shaped as ``build_tree`` makes it? Pure checks.

Readers index the tree without guarding every key, so a file that decodes but was
damaged or hand-edited is refused at load, in one line naming the place, instead of
failing somewhere inside a command. Only what readers rely on is checked: node
kinds, ids, times, the lists and objects they walk, records, log lines, totals
and accounting entries.
"""

from __future__ import annotations

from typing import Any

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import is_message_id

OP_KINDS = frozenset({"llm", "tool", "session", "create_agent", "span"})


class ShapeError(ValueError):
    """Where the tree differs from its documented shape (docs/session-tree.md)."""


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _need(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise ShapeError(f"{where}: {what}")


# The checks below run once per node, event and entry of a session (millions at 100k
# entries): the place is put into words only when a check fails.


def _dict(node: Any, key: str, where: str) -> dict:
    value = node.get(key)
    if not isinstance(value, dict):
        raise ShapeError(f"{where}.{key}: expected an object")
    return value


def _list(node: Any, key: str, where: str) -> list:
    value = node.get(key)
    if not isinstance(value, list):
        raise ShapeError(f"{where}.{key}: expected a list")
    return value


def _totals(node: dict, where: str) -> None:
    totals = _dict(node, "totals", where)
    for scope in ("self", "inclusive"):
        values = _dict(totals, scope, _Where(where, ".totals"))
        for key in sc.TOTAL_KEYS:
            value = values.get(key)
            if not (type(value) is int or type(value) is float or _number(value)):
                raise ShapeError(f"{where}.totals.{scope}.{key}: expected a number")


def _span_part(node: dict, where: str) -> None:
    if not isinstance(node.get("span_id"), str):
        raise ShapeError(f"{where}.span_id: expected a string")
    if not isinstance(node.get("name", ""), str):
        raise ShapeError(f"{where}.name: expected a string")
    if not _int(node.get("started_ns")):
        raise ShapeError(f"{where}.started_ns: expected an integer")
    ended = node.get("ended_ns", "missing")  # readers index it: null (in progress) is written out
    if ended is not None and not _int(ended):
        raise ShapeError(f"{where}.ended_ns: expected an integer or null")
    if not isinstance(node.get("status"), str):
        raise ShapeError(f"{where}.status: expected a string")
    _dict(node, "attributes", where)
    for i, event in enumerate(_list(node, "events", where)):
        if not (isinstance(event, dict) and _int(event.get("ts"))):
            raise ShapeError(f"{where}.events[{i}]: a record event needs an integer ts")
        record = event.get("record")
        if not isinstance(record, dict):
            raise ShapeError(f"{where}.events[{i}].record: expected an object")
        if not is_message_id(record.get("message_id")):  # records are ordered by its number
            raise ShapeError(f"{where}.events[{i}].record.message_id: expected msg_<digits>")
        if not isinstance(record.get("event_type"), str):
            raise ShapeError(f"{where}.events[{i}].record.event_type: expected a string")
        agent_id = record.get("agent_id")
        if agent_id is not None and not isinstance(agent_id, str):
            raise ShapeError(f"{where}.events[{i}].record.agent_id: expected a string")
    for i, log in enumerate(_list(node, "logs", where)):
        if not (isinstance(log, dict) and _int(log.get("ts"))):
            raise ShapeError(f"{where}.logs[{i}]: a log line needs an integer ts")
        if not (isinstance(log.get("level"), str) and isinstance(log.get("message"), str)):
            raise ShapeError(f"{where}.logs[{i}]: a log line needs a string level and message")
    for key in ("span_events", "links"):
        items = node.get(key) or []
        if not isinstance(items, list):
            raise ShapeError(f"{where}.{key}: expected a list")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise ShapeError(f"{where}.{key}[{i}]: expected an object")


def _session(node: Any, where: str, work: list) -> None:
    _need(isinstance(node, dict), where, "expected a session node object")
    _need(node.get("kind") == "session", _Where(where, ".kind"), "expected \"session\"")
    _span_part(node, where)
    _totals(node, where)
    _queue(work, _list(node, "ops", where), where, "ops")
    for t, turn in enumerate(_list(node, "turns", where)):
        here = _Where(where, f".turns[{t}]")
        _need(isinstance(turn, dict) and turn.get("kind") == "turn", here, "expected a turn node")
        _span_part(turn, here)
        _totals(turn, here)
        _queue(work, _list(turn, "ops", here), here, "ops")


class _Where:
    """A place in the tree, put into words only when a check fails: at depth thousands,
    writing out every node's place would cost more than checking it."""

    __slots__ = ("parent", "step")

    def __init__(self, parent: "_Where | str", step: str):
        self.parent, self.step = parent, step

    def __str__(self) -> str:
        steps, place = [], self
        while isinstance(place, _Where):
            steps.append(place.step)
            place = place.parent
        return place + "".join(reversed(steps))

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def _queue(work: list, ops: list, where: Any, key: str) -> None:
    work.extend(("op", op, _Where(where, f".{key}[{i}]")) for i, op in reversed(list(enumerate(ops))))


# What tree.py writes in each accounting entry, and ledger_records.py reads back.
_ENTRY_KEYS = {
    "llm": ("latency_ms", "error", "provider", "model", "response_model", "attempt", "tokens", "cost_usd",
            "price_source"),
    "tool": ("latency_ms", "error", "tool", "chars_in", "chars_out"),
}
# The token counts of an llm entry (and of a ledger record: ``ledger.TOKEN_KEYS``).
TOKEN_KEYS = ("input", "output", "cache_read", "cache_write", "reasoning", "total")


def _op(op: Any, where: Any, work: list) -> None:
    _need(isinstance(op, dict), where, "expected an operation object")
    kind = op.get("kind")
    if not (isinstance(kind, str) and kind in OP_KINDS):
        raise ShapeError(f"{where}.kind: expected one of {sorted(OP_KINDS)}, got {kind!r}")
    _span_part(op, where)
    children = _list(op, "ops", where)
    for i, entry in enumerate(_list(op, "accounting", where)):
        if not (isinstance(entry, dict) and entry.get("type") in ("llm", "tool")):
            raise ShapeError(f"{where}.accounting[{i}]: expected an llm or tool entry")
        if not isinstance(entry.get("status"), str):
            raise ShapeError(f"{where}.accounting[{i}].status: expected a string")
        for key in _ENTRY_KEYS[entry["type"]]:  # every key a ledger record is made of
            if key not in entry:
                raise ShapeError(f"{where}.accounting[{i}].{key}: missing")
        if entry["type"] == "llm":
            tokens = _dict(entry, "tokens", _Where(where, f".accounting[{i}]"))
            for key in TOKEN_KEYS:
                if not _int(tokens.get(key)):
                    raise ShapeError(f"{where}.accounting[{i}].tokens.{key}: expected an integer")
            cost = entry.get("cost_usd")
            if cost is not None and not _number(cost):
                raise ShapeError(f"{where}.accounting[{i}].cost_usd: expected a number or null")
    if kind == "session":
        work.append(("session", op.get("session"), _Where(where, ".session")))
    elif op.get("session") is not None:
        raise ShapeError(f"{where}.session: only a session operation has a child session")
    _queue(work, children, where, "ops")  # checked before the child session: the tree's order


def _check_all(work: list) -> None:
    """Check the queued nodes and everything under them, with a stack instead of recursion."""
    while work:
        what, node, where = work.pop()
        if what == "op":
            _op(node, where, work)
        else:
            _session(node, where, work)




def check_session_shape(session: Any) -> None:
    """Raise ShapeError naming the first place where ``session`` is not a session tree.

    A session with neither runs nor operations needs only its (optional) keys well
    typed: there is nothing in it for a reader to index.
    """
    _need(isinstance(session, dict), "session", "expected an object")
    _need(session.get("id") is None or isinstance(session.get("id"), str), "session.id", "expected a string")
    runs = _list(session, "runs", "session")
    ops = session.get("ops", [])
    _need(isinstance(ops, list), "session.ops", "expected a list")
    if runs or ops or "totals" in session:
        _totals(session, "session")
    if runs or ops or "status" in session:
        _need(isinstance(session.get("status"), str), "session.status", "expected a string")
    if runs or ops or "agents" in session:
        for agent_id, agent in _dict(session, "agents", "session").items():
            _need(isinstance(agent, dict), f"session.agents.{agent_id}", "expected an object")
    for i, run in enumerate(runs):
        here = f"session.runs[{i}]"
        work: list = [("session", run, here)]
        _check_all(work)
        _need(_int(run.get("index")), f"{here}.index", "expected an integer")
        _need(isinstance(run.get("trace_id"), str), f"{here}.trace_id", "expected a string")
    work = []
    _queue(work, ops, "session", "ops")
    _check_all(work)
