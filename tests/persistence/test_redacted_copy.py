"""A redacted copy of a saved value: equal but where it holds a marker, each marker standing for some text."""

from __future__ import annotations

import pytest

from otel_agents.persistence.redacted_copy import is_redacted_copy
from otel_agents.tracing.redaction import redact


@pytest.mark.parametrize("saved", [
    "sk-ant-api03-ABCDEFGHIJ1234567890 hello",
    "call 10.0.0.1 with Authorization: Bearer abcdefghijklmnopqrstuvwxyz and api_key='xyz12345'",
    {"content": "password=hunter2hunter2", "tool_calls": [{"arguments": {"api_key": "k-1234567890abcdef"}}], "n": 3},
    ["plain", 5, None, {"x-api-key": 12}],
])
def test_what_redaction_makes_of_a_value_is_a_redacted_copy_of_it(saved):
    assert redact(saved) != saved
    assert is_redacted_copy(saved, redact(saved))


@pytest.mark.parametrize("saved, copy", [
    ("secret hello", "[REDACTED] goodbye"),  # the text around the marker differs
    ("hello", "hello [REDACTED]"),  # a marker stands for some text, not none
    ("hello", "[REDACTED][REDACTED]x"),
    ("a b", "a c"),  # no marker: simply different
    ({"a": "x"}, {"a": "x", "b": "[REDACTED]"}),  # a key the saved value lacks
    (["x"], ["x", "[IP]"]),
    (5, 6),
])
def test_anything_else_is_not(saved, copy):
    assert not is_redacted_copy(saved, copy)


def test_many_markers_are_matched_in_linear_time():
    import time

    saved, copy = "a" * 200_000, "[REDACTED]b" * 2_000
    started = time.perf_counter()
    assert not is_redacted_copy(saved, copy)
    assert time.perf_counter() - started < 1
