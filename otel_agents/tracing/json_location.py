"""Places inside a JSON document: written as a path (``spans[3].attributes[0]``) and found as a line of its text.

Error messages about a trace file name the line of the offending value, also in
a pretty-printed document of thousands of lines. The decoders keep only the
steps (keys and indexes) that led there; on the error path, :func:`line_of`
walks the document's text along them with the standard library's scanner,
skipping every other value whole, so no position is kept for the valid case.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring
from typing import Iterator, Sequence

_SPACE = re.compile(r"[ \t\r\n]*")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Keyed:
    """The item of a list of ``{"key": ..., "value": ...}`` objects (OTLP attributes, Jaeger tags) with this key
    (the last such item: the one decoding keeps)."""

    key: str


Step = str | int | Keyed


def render_path(steps: Sequence[Step]) -> str:
    """``("spans", 3, "name")`` -> ``spans[3].name``; keys that would not read back are quoted."""
    out = ""
    for step in steps:
        if isinstance(step, int):
            out += f"[{step}]"
        elif isinstance(step, Keyed):
            out += f"[key={json.dumps(step.key)}]"
        elif not step or not step.isprintable() or "." in step or "[" in step:
            out += f"[{json.dumps(step)}]"  # a key from the file: the message stays one line
        else:
            out += f".{step}" if out else step
    return out


def line_of(text: str, line: int, steps: Sequence[Step]) -> tuple[int, list[Step]]:
    """The line of the value at ``steps`` inside the document starting on ``line`` of ``text``.

    Returns that line and the steps it could follow (a :class:`Keyed` step becomes the
    item's index). A step it cannot follow ends the walk: the line is then the line of
    the last value found, and the rest of the steps are returned as they were given.
    """
    pos = _line_start(text, line)
    pos = _SPACE.match(text, pos).end()
    found: list[Step] = []
    for i, step in enumerate(steps):
        try:
            child = _child(text, pos, step)
        except (ValueError, IndexError):  # not the document the steps describe: stop here
            child = None
        if child is None:
            found.extend(steps[i:])
            break
        pos, resolved = child
        found.append(resolved)
    return line + text.count("\n", _line_start(text, line), pos), found


def _line_start(text: str, line: int) -> int:
    pos = 0
    for _ in range(line - 1):
        pos = text.find("\n", pos) + 1
        if pos == 0:
            return len(text)
    return pos


def _child(text: str, pos: int, step: Step) -> tuple[int, Step] | None:
    opening = text[pos : pos + 1]
    if opening == "{" and isinstance(step, str):
        snake = re.sub(r"(?<!^)([A-Z])", r"_\1", step).lower()  # proto JSON's other spelling
        for key, value_pos in _members(text, pos):
            if key == step or key == snake:
                return value_pos, step
    elif opening == "[" and not isinstance(step, str):
        last = None
        for index, item_pos in enumerate(_items(text, pos)):
            if isinstance(step, int) and index == step:
                return item_pos, index
            if isinstance(step, Keyed):
                item, _ = _DECODER.raw_decode(text, item_pos)
                if isinstance(item, dict) and item.get("key") == step.key:
                    last = item_pos, index  # a key given twice: the decoders keep the last
        return last
    return None


def _members(text: str, pos: int) -> Iterator[tuple[str, int]]:
    """(key, offset of its value) of the object at ``pos``."""
    pos = _SPACE.match(text, pos + 1).end()
    while text[pos] == '"':
        key, pos = scanstring(text, pos + 1)
        pos = _SPACE.match(text, pos).end() + 1  # past the colon
        pos = _SPACE.match(text, pos).end()
        yield key, pos
        pos = _SPACE.match(text, _DECODER.raw_decode(text, pos)[1]).end()
        if text[pos] != ",":
            return
        pos = _SPACE.match(text, pos + 1).end()


def _items(text: str, pos: int) -> Iterator[int]:
    """Offsets of the items of the list at ``pos``."""
    pos = _SPACE.match(text, pos + 1).end()
    if text[pos] == "]":
        return
    while True:
        yield pos
        pos = _SPACE.match(text, _DECODER.raw_decode(text, pos)[1]).end()
        if text[pos] != ",":
            return
        pos = _SPACE.match(text, pos + 1).end()
