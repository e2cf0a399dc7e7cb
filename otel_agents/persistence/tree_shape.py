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


def _dict(node: Any, key: str, where: str) -> dict:
    value = node.get(key)
    _need(isinstance(value, dict), f"{where}.{key}", "expected an object")
    return value


def _list(node: Any, key: str, where: str) -> list:
    value = node.get(key)
    _need(isinstance(value, list), f"{where}.{key}", "expected a list")
    return value


def _totals(node: dict, where: str) -> None:
    totals = _dict(node, "totals", where)
    for scope in ("self", "inclusive"):
        values = _dict(totals, scope, f"{where}.totals")
        for key in sc.TOTAL_KEYS:
            _need(_number(values.get(key)), f"{where}.totals.{scope}.{key}", "expected a number")


def _span_part(node: dict, where: str) -> None:
    _need(isinstance(node.get("span_id"), str), f"{where}.span_id", "expected a string")
    _need(isinstance(node.get("name", ""), str), f"{where}.name", "expected a string")
    _need(_int(node.get("started_ns")), f"{where}.started_ns", "expected an integer")
    _need(node.get("ended_ns") is None or _int(node.get("ended_ns")), f"{where}.ended_ns", "expected an integer or null")
    _need(isinstance(node.get("status"), str), f"{where}.status", "expected a string")
    _dict(node, "attributes", where)
    for i, event in enumerate(_list(node, "events", where)):
        here = f"{where}.events[{i}]"
        _need(isinstance(event, dict) and _int(event.get("ts")), here, "a record event needs an integer ts")
        record = event.get("record")
        _need(isinstance(record, dict), f"{here}.record", "expected an object")
        for key in ("message_id", "event_type"):
            _need(isinstance(record.get(key), str), f"{here}.record.{key}", "expected a string")
        _need(record.get("agent_id") is None or isinstance(record.get("agent_id"), str),
              f"{here}.record.agent_id", "expected a string")
    for i, log in enumerate(_list(node, "logs", where)):
        here = f"{where}.logs[{i}]"
        _need(isinstance(log, dict) and _int(log.get("ts")), here, "a log line needs an integer ts")
        _need(isinstance(log.get("level"), str) and isinstance(log.get("message"), str), here,
              "a log line needs a string level and message")
    for key in ("span_events", "links"):
        for i, item in enumerate(node.get(key) or []):
            _need(isinstance(item, dict), f"{where}.{key}[{i}]", "expected an object")


def _session(node: Any, where: str) -> None:
    _need(isinstance(node, dict), where, "expected a session node object")
    _need(node.get("kind") == "session", f"{where}.kind", "expected \"session\"")
    _span_part(node, where)
    _totals(node, where)
    for i, op in enumerate(_list(node, "ops", where)):
        _op(op, f"{where}.ops[{i}]")
    for t, turn in enumerate(_list(node, "turns", where)):
        here = f"{where}.turns[{t}]"
        _need(isinstance(turn, dict) and turn.get("kind") == "turn", here, "expected a turn node")
        _span_part(turn, here)
        _totals(turn, here)
        for i, op in enumerate(_list(turn, "ops", here)):
            _op(op, f"{here}.ops[{i}]")


# What tree.py writes in each accounting entry, and ledger_records.py reads back.
_ENTRY_KEYS = {
    "llm": ("latency_ms", "error", "provider", "model", "response_model", "attempt", "tokens", "cost_usd",
            "price_source"),
    "tool": ("latency_ms", "error", "tool", "chars_in", "chars_out"),
}


def _op(op: Any, where: str) -> None:
    _need(isinstance(op, dict), where, "expected an operation object")
    kind = op.get("kind")
    _need(isinstance(kind, str) and kind in OP_KINDS, f"{where}.kind", f"expected one of {sorted(OP_KINDS)}, got {kind!r}")
    _span_part(op, where)
    for i, child in enumerate(_list(op, "ops", where)):
        _op(child, f"{where}.ops[{i}]")
    for i, entry in enumerate(_list(op, "accounting", where)):
        here = f"{where}.accounting[{i}]"
        _need(isinstance(entry, dict) and entry.get("type") in ("llm", "tool"), here, "expected an llm or tool entry")
        _need(isinstance(entry.get("status"), str), f"{here}.status", "expected a string")
        for key in _ENTRY_KEYS[entry["type"]]:  # every key a ledger record is made of
            _need(key in entry, f"{here}.{key}", "missing")
        if entry["type"] == "llm":
            tokens = _dict(entry, "tokens", here)
            for key in ("input", "output", "cache_read", "cache_write", "reasoning", "total"):
                _need(_int(tokens.get(key)), f"{here}.tokens.{key}", "expected an integer")
            _need(entry.get("cost_usd") is None or _number(entry.get("cost_usd")), f"{here}.cost_usd",
                  "expected a number or null")
    if kind == "session":
        _session(op.get("session"), f"{where}.session")
    else:
        _need(op.get("session") is None, f"{where}.session", "only a session operation has a child session")


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
        _session(run, here)
        _need(_int(run.get("index")), f"{here}.index", "expected an integer")
        _need(isinstance(run.get("trace_id"), str), f"{here}.trace_id", "expected a string")
    for i, op in enumerate(ops):
        _op(op, f"session.ops[{i}]")
