"""Script files: the built-in one, user files, and clear one-line errors."""

from __future__ import annotations

import json

import pytest

from otel_agents.llm.scripts import FALLBACK_UTTERANCE, ScriptError, load_script, parse_script


def test_builtin_jack_and_jill():
    script = load_script("jack-and-jill")
    assert script.source == "jack-and-jill" and script.model == "scripted/jack-and-jill"
    assert script.root_name == "main" and script.prompts == ("Create Jack and Jill for a cafe discussion",)
    assert [h.name for h in script.hooks] == ["ResourceMonitor"]
    assert {"main", "Jack", "Jill", "Inner", "ResourceMonitor"} <= set(script.agents)
    failing = [t for t in script.agents["main"] if t.fail_first_attempt]
    assert [(t.fail_first_attempt.status) for t in failing] == [429]
    assert script.turn("nobody", 0).text == FALLBACK_UTTERANCE


def test_a_file_by_path_records_its_absolute_path(tmp_path, monkeypatch):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"name": "mine", "agents": {"main": ["hello"]}}))
    monkeypatch.chdir(tmp_path)
    script = load_script("mine.json")
    assert script.source == str(path.resolve())
    assert script.turn("main", 0).text == "hello"


@pytest.mark.parametrize(
    "data, message",
    [
        ([], "a script is a JSON object"),
        ({"agents": {}}, "'name' must be a non-empty string without '/'"),
        ({"name": "a/b", "agents": {}}, "without '/'"),
        ({"name": "x"}, "'agents' must map agent names to lists of turns"),
        ({"name": "x", "agents": {"main": "hi"}}, "agents.main: must be a list of turns"),
        ({"name": "x", "agents": {"main": [42]}}, r"agents.main\[0\]: a turn is a string or an object"),
        ({"name": "x", "agents": {"main": [{"txt": "typo"}]}}, r"unknown turn field\(s\) \['txt'\]"),
        ({"name": "x", "agents": {"main": [{}]}}, "a turn needs 'text' or 'tool_calls'"),
        ({"name": "x", "agents": {"main": [{"tool_calls": [{"arguments": {}}]}]}}, "needs a string 'name'"),
        ({"name": "x", "agents": {"main": [{"tool_calls": [{"name": "t", "arguments": []}]}]}}, "must be an object"),
        ({"name": "x", "agents": {"main": [{"text": "a", "fail_first_attempt": {"status": 401}}]}}, "must be one of"),
        ({"name": "x", "agents": {"main": [{"text": "a", "usage": {"input_tokens": -1}}]}}, "non-negative"),
        ({"name": "x", "agents": {"main": [{"text": "a", "latency_ms": 1.5}]}}, "'latency_ms'"),
        ({"name": "x", "agents": {}, "prompts": "one"}, "'prompts' must be a list of strings"),
        ({"name": "x", "agents": {}, "hooks": [{"kind": "magic", "name": "h"}]}, "approval, review, transform, reset"),
        ({"name": "x", "agents": {}, "hooks": [{"kind": "approval", "name": "h", "deny_tools": ["x"], "tools": "task"}]},
         r"hooks\[0\]: 'tools' must be a list of non-empty strings"),
        ({"name": "x", "agents": {}, "hooks": [{"kind": "approval", "name": "h", "tool": ["task"]}]},
         r"unknown hook field\(s\) \['tool'\]"),
        ({"name": "x", "agents": {}, "hooks": [{"kind": "transform", "name": "h", "replace": {"a": 1}}]},
         "'replace' must map non-empty strings to strings"),
        ({"name": "x", "agents": {}, "root": {"name": 7}}, "'root.name' must be a string"),
        ({"name": "x", "agents": {}, "root": {"name": ""}}, "'root.name' must be a non-empty string"),
        ({"name": "x", "agents": {}, "hook": []}, r"unknown top-level field\(s\) \['hook'\] \(known: "),
        ({"name": "x", "agents": {}, "root": {"nme": "a"}}, r"unknown 'root' field\(s\) \['nme'\]"),
        ({"name": "x", "agents": {"": ["hi"]}}, "'agents' keys must be non-empty names, not ''"),
        ({"name": "x", "agents": {}, "agent_params": {" ": {}}}, "'agent_params' keys must be non-empty names"),
        ({"name": "x", "agents": {}, "prompts": ["hi", ""]}, "'prompts' must not hold an empty prompt"),
        ({"name": "x", "agents": {"main": [{"tool_calls": [{"name": ""}]}]}}, "needs a string 'name'"),
        ({"name": "x", "agents": {}, "root": {"name": "  "}}, "'root.name' must be a non-empty string"),
        ({"name": "x", "agents": {}, "fallback": None}, "'fallback' must be a non-empty string"),
        ({"name": "x", "agents": {}, "root": {"name": "a/b"}}, "'root.name' may not contain '/'"),
        ({"name": "x", "agents": {"a/b": ["hi"]}}, "'agents' keys: 'a/b' may not contain '/'"),
        ({"name": "x", "agents": {}, "agent_params": {"a\nb": {}}}, r"'agent_params' keys: 'a\\nb' may not contain '\\n'"),
        ({"name": "x", "agents": {}, "agent_budgets": {"a/b": {}}}, "'agent_budgets' keys: 'a/b' may not contain '/'"),
        # the model's name (scripted/NAME) on spans, ledger records and billing CSV: ESC reached them raw
        ({"name": "esc\x1b[31m", "agents": {}}, r"'name' may not contain '\\x1b'"),
        ({"name": " ", "agents": {}}, "'name' must not be empty"),
        ({"name": "rtl\u202e", "agents": {}}, r"'name' may not contain '\\u202e'"),
    ],
)
def test_invalid_scripts_say_where_and_why(data, message):
    with pytest.raises(ScriptError, match=message) as caught:
        parse_script(data, "my.json")
    assert str(caught.value).startswith("my.json")
    assert "\n" not in str(caught.value)


