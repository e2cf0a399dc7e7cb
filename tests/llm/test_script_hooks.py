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
    ([{"kind": "reset", "name": "h", "max_entries": True}], "'max_entries' must be a non-negative integer"),
    ([{"kind": "remind", "name": "h", "after_turns": 1}], "a remind hook needs a 'message'"),
    ([{"kind": "remind", "name": "h", "message": "m"}], "needs 'after_turns', 'tools' or 'every_seconds'"),
    ([{"kind": "remind", "name": "h", "message": "m", "after_turns": 0}], "'after_turns' must be a positive integer"),
    ([{"kind": "remind", "name": "h", "message": "m", "every_seconds": 0}], "'every_seconds' must be a positive number"),
    ([{"kind": "review", "name": "h", "reject_if_contains": "x"}, {"kind": "review"}],
     r"hooks\[1\]: a hook needs a string 'name'"),
    ([{"kind": "review", "name": "h", "reject_if_contains": "x", "agents": "Jack"}],
     "'agents' must be a list of non-empty strings"),
    # A field of another kind would be ignored in silence: a transform has no agents, it rewrites every delivery.
    ([{"kind": "transform", "name": "h", "agents": ["main"], "replace": {"a": "b"}}],
     r"a transform hook has no field\(s\) \['agents'\] \(its fields: replace\)"),
    ([{"kind": "approval", "name": "h", "reject_if_contains": "x", "deny_tools": ["t"]}],
     r"an approval hook has no field\(s\) \['reject_if_contains'\]"),
    ([{"kind": "review", "name": "h", "deny_tools": ["x"]}], r"a review hook has no field\(s\) \['deny_tools'\]"),
    # Hooks that could never act.
    ([{"kind": "approval", "name": "h", "tools": ["task"]}], "an approval hook needs 'agent' .* or 'deny_tools'"),
    ([{"kind": "approval", "name": "h", "agent": "M", "deny_tools": ["x"]}], "needs 'agent' .* or 'deny_tools'"),
    ([{"kind": "approval", "name": "h", "deny_tools": []}], "'deny_tools' is empty: the hook would deny nothing"),
    ([{"kind": "approval", "name": "h", "deny_tools": ["t"], "tools": []}], "'tools' is empty: the hook would watch"),
    ([{"kind": "review", "name": "h"}], "a review hook needs 'reject_if_contains'"),
    ([{"kind": "reset", "name": "h", "max_entries": 2, "keep": 3}], "'keep' must not exceed 'max_entries'"),
    ([{"kind": "transform", "name": "h", "replace": {}}], "a transform hook needs 'replace' with at least one"),
    # Empty values: an empty key would be replaced between every two characters of every message.
    ([{"kind": "transform", "name": "h", "replace": {"": "-"}}], "'replace' must map non-empty strings to strings"),
    ([{"kind": "review", "name": " ", "reject_if_contains": "x"}], "a hook needs a string 'name'"),
    ([{"kind": "approval", "name": "h", "agent": ""}], "'agent' must be a non-empty string"),
    ([{"kind": "approval", "name": "h", "deny_tools": [""]}], "'deny_tools' must be a list of non-empty strings"),
    # One name for two hooks: denials, hook events and run.hooks could not tell them apart.
    ([{"kind": "approval", "name": "h", "deny_tools": ["t"]}, {"kind": "review", "name": "h", "reject_if_contains": "x"}],
     r"hooks\[1\]: two hooks are named 'h'; give each its own name"),
])
def test_an_unusable_hook_is_one_line_naming_where(raw, message):
    with pytest.raises(HookSpecError, match=message) as caught:
        parse_hooks(raw, "my.json")
    assert str(caught.value).startswith("my.json: ") and "\n" not in str(caught.value)
