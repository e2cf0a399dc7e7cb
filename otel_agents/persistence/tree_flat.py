"""Session trees as flat node lists and back, without recursion: how tree.json.gz (version 2) stores deep ones.

A sub-agent chain or an imported trace can nest thousands of levels; JSON that deep is
refused by orjson (its limit is 255 levels) and Python's recursion limit stops every
recursive walk. So the file stores each run (and each operation outside any run) as
a list of its nodes in breadth-first order: a node's ``ops`` and ``turns`` become lists
of indices into that list and a session operation's ``session`` becomes an index. Every
index points further down the list and every node but the first is pointed to once,
so the list always reassembles into a tree. Nothing else in a node is changed.
"""

from __future__ import annotations

from typing import Any, Mapping

from otel_agents.persistence.gc_pause import collector_paused

# The keys that hold child nodes; every other value of a node is data of bounded depth.
_LIST_KEYS = ("ops", "turns")
_ONE_KEY = "session"
_COMPARED_LISTS = (*_LIST_KEYS, "runs")  # and a session's runs, when whole sessions are compared


class FlatError(ValueError):
    """A flat node list that does not reassemble into a tree; the message is one line."""


def flatten(root: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``root`` and every node below it, breadth first, children referred to by index."""
    order: list[Mapping[str, Any]] = [root]
    flat: list[dict[str, Any]] = []
    position = 0
    while position < len(order):
        node = order[position]
        position += 1
        copy = dict(node)
        for key in _LIST_KEYS:
            children = node.get(key)
            if type(children) is list:
                copy[key] = list(range(len(order), len(order) + len(children)))
                order.extend(children)
        child = node.get(_ONE_KEY)
        if isinstance(child, dict):
            copy[_ONE_KEY] = len(order)
            order.append(child)
        flat.append(copy)
    return flat


def unflatten(flat: Any, where: str) -> dict[str, Any]:
    """The tree a :func:`flatten` list holds, reassembled in place (the list is consumed).

    Raises FlatError naming ``where`` and the node when an index is not an integer, points
    back up the list or out of it, or a node is pointed to twice or never.
    """
    if not isinstance(flat, list) or not flat:
        raise FlatError(f"{where}: expected a non-empty list of nodes")
    referenced = bytearray(len(flat))
    for number, node in enumerate(flat):
        if not isinstance(node, dict):
            raise FlatError(f"{where}[{number}]: expected a node object")
        for key in _LIST_KEYS:
            indices = node.get(key)
            if type(indices) is list:
                for index in indices:
                    _claim(index, number, referenced, f"{where}[{number}].{key}")
                node[key] = [flat[index] for index in indices]
        index = node.get(_ONE_KEY)
        if index is not None:
            _claim(index, number, referenced, f"{where}[{number}].{_ONE_KEY}")
            node[_ONE_KEY] = flat[index]
    unreached = referenced.find(0, 1)
    if unreached != -1:
        raise FlatError(f"{where}[{unreached}]: a node no other node refers to")
    return flat[0]


def _claim(index: Any, parent: int, referenced: bytearray, where: str) -> None:
    if type(index) is not int or not parent < index < len(referenced):
        raise FlatError(f"{where}: {index!r} is not the index of a node further down the list")
    if referenced[index]:
        raise FlatError(f"{where}: node {index} is referred to twice")
    referenced[index] = 1


def deeper_than(tree: Mapping[str, Any], levels: int) -> bool:
    """Whether any node of the session is more than ``levels`` nodes below it (its runs are at 1)."""
    stack = [(node, 1) for key in ("runs", "ops") if type(tree.get(key)) is list for node in tree[key]]
    while stack:
        node, level = stack.pop()
        if level > levels:
            return True
        if not isinstance(node, dict):
            continue
        for key in _LIST_KEYS:
            children = node.get(key)
            if type(children) is list:
                stack.extend((child, level + 1) for child in children)
        if isinstance(node.get(_ONE_KEY), dict):
            stack.append((node[_ONE_KEY], level + 1))
    return False


def flat_session(tree: Mapping[str, Any]) -> dict[str, Any]:
    """The session node with each run and each operation outside any run flattened."""
    session = dict(tree)
    # A copy of every node, and no cycles among them: automatic collections would walk
    # the whole heap again and again (they took 2 s of a 100k-entry session's 2.3).
    with collector_paused():
        for key in ("runs", "ops"):
            nodes = tree.get(key)
            if type(nodes) is list:
                session[key] = [flatten(node) if isinstance(node, dict) else node for node in nodes]
    return session


def unflatten_session(session: dict[str, Any], where: str) -> dict[str, Any]:
    """Inverse of :func:`flat_session`, in place; FlatError when a list does not reassemble."""
    for key in ("runs", "ops"):
        nodes = session.get(key)
        if type(nodes) is list:
            session[key] = [unflatten(flat, f"{where}.{key}[{i}]") for i, flat in enumerate(nodes)]
    return session


def trees_equal(a: Any, b: Any) -> bool:
    """``a == b`` for trees of any depth (Python's ``==`` recurses in C and fails past ~1,000 levels).

    Compares node by node with children by position; a node's other values are compared with ``==``.
    """
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not dict or type(y) is not dict:
            if x != y:
                return False
            continue
        if x.keys() != y.keys():
            return False
        for key, value in x.items():
            other = y[key]
            if key in _COMPARED_LISTS and type(value) is list and type(other) is list:
                if len(value) != len(other):
                    return False
                stack.extend(zip(value, other))
            elif key == _ONE_KEY and isinstance(value, dict):
                stack.append((value, other))
            elif value != other:
                return False
    return True