def test_missing_file_and_bad_json(tmp_path):
    with pytest.raises(ScriptError, match="no script 'nope': not a file and not a built-in script"):
        load_script("nope")
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x",\n  "agents": }')
    with pytest.raises(ScriptError, match=r"invalid JSON at line 2 column 13"):
        load_script(str(bad))


def test_a_script_that_is_not_utf8_names_the_file_whole_and_the_byte(tmp_path, monkeypatch):
    # It gave the path as typed and the codec's own words, where every other script error names the absolute path.
    (tmp_path / "latin.json").write_bytes(b'{"name": "caf\xe9", "agents": {}}')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScriptError) as caught:
        load_script("latin.json")
    assert str(caught.value) == (f"{tmp_path.resolve() / 'latin.json'}: not UTF-8 text (byte 0xe9 at byte offset 13): "
                                 "JSON scripts are UTF-8")


def test_a_script_saved_as_utf8_with_a_bom_and_non_ascii_text_loads(tmp_path):
    # Windows editors write the BOM; reading with the locale's encoding also broke non-ASCII text.
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + '{"name": "caf\u00e9", "agents": {"main": ["Bonjour, caf\u00e9 cr\u00e8me."]}}'.encode())
    script = load_script(str(path))
    assert script.name == "caf\u00e9"


