"""A script's hooks: each kind's fields checked into a HookSpec, or one line saying where and why."""

from __future__ import annotations

import pytest

from otel_agents.llm.script_hooks import HookSpec, HookSpecError, parse_hooks


def test_each_kind_becomes_a_spec_with_its_fields_and_defaults():
    hooks = parse_hooks([
        {"kind": "approval", "name": "ResourceMonitor", "agent": "ResourceMonitor", "tools": ["task"]},
        {"kind": "reset", "name": "forget", "max_entries": 6, "agents": ["Jack"]},
        {"kind": "remind", "name": "nudge", "message": "stay brief", "after_turns": 2, "every_seconds": 1.5},
    ], "my.json")
    assert hooks == (
        HookSpec("approval", "ResourceMonitor", agent="ResourceMonitor", tools=("task",)),
        HookSpec("reset", "forget", agents=("Jack",), max_entries=6, keep=1),
        HookSpec("remind", "nudge", message="stay brief", after_turns=2, every_seconds=1.5),
    )
    assert parse_hooks(None, "my.json") == ()


@pytest.mark.parametrize("raw, message", [
    ({"kind": "approval", "name": "h"}, "'hooks' must be a list"),
    ([{"kind": "reset", "name": "h"}], r"hooks\[0\]: a reset hook needs 'max_entries'"),
    ([{"kind": "reset", "name": "h", "max_entries": 3, "keep": -1}], "'keep' must be a non-negative integer"),
    ([{"kind": "review", "name": "h", "max_entries": True}], "'max_entries' must be a non-negative integer"),
    ([{"kind": "remind", "name": "h", "after_turns": 1}], "a remind hook needs a 'message'"),
    ([{"kind": "remind", "name": "h", "message": "m"}], "needs 'after_turns', 'tools' or 'every_seconds'"),
    ([{"kind": "remind", "name": "h", "message": "m", "after_turns": 0}], "'after_turns' must be a positive integer"),
    ([{"kind": "remind", "name": "h", "message": "m", "every_seconds": 0}], "'every_seconds' must be a positive number"),
    ([{"kind": "review", "name": "h"}, {"kind": "review"}], r"hooks\[1\]: a hook needs a string 'name'"),
    ([{"kind": "review", "name": "h", "agents": "Jack"}], "'agents' must be a list of strings"),
])
def test_an_unusable_hook_is_one_line_naming_where(raw, message):
    with pytest.raises(HookSpecError, match=message) as caught:
        parse_hooks(raw, "my.json")
    assert str(caught.value).startswith("my.json: ") and "\n" not in str(caught.value)
