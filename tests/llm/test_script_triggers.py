"""A script's `triggers`: checked entries, or one line naming the entry and the problem."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from otel_agents.llm.script_triggers import TriggerError, TriggerSpec, parse_triggers
from otel_agents.llm.scripts import ScriptError, parse_script


def test_entries_parse_with_their_defaults():
    raw = [{"watch": "data.json"}, {"watch": "/tmp/inbox", "agent": "Watcher", "text": "New mail: {path}"}]
    assert parse_triggers(raw, "s.json") == (
        TriggerSpec("data.json"), TriggerSpec("/tmp/inbox", "Watcher", "New mail: {path}"))
    assert parse_triggers(None, "s.json") == ()


@pytest.mark.parametrize("raw, problem", [
    ({"watch": "x"}, "'triggers' must be a list"),
    (["x"], "triggers[0]: a trigger is an object"),
    ([{"watch": ""}], "triggers[0]: 'watch' must be a non-empty path"),
    ([{"watch": "x"}, {"watch": "y", "agnet": "A"}], "triggers[1]: unknown trigger field(s) ['agnet']"),
    ([{"watch": "x", "agent": 3}], "triggers[0]: 'agent' must be a non-empty string"),
    ([{"watch": "x", "text": " "}], "triggers[0]: 'text' must be a non-empty string"),
])
def test_bad_entries_are_one_line_errors(raw, problem):
    with pytest.raises(TriggerError) as caught:
        parse_triggers(raw, "s.json")
    assert str(caught.value).startswith("s.json: ") and problem in str(caught.value)
    assert "\n" not in str(caught.value)


@given(st.lists(st.fixed_dictionaries({"watch": st.text(min_size=1).filter(str.strip)},
                                      optional={"agent": st.text(min_size=1).filter(str.strip)}), max_size=5))
def test_a_script_keeps_its_triggers_in_order(entries):
    script = parse_script({"name": "w", "agents": {}, "triggers": entries}, "w.json")
    assert [(t.watch, t.agent) for t in script.triggers] == [(e["watch"], e.get("agent")) for e in entries]


def test_a_bad_trigger_is_a_script_error():
    with pytest.raises(ScriptError, match=r"w.json: triggers\[0\]"):
        parse_script({"name": "w", "agents": {}, "triggers": [{}]}, "w.json")