def test_nesting_past_the_limit_names_the_line_and_runs_nothing(tmp_path, home):
    """Deep nesting ended in a RecursionError traceback; now it is one line and exit 2."""
    from click.testing import CliRunner

    from otel_agents.cli import cli
    from otel_agents.json_nesting import MAX_DEPTH

    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    path = tmp_path / "deep.json"
    path.write_text('{"name": "x",\n "agents": {"main": ["hi"]},\n "prompts": ' + deep * 300 + "}")
    with pytest.raises(ScriptError) as caught:
        load_script(str(path))
    assert str(caught.value) == f"{path.resolve()}:3: nesting deeper than {MAX_DEPTH}"
    # Exactly at the limit is an ordinary script (refused for its content, not its depth).
    at_limit = '{"name": "x", "agents": {"main": [{"text": "a", "tool_calls": [{"name": "t", "arguments": ' \
        + '{"a": ' * (MAX_DEPTH - 7) + "1" + "}" * (MAX_DEPTH - 7) + "}]}]}}"
    path.write_text(at_limit)
    assert load_script(str(path)).agents["main"][0].tool_calls[0].name == "t"
    path.write_text('{"name": "x",\n "agents": {"main": ["hi"]},\n "prompts": ' + deep * 300 + "}")
    result = CliRunner().invoke(cli, ["run", "--script", str(path), "hello"])
    assert result.exit_code == 2, result.output
    # A usage error, as every script error (click's usage lines, then the one error line).
    assert result.stderr.strip().splitlines()[-1] == f"Error: {path.resolve()}:3: nesting deeper than {MAX_DEPTH}"
    assert "Traceback" not in result.stderr
    assert not home.exists() or not any(home.rglob("*.jsonl"))  # no session, no ledger line


@pytest.mark.parametrize("eviction, message", [
    ([50], "'eviction' must be an object"),
    ({"max_live": 5}, "'eviction' must be an object with 'max_live_agents'"),
    ({"max_live_agents": -1}, "'eviction.max_live_agents' must be a whole number >= 0"),
    ({"max_live_agents": True}, "'eviction.max_live_agents' must be a whole number >= 0"),
    ({"idle_seconds": "30"}, "'eviction.idle_seconds' must be a number of seconds >= 0"),
    ({"idle_seconds": -0.5}, "'eviction.idle_seconds' must be a number of seconds >= 0"),
])
def test_a_bad_eviction_says_where_and_why(eviction, message):
    with pytest.raises(ScriptError, match=message):
        parse_script({"name": "x", "agents": {}, "eviction": eviction}, "my.json")


def test_the_eviction_fields_are_kept_for_the_runtime_policy():
    from otel_agents.runtime.eviction import EvictionPolicy, eviction_policy

    script = parse_script({"name": "x", "agents": {}, "eviction": {"max_live_agents": 3, "idle_seconds": 1.5}}, "my.json")
    assert eviction_policy(script.eviction) == EvictionPolicy(max_live_agents=3, idle_seconds=1.5)
    assert parse_script({"name": "x", "agents": {}}, "my.json").eviction is None


def test_a_key_given_twice_is_refused_not_kept_last(tmp_path):
    path = tmp_path / "twice.json"
    path.write_text('{"name": "x", "agents": {"Jack": ["first"], "main": ["hi"], "Jack": ["second"]}}')
    with pytest.raises(ScriptError, match=r"twice.json: the key 'Jack' is given twice in one object") as caught:
        load_script(str(path))
    assert "\n" not in str(caught.value)
    path.write_text('{"name": "x", "agents": {"Jack": ["first"], "main": ["hi"]}}')
    assert load_script(str(path)).agents["Jack"][0].text == "first"


