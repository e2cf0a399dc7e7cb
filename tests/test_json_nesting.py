"""The JSON nesting check shared by scripts and imports: exact depth outside strings, the right line."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_agents.json_nesting import MAX_DEPTH, NestingTooDeep, check_nesting, too_deep_line

# Strings full of what could fool a scanner: brackets, quotes, backslashes.
tricky_text = st.text(alphabet=st.sampled_from(list('[]{}"\\/ abn\n\u00e9')), max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | tricky_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text, inner, max_size=3),
    max_leaves=40,
)


def depth_of(value) -> int:
    """The reference: how deep a parsed value's containers nest."""
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(value=json_values, limit=st.integers(0, 6), indent=st.sampled_from([None, 1]))
def test_the_depth_found_on_the_bytes_is_the_parsed_value_s(value, limit, indent):
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    line = too_deep_line(text, limit)
    assert (line is not None) == (depth_of(value) > limit)
    assert too_deep_line(text.encode(), limit) == line
    if line is not None:
        # The line holds a bracket that opens past the limit: what precedes it nests `limit` deep.
        assert 1 <= line <= text.count("\n") + 1


@pytest.mark.parametrize("limit", [1, 5, MAX_DEPTH])
def test_exactly_at_the_limit_passes_one_more_is_refused(limit):
    assert too_deep_line("[" * limit + "]" * limit, limit) is None
    assert too_deep_line('{"a":' * limit + "1" + "}" * limit, limit) is None
    assert too_deep_line("[" * (limit + 1) + "]" * (limit + 1), limit) == 1
    mixed = "".join("[{"[i % 2] + ('"k":' if i % 2 else "") for i in range(limit + 1))
    assert too_deep_line(mixed + "".join("]}"[i % 2] for i in reversed(range(limit + 1))), limit) == 1


def test_brackets_inside_strings_do_not_count_and_escapes_are_honoured():
    deep_text = json.dumps({"s": "[" * 500, "t": "\\" + '"' + "{" * 500})
    assert too_deep_line(deep_text, 2) is None
    # A string that ends in an escaped backslash really ends: the brackets after it count.
    assert too_deep_line('["\\\\", [[[]]]]', 3) == 1
    assert too_deep_line('["\\\\", [[[]]]]', 4) is None
    # Unbalanced brackets inside strings cannot hide nesting outside them.
    assert too_deep_line('["]", [[]], "["]', 2) == 1


def test_the_line_is_where_the_nesting_first_goes_too_deep():
    text = '{\n  "a": [1, 2],\n  "b": [\n    [\n      [\n        []\n      ]\n    ]\n  ]\n}\n'
    assert too_deep_line(text, 4) == 6
    assert too_deep_line(text, 3) == 5
    with pytest.raises(NestingTooDeep, match=r"^f\.json:5: nesting deeper than 3$"):
        check_nesting(text, "f.json", 3)


def test_text_that_is_not_json_is_left_to_the_parser():
    assert too_deep_line("[[[", 3) is None  # never closed: the parser says what is wrong
    assert too_deep_line('{"a": "unterminated', 3) is None
    assert too_deep_line(b"\xff\xfe[[]]", 1) == 1  # bytes that are not UTF-8: only brackets matter


def test_a_large_file_is_checked_quickly():
    line = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"name": 'quote \\" [', "attributes": [{"key": "k", "value": {"stringValue": "x" * 200}}]}] * 50}]}]})
    data = ("\n".join([line] * 2000)).encode()  # about 25 MB
    started = time.perf_counter()
    assert too_deep_line(data) is None
    assert time.perf_counter() - started < 2.5  # C-speed passes, no Python loop per byte


@pytest.mark.parametrize("text, limit, line", [
    ("[[[[[[[[", 3, 1),
    ("[\n" * 5000, 64, 65),
    ('[{"a":' * 3000, 64, 1),
    ('{"name": "x", "agents": {"main": [' + "[" * 5000, 64, 1),
    ("[" * 40 + "[" * 30 + "]" * 30, 64, 1),  # unclosed around closed: deeper than either alone
])
def test_nesting_never_closed_is_refused_when_too_deep_not_left_to_a_recursing_parser(text, limit, line):
    """The parser recursed through 5,000 unclosed brackets to a RecursionError (a traceback from import and
    run --script) before it could say the text never closed."""
    assert too_deep_line(text, limit) == line
    with pytest.raises(NestingTooDeep):
        check_nesting(text, "f.json", limit)


def test_a_script_never_closed_deep_is_the_one_line_nesting_error(tmp_path):
    from otel_agents.llm.scripts import ScriptError, load_script

    path = tmp_path / "deep.json"
    path.write_text('{"name": "x", "agents": {"main": [' + "[" * 5000)
    with pytest.raises(ScriptError, match=r"deep\.json:1: nesting deeper than 64$"):
        load_script(str(path))
