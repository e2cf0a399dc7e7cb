"""The public API refuses a wrong argument where it is given, in one error naming it (api_checks.py)."""

from __future__ import annotations

import json
import re

import pytest

from otel_agents import Agent, Budget, EvictionPolicy, ModelSettings, Session, approval, fork, remind, resume, tool
from otel_agents.apps import AppError, load_app
from otel_agents.runtime.tools import make_tool


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return city


@tool(name="lookup")
def lookup_again(city: str) -> str:
    """The same name again."""
    return city


@approval
def allow_all(request) -> bool:
    return True


@tool(name="task")
def my_task(what: str) -> str:
    """Shadows the built-in."""
    return what


AGENT_CASES = [
    (lambda: Agent(123), TypeError, "Agent: name must be a non-empty string, not int"),
    (lambda: Agent("  "), ValueError, "Agent('  '): name must be a non-empty string, not '  '"),
    (lambda: Agent("a/b"), ValueError,
     "Agent('a/b'): name may not contain '/' (it joins agent names in call paths)"),
    (lambda: Agent("a\x00b"), ValueError,
     "Agent('a\\x00b'): name may not contain '\\x00' (a name is one line of printable characters)"),
    (lambda: Agent("a\tb"), ValueError, "Agent('a\\tb'): name may not contain '\\t'"),
    (lambda: Agent("a", 5), TypeError, "Agent('a'): system_prompt= takes a string, not int"),
    (lambda: Agent("a", model=""), ValueError, "Agent('a'): model= is empty"),
    (lambda: Agent("a", tools=[5]), TypeError, "Agent('a'): tools[0] is int, not a function or a Tool"),
    (lambda: Agent("a", tools=lookup), TypeError, "Agent('a'): tools= takes a list of tools, not Tool"),
    (lambda: Agent("a", tools=[lookup, lookup_again]), ValueError, "Agent('a'): two tools are named 'lookup'"),
    (lambda: Agent("a", tools=[my_task]), ValueError, "Agent('a'): a tool may not be named 'task'"),
    (lambda: Agent("a", tools=[lambda city: city]), TypeError, "Agent('a'): tools[0]: tool name '<lambda>'"),
    (lambda: tool(name="")(lambda city: city), ValueError, "tool: name= is empty"),
    (lambda: make_tool(lambda city: city, name=""), ValueError, "tool: name= is empty"),
    (lambda: Agent("a", max_turns=0), ValueError, "Agent('a'): max_turns= must be at least 1, not 0"),
    (lambda: Agent("a", max_turns=True), TypeError, "Agent('a'): max_turns= takes a whole number, not bool"),
    (lambda: Agent("a", budget={"max_cost_usd": 1}), TypeError, "Agent('a'): budget= takes a Budget, not dict"),
    (lambda: Agent("a", model_settings={"temperature": 0}), TypeError,
     "Agent('a'): model_settings= takes a ModelSettings, not dict"),
]


@pytest.mark.parametrize("make, error, says", AGENT_CASES)
def test_an_agent_is_checked_when_it_is_made(make, error, says):
    with pytest.raises(error, match="^" + re.escape(says)):
        make()


def session(**options):
    return Session(Agent("a"), script="jack-and-jill", **options)


