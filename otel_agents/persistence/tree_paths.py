"""Path labels of the session tree: labels <-> positions, and the node at a position."""

# A label addresses a turn or operation inside one run: ``<turn>-<op>`` for an operation
# of a turn (turn 0 holds operations outside any turn), ``-<k>`` for the k-th operation
# nested in an operation, and ``.`` to descend into the child session of a ``session``
# operation: ``1-4-1.2-1``. label_of and position_of are inverse bijections.

from __future__ import annotations

import re
from typing import Any, Mapping

from otel_agents.persistence.tree_kinds import KIND_SESSION

# A position: one segment per session level; a segment is (turn, op, nested op, ...).
Position = tuple[tuple[int, ...], ...]


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


def assign_paths(work: list[tuple[dict, str, bool]]) -> None:
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
