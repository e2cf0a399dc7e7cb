"""How deeply a JSON text nests, found before it is parsed: too deep is a one-line error naming its line.

Python's own parser and every recursive walk of its result (decoding, redaction,
tree building) fail with RecursionError somewhere past a few hundred levels, and
orjson refuses past 1024. Scripts (``run --script``) and imported trace files are
therefore refused when they nest deeper than :data:`MAX_DEPTH` brackets: far more
than any script or trace needs (an OTLP span attribute holding a list sits about
12 deep), far less than anything that could break.

The check runs on the bytes, outside strings, in a few C-speed passes (no Python
loop per byte): about 1 s of CPU for a 290 MB, 100k-span trace file, whose import
takes 60-90 s.
"""

from __future__ import annotations

import re

MAX_DEPTH = 64

# Everything but brackets and quotes is deleted (only the structure matters), and braces become
# brackets: depth is all that is counted, so one kind of pair is peeled per pass. Escapes are
# resolved first, on the bytes an escape can hold (a backslash is always followed by one of
# them in JSON, so what follows a backslash there is what followed it in the text).
_NOT_ESCAPES = bytes(b for b in range(256) if b not in b'[]{}"\\/bfnrtu')
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_ONE_KIND = bytes.maketrans(b"{}", b"[]")
_ESCAPE = re.compile(rb'\\[\\"]')
_STRING = re.compile(rb'"[^"]*"')  # once escapes and every other byte are gone
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)  # for the line, on the error path only


class NestingTooDeep(ValueError):
    """The message is ``source:line: nesting deeper than N``."""

    def __init__(self, source: str, line: int, limit: int):
        super().__init__(f"{source}:{line}: nesting deeper than {limit}")
        self.source, self.line, self.limit = source, line, limit


def check_nesting(data: str | bytes, source: str, limit: int = MAX_DEPTH) -> None:
    """Raise :class:`NestingTooDeep` if ``data`` nests brackets deeper than ``limit`` anywhere."""
    line = too_deep_line(data, limit)
    if line is not None:
        raise NestingTooDeep(source, line, limit)


def too_deep_line(data: str | bytes, limit: int = MAX_DEPTH) -> int | None:
    """The line where ``data`` first nests deeper than ``limit``; None when it never does.

    Brackets inside strings do not count. Text that is not JSON gives None unless
    its brackets alone nest too deep: the parser reports what else is wrong.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if b"\\" in raw:
        # \\ and \" can end or hide a string's quotes: dropped in one pass, left to right.
        structure = _ESCAPE.sub(b"", raw.translate(None, _NOT_ESCAPES)).translate(_ONE_KIND, _NOT_STRUCTURE)
    else:
        structure = raw.translate(_ONE_KIND, _NOT_STRUCTURE)
    # Quotes pair up in order; dropping adjacent pairs keeps that and drops no bracket.
    structure = structure.replace(b'""', b"")
    if b'"' in structure:
        structure = _STRING.sub(b"", structure)
    # The deepest brackets are adjacent pairs; one replace drops exactly those (it never
    # rescans what it joined), so each pass peels one level off every nest.
    for passes in range(limit):
        peeled = structure.replace(b"[]", b"")
        if len(peeled) == len(structure):
            # Empty, or unbalanced (closes then opens are left): the parser reports that, unless the opens
            # never closed nest too deep on their own, where it recurses first (the exact scan decides).
            if structure.count(b"[") + passes > limit:
                return _line_past(raw, limit)
            return None
        structure = peeled
    if b"[]" not in structure:
        return None
    return _line_past(raw, limit)


def _line_past(raw: bytes, limit: int) -> int | None:
    """The line of the first bracket deeper than ``limit`` (a scan token by token: error path only)."""
    depth = 0
    for match in _TOKEN.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return raw.count(b"\n", 0, match.start()) + 1
        elif token in (b"]", b"}"):
            depth -= 1
    return None