SESSION_CASES = [
    (lambda: Session("a", script="jack-and-jill"), TypeError, "Session: agent must be an otel_agents.Agent, not str"),
    (lambda: session(max_turns=0), ValueError, "Session: max_turns= must be at least 1, not 0"),
    (lambda: session(max_attempts=0), ValueError, "Session: max_attempts= must be at least 1, not 0"),
    (lambda: session(timeout="abc"), TypeError, "Session: timeout= takes seconds as a number, not str"),
    (lambda: session(timeout=0), ValueError, "Session: timeout= must be a positive number of seconds, not 0"),
    (lambda: session(timeout=float("nan")), ValueError, "Session: timeout= must be a positive number"),
    (lambda: session(budget={"max_cost_usd": 1}), TypeError, "Session: budget= takes a Budget, not dict"),
    (lambda: session(model_settings={"seed": 1}), TypeError, "Session: model_settings= takes a ModelSettings"),
    (lambda: session(hooks=allow_all), TypeError, "Session: hooks= takes a list of hooks, not one hook: hooks=[allow_all]"),
    (lambda: session(hooks=[5]), TypeError, "Session: hooks[0] is int, not a hook"),
    (lambda: session(on_text="print"), TypeError, "Session: on_text= takes a function of (agent name, text), not str"),
    (lambda: session(eviction=5), TypeError, "Session: eviction= takes an EvictionPolicy, not int"),
    (lambda: session(app="myapp"), ValueError, "Session: app= 'myapp' is not of the form package.module:factory"),
    (lambda: session(session_id=5), TypeError, "Session: session_id= takes a string, not int"),
    (lambda: session(stream="yes"), TypeError, "Session: stream= takes True or False, not str"),
    (lambda: Session(Agent("a"), model=5), TypeError, "Session: model= takes a string, not int"),
    (lambda: Session(Agent("a"), script=5), TypeError, "Session: script= takes a file path or a built-in script's name"),
    (lambda: Session(Agent("a"), hooks=[allow_all, allow_all]), ValueError, "Session: hooks[1] ('allow_all') is given twice"),
    (lambda: Session(Agent("a"), hooks=[guard_of(), guard_of()]), ValueError,
     "Session: hooks: two hooks are named 'guard'; give each its own name="),
    (lambda: Session(Agent("a"), script="jack-and-jill", hooks=[approval(name="ResourceMonitor")(lambda r: True)]),
     ValueError, "Session: hooks: two hooks are named 'ResourceMonitor' (one of them the script's); give each its own name="),
    (lambda: Session(Agent("a"), on_text=lambda: None), TypeError, "Session: on_text= cannot be called with (agent name, text)"),
    (lambda: Session(Agent("a", tools=[lookup]), script="jack-and-jill", hooks=[guard_of("lookpu")]), ValueError,
     "hook 'guard': tools= names 'lookpu', which no agent of this session has as a tool (its tools: discuss, lookup, task)"),
    (lambda: Session(Agent("a"), script="jack-and-jill", hooks=[remind("m", after_turns=1, tools=["lookup"])]), ValueError,
     "hook 'remind': tools= names 'lookup', which no agent of this session has as a tool (its tools: discuss, task)"),
]


def guard_of(*tools):
    @approval(tools=list(tools))
    def guard(request) -> bool:
        return False

    return guard


@pytest.mark.parametrize("make, error, says", SESSION_CASES)
def test_a_session_is_checked_before_anything_is_built(make, error, says):
    with pytest.raises(error, match="^" + re.escape(says)):
        make()


@pytest.mark.parametrize("call, error, says", [
    (lambda: resume(5), TypeError, "resume: session_id must be a non-empty string, not int"),
    (lambda: resume("x", tools=[5]), TypeError, "resume: tools[0] is int, not a function or a Tool"),
    (lambda: resume("x", hooks=allow_all), TypeError, "resume: hooks= takes a list of hooks, not one hook"),
    (lambda: resume("x", hooks=[guard_of(), guard_of()]), ValueError, "resume: hooks: two hooks are named 'guard'"),
    (lambda: fork("x", at="m1", hooks=[guard_of(), guard_of()]), ValueError, "fork: hooks: two hooks are named 'guard'"),
    (lambda: resume("x", budget={}), TypeError, "resume: budget= takes a Budget, not dict"),
    (lambda: fork("x", at=None), TypeError, "fork: at must be a non-empty string, not NoneType"),
    (lambda: fork("x", at="m1", max_turns=-1), ValueError, "fork: max_turns= must be at least 1, not -1"),
    (lambda: fork("x", at="m1", tools=[lookup, lookup]), ValueError, "fork: two tools are named 'lookup'"),
])
def test_resume_and_fork_check_their_arguments_before_looking_for_a_recording(call, error, says):
    # Outside a recording block: a wrong argument is named before the missing block is.
    with pytest.raises(error, match="^" + re.escape(says)):
        call()


