"""terminal_text: every control character but the text's lines shown as an escape, ordinary text unchanged."""

from __future__ import annotations

import pytest

from otel_agents.terminal_text import shown


def test_ordinary_text_is_returned_unchanged():
    text = "Jack said: «héllo» 你好 🙂\n\tindented\r\nnext line\\x07 stays as written"
    assert shown(text) is text


@pytest.mark.parametrize(("raw", "escaped"), [
    ("\x1b[2J", "\\x1b[2J"),  # ESC: would clear the screen
    ("\a", "\\x07"),  # BEL
    ("over\rwrite", "over\\rwrite"),  # a lone CR would let "write" overwrite "over"
    ("\x00\x08\x7f", "\\x00\\x08\\x7f"),
    ("\x85\x9b31m", "\\x85\\x9b31m"),  # C1: NEL, CSI
    ("abc\u202edef", "abc\\u202edef"),  # RIGHT-TO-LEFT OVERRIDE would show "fed"
    ("\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c",
     "\\u202a\\u202b\\u202c\\u202d\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c"),
    ("a\r\r\nb", "a\\r\r\nb"),  # only the CR of a CRLF is a line's end
])
def test_each_control_is_shown_as_its_escape(raw, escaped):
    assert shown(raw) == escaped


def test_a_cell_escapes_its_line_breaks_too():
    assert shown("one\ttwo\r\nthree\nfour\x1b", lines=False) == "one\\ttwo\\r\\nthree\\nfour\\x1b"
