"""JSON text an export's length limits cut short, closed so that what it held before the cut reads back."""

from __future__ import annotations

import json
import re
from typing import Any

# A ``\uXX`` escape cut at the end of a string, or a high surrogate's whose low half was cut (alone, no file holds it).
_PARTIAL_UNICODE = re.compile(r"\\u(?:[0-9a-fA-F]{0,3}|[dD][89abAB][0-9a-fA-F]{2})$")
_PARTIAL_TOKEN = re.compile(r"[-+0-9.eE]+$|[a-z]+$")  # a cut number or literal (``12.``, ``tru``)


def loads_cut(text: str) -> Any:
    """``json.loads(text)``, or, for text cut short (a record's ``tool_calls`` cut to a standard length limit
    or a cap on the network copy), the value its whole part gives: the open string, arrays and objects
    closed, a cut number or literal or a key without its value left out. The cut string keeps what it had
    (a tool call's ``id`` and ``name`` come before its ``arguments``). Text that is not a cut JSON value
    raises the first error, as ``json.loads`` would."""
    try:
        return json.loads(text)
    except ValueError as first:
        for candidate in _closings(text):
            try:
                return json.loads(candidate)
            except ValueError:
                continue
        raise first


def _closings(text: str) -> list[str]:
    """Closings of ``text`` to try, most faithful first (a wrong guess does not parse, and the next is tried)."""
    stack: list[str] = []
    in_string = escaped = False
    string_start = 0  # where the last string opened
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string, string_start = True, i
        elif ch in "[{":
            stack.append(ch)
        elif ch in "]}":
            if not stack:
                return []  # more closed than opened: not a value cut short
            stack.pop()
    if not stack and not in_string:
        return []  # whole, and still unreadable: nothing was cut
    closers = "".join("}" if c == "{" else "]" for c in reversed(stack))
    # An object's key cut, or left without its value, is left out: what precedes it, its comma dropped.
    without_key = text[:string_start].rstrip().rstrip(",").rstrip() + closers if stack[-1:] == ["{"] else None
    out = []
    if in_string:
        head = text[:-1] if escaped else text  # a lone backslash cut from what it escaped
        # Without a cut escape first (and a high surrogate its cut left alone, which would load, and no file
        # holds); as it is, if the backslash was itself escaped (``\\u12`` is text).
        bare = head
        while (partial := _PARTIAL_UNICODE.search(bare)) is not None:
            bare = bare[:partial.start()]
        out += [body + '"' + closers for body in ([bare] if bare != head else []) + [head]]  # a value cut
        if without_key is not None:
            out.append(without_key)
        return out
    body = text.rstrip()
    if without_key is not None and body.rstrip(":").rstrip().endswith('"'):
        out.append(without_key)  # before ``"key":null``, which would parse
    for tail in (body, _PARTIAL_TOKEN.sub("", body).rstrip()):
        out += [tail + closers, tail.rstrip(",: ") + closers, tail + "null" + closers]
    return out