def test_right_arguments_still_pass_and_tools_become_tools_once():
    agent = Agent("a", "be brief", tools=[lookup, lambda_named()], max_turns=3, budget=Budget(max_llm_calls=2),
                  model_settings=ModelSettings(temperature=0.0))
    assert [t.name for t in agent.tools] == ["lookup", "echo"]
    assert agent.tool_list() == agent.tools
    with Session(agent, script="jack-and-jill", hooks=(allow_all,), timeout=1, max_attempts=1, on_text=print):
        pass


def lambda_named():
    return make_tool(lambda text: text, name="echo", description="Echo the text.")


def test_an_apps_hooks_are_checked_when_it_is_loaded(tmp_path, monkeypatch):
    (tmp_path / "hooky_app.py").write_text(
        "from otel_agents import Agent\n"
        "def make():\n"
        "    return Agent('a'), [print]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AppError, match=r"^app 'hooky_app:make': hooks\[0\] is builtin_function_or_method, not a hook"):
        load_app("hooky_app:make")


def test_a_tool_name_a_provider_would_refuse_is_refused_when_the_tool_is_made():
    with pytest.raises(ValueError, match=r"tool name 'look up': use 1 to 64 letters, digits"):
        make_tool(lambda city: city, name="look up")
    assert make_tool(lambda city: city, name="look-up_2").name == "look-up_2"


@pytest.mark.parametrize("call, error, says", [
    (lambda s: s.run_sync(5), TypeError, "Session.run_sync: prompt must be a non-empty string, not int"),
    (lambda s: s.run_sync(""), ValueError, "Session.run_sync: prompt must be a non-empty string, not ''"),
    (lambda s: s.run_sync("hi", agent=5), TypeError, "Session.run_sync: agent= takes a string, not int"),
    (lambda s: s.external(""), ValueError, "Session.external: text must be a non-empty string, not ''"),
    (lambda s: s.external(5), TypeError, "Session.external: text must be a non-empty string, not int"),
    (lambda s: s.external("x", agent=[]), TypeError, "Session.external: agent= takes a string, not list"),
])
def test_prompts_and_outside_events_are_checked_before_anything_is_recorded(tmp_path, call, error, says):
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"name": f"checks-{tmp_path.name}", "agents": {"a": ["hello back"]}}))
    session = Session(Agent("a"), script=str(script))
    try:
        with pytest.raises(error, match="^" + re.escape(says)):
            call(session)
        # Nothing was heard: the root's transcript is still empty, and the session still answers.
        assert session.runtime.root is None or session.runtime.root.transcript_ids == []
        assert session.run_sync("hello") == "hello back"
    finally:
        session.close()


@pytest.mark.parametrize("make, error, says", [
    (lambda: Budget(max_cost_usd=-1), ValueError, "Budget: max_cost_usd=-1: input should be greater than or equal to 0"),
    (lambda: Budget(max_tokens=True), ValueError, "Budget: max_tokens=True: must be an integer, not a boolean"),
    (lambda: Budget(max_llm_calls="x"), ValueError, "Budget: max_llm_calls='x': must be an integer, not a string"),
    (lambda: ModelSettings(temperature="warm"), ValueError, "ModelSettings: temperature='warm': must be a number, not a string"),
    (lambda: ModelSettings(stop=5), ValueError, "ModelSettings: stop=5: must be a string or a list of strings"),
    (lambda: ModelSettings(stop=["END", 1]), ValueError, "ModelSettings: stop=['END', 1]: must be a string or a list"),
    (lambda: ModelSettings(stop=["END", ""]), ValueError, "ModelSettings: stop=['END', '']: a stop sequence may not be empty"),
    (lambda: Budget(1), TypeError,
     "Budget takes keyword arguments only (max_cost_usd=, max_tokens=, max_llm_calls=)"),
    (lambda: ModelSettings(0.5), TypeError, "ModelSettings takes keyword arguments only (temperature="),
    (lambda: EvictionPolicy(3), TypeError, "EvictionPolicy takes keyword arguments only (max_live_agents="),
    (lambda: Budget(max_cost_usd=float("inf")), ValueError, "Budget: max_cost_usd=inf: must be a finite number"),
    (lambda: Budget(max_cost_usd=float("nan")), ValueError, "Budget: max_cost_usd=nan: must be a number, not NaN"),
    (lambda: EvictionPolicy(max_live_agents=True), ValueError,
     "EvictionPolicy: max_live_agents=True: must be an integer, not a boolean"),
    (lambda: Budget(max_tokens=5).merged({"max_tokens": 1}), TypeError, "Budget.merged takes a Budget, not dict"),
])
def test_the_public_models_refuse_a_value_in_one_line_naming_it(make, error, says):
    with pytest.raises(error, match="^" + re.escape(says)) as caught:
        make()
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("call, error", [
    (lambda: resume("../elsewhere", script="jack-and-jill"), "RecordingError"),
    (lambda: fork("../elsewhere", at="msg_000001"), "ForkError"),
])
def test_a_session_id_that_is_no_session_id_is_the_documented_error(tmp_path, call, error):
    import otel_agents

    with otel_agents.recording(home=tmp_path / "home"):
        with pytest.raises(ValueError, match=r"^invalid session id '\.\./elsewhere'") as raised:
            call()
    assert any(kind.__name__ == error for kind in type(raised.value).__mro__), type(raised.value)
    assert not (tmp_path / "elsewhere").exists()