def test_a_builtin_name_that_is_also_a_file_here_is_refused_unless_saved(tmp_path, monkeypatch):
    """The built-in ran in silence though ./jack-and-jill was the script meant."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jack-and-jill").write_text(json.dumps({"name": "mine", "agents": {"main": ["hi"]}}))
    with pytest.raises(ScriptError) as caught:
        load_script("jack-and-jill")
    assert str(caught.value) == ("script 'jack-and-jill' is both a built-in script and the file ./jack-and-jill: "
                                 "give ./jack-and-jill for the file, or run elsewhere (or rename the file) "
                                 "for the built-in")
    assert load_script("./jack-and-jill").name == "mine"
    assert load_script("jack-and-jill", saved=True).source == "jack-and-jill"  # a session recorded on the built-in


@pytest.mark.parametrize("fallback", ["", "  ", 3])
def test_an_empty_fallback_is_refused(fallback):
    """An agent out of turns answered with an empty utterance."""
    with pytest.raises(ScriptError) as caught:
        parse_script({"name": "x", "agents": {}, "fallback": fallback}, "f.json")
    assert str(caught.value) == "f.json: 'fallback' must be a non-empty string (or left out: the default utterance)"


def _script(**extra):
    base = {"name": "names", "agents": {"main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Jack"}}]}]}}
    return parse_script({**base, **extra}, "s.json")


def test_a_hook_watching_an_agent_the_script_never_has_is_refused():
    hook = {"kind": "review", "name": "Guard", "agents": ["Nobdy"], "reject_if_contains": "x"}
    with pytest.raises(ScriptError) as err:
        _script(hooks=[hook]).check_agent_names("main")
    assert str(err.value) == ("s.json: hook 'Guard': agents names 'Nobdy', no agent of this script "
                              "(its agents: Jack, main): the hook would never act on it")
    # The root, an agent its turns create with task (a key or not): a hook on either can act.
    _script(hooks=[{**hook, "agents": ["main", "Jack"]}]).check_agent_names("main")


def test_an_approval_answered_by_an_agent_the_script_never_has_is_refused():
    """Such a hook approves every request until its agent exists: a misspelt name never denies anything."""
    hook = {"kind": "approval", "name": "Gate", "agent": "Jak", "tools": ["task"]}
    with pytest.raises(ScriptError) as err:
        _script(hooks=[hook]).check_agent_names("main")
    assert str(err.value) == ("s.json: hook 'Gate': agent 'Jak' answers it and is no agent of this script "
                              "(its agents: Jack, main): it would approve everything")
    _script(hooks=[{**hook, "agent": "Jack"}]).check_agent_names("main")  # created by main's task: it will answer


def test_an_agents_key_no_agent_has_is_refused_as_a_typo():
    script = parse_script({"name": "boss", "root": {"name": "boss"}, "agents": {"main": ["Hello"]}}, "s.json")
    with pytest.raises(ScriptError) as err:
        script.check_agent_names(script.root_name)
    assert str(err.value) == ("s.json: 'agents' key 'main' is no agent this script has: not its root ('boss') "
                              "nor a name its turns give 'task' (a typo?)")
    with pytest.raises(ScriptError, match="'agents' key 'Jack'"):  # Jack made by no task now
        _script(agents={"main": ["hi"], "Jack": ["hi"]}).check_agent_names("main")


@pytest.mark.parametrize("field, value", [("agent_budgets", {"max_llm_calls": 0}), ("agent_params", {"temperature": 1})])
def test_an_agent_params_or_budgets_key_no_agent_has_is_refused_as_a_typo(field, value):
    """A misspelt key dropped its limit (or parameters) in silence: the agent meant ran unlimited."""
    with pytest.raises(ScriptError) as err:
        _script(**{field: {"mian": value}}).check_agent_names("main")
    assert str(err.value) == (f"s.json: '{field}' key 'mian' is no agent this script has "
                              "(its agents: Jack, main): it would apply to none (a typo?)")
    with pytest.raises(ScriptError, match=f"'{field}' key 'mian'"):  # a program's root borrowing it: checked too
        _script(**{field: {"mian": value}}).check_agent_names("boss", keys=False)
    _script(**{field: {"main": value, "Jack": value}}).check_agent_names("main")  # the root, a task name


def test_the_builtin_and_example_scripts_name_only_agents_they_have():
    from pathlib import Path

    load_script("jack-and-jill").check_agent_names("main")
    examples = Path(__file__).parents[2] / "examples"
    for name, root in (("jack_and_jill", "main"), ("debate", "moderator"), ("researcher", "researcher")):
        load_script(str(examples / f"{name}.json")).check_agent_names(root)
