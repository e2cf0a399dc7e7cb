"""Untrusted text made safe to show on a terminal: every control but the line structure shown as an escape.

Model output, tool results, prompts and imported traces may hold characters a terminal obeys
instead of showing: ESC sequences (clear the screen, recolour, retitle the window), BEL, a lone
CR (the rest of a line overwrites what it showed), other C0 and C1 controls, and the Unicode bidi
controls (U+202E RIGHT-TO-LEFT OVERRIDE shows the text after it reversed). :func:`shown` writes
each as its Python escape (``\\x1b``, ``\\x07``, ``\\r``, ``\\x9b``, ``\\u202e``), the same way in every
command's text output. Display only: what is saved, and ``--json``, keep the exact content.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls and every Bidi_Control character of Unicode.
_CONTROLS = "\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_LINES = re.compile(f"(?:(?!\r\n|\n|\t)[{_CONTROLS}])+")  # CRLF, LF and TAB kept: the text's lines
_CELL = re.compile(f"[{_CONTROLS}]+")  # one table cell or one field: no line breaks either


def _escaped(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def shown(text: str, *, lines: bool = True) -> str:
    """``text`` as a terminal may show it: line feeds (a CRLF as one) and tabs kept when ``lines``,
    every other control character escaped; text without any is returned unchanged (the same object)."""
    return (_LINES if lines else _CELL).sub(_escaped, text)