def test_a_scripted_model_of_another_script_is_refused_where_it_is_given(tmp_path, monkeypatch):
    """As the CLI's ``--model scripted/NAME``: it failed only at the first LLM call, an attempt recorded."""
    import otel_agents
    from otel_agents.llm.scripts import load_script

    own = load_script("jack-and-jill").model
    with pytest.raises(ValueError, match=r"^Session: model= 'scripted/other' answers only from its own script, "
                                         r"and no script is given: give script='other'"):
        Session(Agent("main", "x"), model="scripted/other")
    with pytest.raises(ValueError, match=rf"^Session: model= 'scripted/other' .* the script's model is {own}"):
        Session(Agent("main", "x"), script="jack-and-jill", model="scripted/other")
    with Session(Agent("main", "x"), script="jack-and-jill", model=own):
        pass
    with pytest.raises(ValueError, match=r"^Session: Agent\('main'\): model= 'scripted/other' answers only"):
        Session(Agent("main", "x", model="scripted/other"), script="jack-and-jill")  # the agent's own, unchecked before
    with Session(Agent("main", "x", model="scripted/other"), script="jack-and-jill", model=own):
        pass  # the session's model is every agent's: the agent's is not used
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    home = tmp_path / "home"
    with otel_agents.recording(home=home):
        with Session(Agent("main", "x"), script="jack-and-jill") as saved:
            saved.run_sync("hi")
    before = sorted(path.name for path in (home / "sessions").iterdir())
    events = (home / "sessions" / saved.id / "events.jsonl").read_bytes()
    with otel_agents.recording(home=home):
        with pytest.raises(ValueError, match=r"^resume: model= 'scripted/other' answers only from its own script"):
            resume(saved.id, model="scripted/other")
        with pytest.raises(ValueError, match=r"^fork: model= 'scripted/other' answers only from its own script"):
            fork(saved.id, at="msg_000001", model="scripted/other")
        with resume(saved.id, model=own):  # the lock the refused resume took is released
            pass
    assert sorted(path.name for path in (home / "sessions").iterdir()) == before
    assert (home / "sessions" / saved.id / "events.jsonl").read_bytes() == events


def test_a_scripts_hook_watching_an_agent_it_never_has_is_refused_when_the_root_answers_from_it(tmp_path):
    """It ran, the hook never acting; with a real model the agents are the model's, so nothing is refused."""
    from otel_agents.llm.scripts import ScriptError

    script = tmp_path / "s.json"
    script.write_text(json.dumps({"name": f"hooked-{tmp_path.name}", "agents": {"a": ["hi"]},
                                  "hooks": [{"kind": "review", "name": "G", "agents": ["Nobdy"],
                                             "reject_if_contains": "x"}]}))
    with pytest.raises(ScriptError, match=r"hook 'G': agents names 'Nobdy', no agent of this script \(its agents: a\)"):
        Session(Agent("a"), script=str(script))
    Session(Agent("a", model="openai/gpt-4o-mini"), script=str(script), allow_unpriced=True).close()


