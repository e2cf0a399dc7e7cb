"""Walks over a built session tree: its operations, sessions, span-carrying nodes and records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from otel_agents.tracing.records import message_id_number


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
        yield from child_sessions(run)


def child_sessions(node: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every sub-agent session under a session-like node, depth first in tree order."""
    work = [ops_of_session(node)]
    while work:
        op = next(work[-1], None)
        if op is None:
            work.pop()
        elif op.get("session") is not None:
            yield op["session"]
            work.append(ops_of_session(op["session"]))


def ops_of_session(node: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
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

