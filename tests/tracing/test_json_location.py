"""Paths inside JSON documents: written one way, found as the line of the value in the text."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_agents.tracing.json_location import Keyed, line_of, render_path

DOC = {"resourceSpans": [{"scopeSpans": [{"spans": [
    {"name": "a", "attributes": [{"key": "x", "value": {"intValue": "1"}}]},
    {"name": "b", "attributes": [{"key": "y", "value": {}}, {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "-5"}}]},
]}]}]}


def test_render_path_quotes_keys_that_would_not_read_back():
    assert render_path(("resourceSpans", 0, "spans", 3, "name")) == "resourceSpans[0].spans[3].name"
    assert render_path((0, "spans")) == "[0].spans"
    assert render_path(("processes", "p\n1", "a.b", "")) == 'processes["p\\n1"]["a.b"][""]'
    assert render_path(("tags", Keyed("k"))) == 'tags[key="k"]'


def test_the_line_of_a_value_in_a_pretty_printed_document():
    text = "\n\n" + json.dumps(DOC, indent=2)  # the document starts on line 3
    steps = ("resourceSpans", 0, "scopeSpans", 0, "spans", 1, "attributes", Keyed("gen_ai.usage.input_tokens"))
    line, found = line_of(text, 3, steps)
    assert text.splitlines()[line - 1].strip() == "{"
    assert text.splitlines()[line].strip() == '"key": "gen_ai.usage.input_tokens",'
    assert found == ["resourceSpans", 0, "scopeSpans", 0, "spans", 1, "attributes", 1]
    line, found = line_of(text, 3, steps[:6] + ("name",))
    assert text.splitlines()[line - 1].strip() == '"name": "b",'


def test_steps_it_cannot_follow_leave_the_last_place_found():
    text = json.dumps(DOC, indent=1)
    line, found = line_of(text, 1, ("resourceSpans", 0, "nope", 3))
    assert found == ["resourceSpans", 0, "nope", 3]
    assert text.splitlines()[line - 1].strip() == "{"  # the resource spans item
    assert line_of(text, 1, ("resourceSpans", 7)) == (2, ["resourceSpans", 7])


def test_snake_case_keys_and_one_document_per_line():
    lines = [json.dumps({"resource_spans": []}), json.dumps({"resource_spans": [{"scope_spans": []}]})]
    assert line_of("\n".join(lines), 2, ("resourceSpans", 0, "scopeSpans")) == (2, ["resourceSpans", 0, "scopeSpans"])


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.integers() | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=15),
       st.sampled_from([None, 0, 2]))
def test_every_value_is_found_on_the_line_it_starts(value, indent):
    text = json.dumps(value, indent=indent)
    starts = []  # (steps, line) of every value, by a reference walk of the pretty printer's output

    def walk(node, steps):
        starts.append(steps)
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
        for step, child in children:
            walk(child, steps + (step,))

    walk(value, ())
    for steps in starts:
        line, found = line_of(text, 1, steps)
        assert found == list(steps)
        rest = text.splitlines()[line - 1] if text else ""
        leaf = steps and not isinstance(_at(value, steps), (list, dict))
        if leaf and indent is not None:
            assert json.dumps(_at(value, steps)) in rest


def _at(value, steps):
    for step in steps:
        value = value[step]
    return value


def test_a_key_given_twice_is_found_where_decoding_takes_it():
    text = json.dumps([{"key": "k", "value": 1}, {"key": "k", "value": 2}], indent=0)
    line, found = line_of(text, 1, (Keyed("k"),))
    assert found == [1] and text.splitlines()[line].startswith('"key"') and line > 2