@pytest.mark.parametrize("field, value", [("agent_budgets", {"max_llm_calls": 0}), ("agent_params", {"top_p": 1})])
def test_a_scripts_budget_or_params_for_an_agent_it_never_has_is_refused_as_the_cli_refuses_it(tmp_path, field, value):
    """The misspelt agent's limit was dropped in silence: the agent meant ran unlimited."""
    from otel_agents.llm.scripts import ScriptError

    script = tmp_path / "s.json"
    script.write_text(json.dumps({"name": f"keyed-{tmp_path.name}", "agents": {"a": ["hi"]}, field: {"mian": value}}))
    with pytest.raises(ScriptError, match=rf"'{field}' key 'mian' is no agent this script has \(its agents: a\)"):
        Session(Agent("a"), script=str(script))


def test_session_agent_looks_up_and_returns_none_where_run_raises(tmp_path):
    with Session(Agent("main"), script="jack-and-jill") as session:
        assert session.agent("Nobody") is None
        with pytest.raises(ValueError, match="no agent 'Nobody' in session"):
            session.run_sync("hi", agent="Nobody")


def test_resume_refuses_a_scripts_hook_watching_an_agent_the_session_never_has(tmp_path, monkeypatch):
    """As ``otel-agents resume --script`` refuses it; agents the session already has (Jack's) are known."""
    import otel_agents
    from otel_agents import review
    from otel_agents.llm.scripts import ScriptError

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    home = tmp_path / "home"
    with otel_agents.recording(home=home):
        with Session(Agent("main", "x"), script="jack-and-jill") as saved:
            saved.run_sync("hi")
    events = (home / "sessions" / saved.id / "events.jsonl").read_bytes()
    script = tmp_path / "s.json"
    # the same model as the session's, so its root answers from it; its turns create no agent
    script.write_text(json.dumps({"name": "jack-and-jill", "agents": {"main": ["again"]},
                                  "hooks": [{"kind": "review", "name": "G", "agents": ["Nobdy"],
                                             "reject_if_contains": "x"}]}))

    @review(agents=["Jil"])
    def picky(agent, utterance):
        return None

    with otel_agents.recording(home=home):
        with pytest.raises(ScriptError, match=r"hook 'G': agents names 'Nobdy', no agent of this script"):
            resume(saved.id, script=str(script))
        with pytest.raises(ScriptError, match=r"^resume: hook 'picky': agents names 'Jil'"):
            resume(saved.id, hooks=[picky])
        script.write_text(json.dumps({"name": "jack-and-jill", "agents": {"main": ["again"]},
                                      "hooks": [{"kind": "review", "name": "G", "agents": ["Jack", "Jill"],
                                                 "reject_if_contains": "x"}]}))
        with resume(saved.id, script=str(script)):  # the session's own agents, though this script creates none
            pass
    assert (home / "sessions" / saved.id / "events.jsonl").read_bytes() == events


def test_a_misspelt_agent_approval_hook_is_refused_as_a_scripts_is(tmp_path, monkeypatch):
    """Its agent never existed, so it approved every call (a task the monitor was to deny made an agent)."""
    import otel_agents
    from otel_agents import agent_approval_hook
    from otel_agents.llm.scripts import ScriptError

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    script = tmp_path / "typo.json"
    script.write_text(json.dumps({"name": f"typo-{tmp_path.name}", "agents": {
        "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "ResourceMonitor"}}]}, "x"],
        "ResourceMonitor": ["DENY. no"]}}))
    typo = agent_approval_hook("ResourceMonitr", tools=["task"])
    with pytest.raises(ScriptError, match=r"^Session: hook 'ResourceMonitr': agent 'ResourceMonitr' answers it and "
                                          r"is no agent of this script .*: it would approve everything"):
        Session(Agent("main"), hooks=[typo], script=str(script))
    home = tmp_path / "home"
    with otel_agents.recording(home=home):
        with Session(Agent("main"), hooks=[agent_approval_hook("ResourceMonitor", tools=["task"])],
                     script=str(script)) as saved:
            saved.run_sync("hi")
        with pytest.raises(ScriptError, match=r"^resume: hook 'ResourceMonitr': agent 'ResourceMonitr' answers it"):
            resume(saved.id, hooks=[typo], script=str(script))
