"""Request parameters: sent through litellm's real HTTP path, recorded as gen_ai.request.*, inherited,
set from scripts, ``--param`` and the Python API, and carried on by resume."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from otel_agents.llm.model_settings import (
    ModelSettings,
    ModelSettingsError,
    parse_params,
    settings_from_json,
)
from otel_agents.llm.scripts import ScriptError, parse_script
from otel_agents.tracing import semconv as sc
from support.in_process import run_in_process
from support.openai_server import Reply

ROOT = Path(__file__).resolve().parents[2]


def chats(memory_tracing):
    return sorted((s for s in memory_tracing.spans() if s.name.startswith("chat ")), key=lambda s: s.start_time)


async def test_parameters_reach_the_server_and_the_spans_and_sub_agents_inherit_them(server, memory_tracing, no_sleep):
    from otel_agents.llm.client import LLMClient
    from otel_agents.runtime.session import AgentSpec, Session

    server.plan(
        Reply(tool_calls=[{"name": "task", "arguments": {"name": "Jack", "user_prompt": "hi"}, "id": "c1"}]),
        Reply(content="Jack here"),
        Reply(content="done"),
    )
    llm = LLMClient(memory_tracing.telemetry, api_base=server.api_base, api_key="sk-test", sleep=no_sleep)
    session = Session(
        telemetry=memory_tracing.telemetry, llm=llm, root=AgentSpec("main", "openai/test-model"),
        agent_settings={"main": ModelSettings(temperature=0.2, stop="END"), "Jack": ModelSettings(max_tokens=50)},
        settings_override=ModelSettings(seed=7),
    )
    assert await session.run("go") == "done"
    main_1, jack, main_2 = server.bodies
    for body in (main_1, main_2):
        assert (body["temperature"], body["stop"], body["seed"]) == (0.2, ["END"], 7)
        assert "max_tokens" not in body and "top_p" not in body  # unset: not sent
    # Jack inherits main's parameters, adds its own, and the override is on top of both.
    assert (jack["temperature"], jack["stop"], jack["seed"], jack["max_tokens"]) == (0.2, ["END"], 7, 50)
    spans = chats(memory_tracing)
    jack_span = next(s for s in spans if s.attributes[sc.GEN_AI_AGENT_NAME] == "Jack")
    assert jack_span.attributes[sc.GEN_AI_REQUEST_TEMPERATURE] == 0.2
    assert isinstance(jack_span.attributes[sc.GEN_AI_REQUEST_TEMPERATURE], float)  # double in the registry
    assert jack_span.attributes[sc.GEN_AI_REQUEST_MAX_TOKENS] == 50
    assert list(jack_span.attributes[sc.GEN_AI_REQUEST_STOP_SEQUENCES]) == ["END"]
    assert jack_span.attributes[sc.GEN_AI_REQUEST_SEED] == 7
    main_span = spans[0]
    assert sc.GEN_AI_REQUEST_MAX_TOKENS not in main_span.attributes
    assert sc.GEN_AI_REQUEST_TOP_P not in main_span.attributes


async def test_without_parameters_nothing_is_sent_or_recorded(server, http_session, memory_tracing):
    await http_session().run("hi")
    (body,) = server.bodies
    assert not {"temperature", "max_tokens", "top_p", "stop", "seed"} & set(body)
    (chat,) = chats(memory_tracing)
    assert not [k for k in chat.attributes if k.startswith("gen_ai.request.") and k != sc.GEN_AI_REQUEST_MODEL]


def test_param_items_parse_as_json_where_they_can():
    parsed = parse_params(["temperature=0.5", "max_tokens=100", "stop=END", 'stop=["a","b"]', "seed=3", "top_p=1"])
    assert parsed == ModelSettings(temperature=0.5, max_tokens=100, stop=("a", "b"), seed=3, top_p=1.0)
    assert parse_params([]) is None


@pytest.mark.parametrize("items, says", [
    (["colour=red"], "unknown request parameter(s) colour"),
    (["temperature"], "'temperature' is not key=value"),
    (["=1"], "'=1' is not key=value"),
    (["temperature=hot"], "request parameter temperature"),
    (["temperature=3"], "less than or equal to 2"),
    (["max_tokens=0"], "greater than or equal to 1"),
    (["max_tokens=1.5"], "request parameter max_tokens"),
    (["seed=true"], "request parameter seed"),
    (["top_p=1.5"], "request parameter top_p"),
    (["stop=[1]"], "request parameter stop"),
])
def test_bad_param_items_are_one_line_naming_the_problem(items, says):
    with pytest.raises(ModelSettingsError) as caught:
        parse_params(items)
    assert says in str(caught.value) and "\n" not in str(caught.value)


settings_strategy = st.builds(
    ModelSettings,
    temperature=st.none() | st.floats(0, 2),
    max_tokens=st.none() | st.integers(1, 10**6),
    top_p=st.none() | st.floats(0, 1),
    stop=st.none() | st.lists(st.text(min_size=1, max_size=8), max_size=4).map(tuple),
    seed=st.none() | st.integers(-(2**31), 2**31),
)


@given(settings_strategy, settings_strategy)
def test_recorded_settings_read_back_equal_and_merges_take_the_set_fields(first, second):
    assert settings_from_json(first.to_json(), "run") == first
    merged = first.merged(second)
    for key in ModelSettings.model_fields:
        expected = getattr(second, key) if getattr(second, key) is not None else getattr(first, key)
        assert getattr(merged, key) == expected
    assert set(merged.set_fields()) == set(first.set_fields()) | set(second.set_fields())


@pytest.mark.parametrize("key, value, says", [
    ("temperature", True, "must be a number, not a boolean"),
    ("top_p", "1", "must be a number, not a string"),
    ("temperature", "0.5", "must be a number, not a string"),
    ("max_tokens", "5", "must be an integer, not a string"),
    ("seed", False, "must be an integer, not a boolean"),
    ("top_p", float("nan"), "must be a number, not NaN"),
    ("temperature", float("inf"), "must be a finite number, not inf"),
    ("temperature", float("-inf"), "must be a finite number, not -inf"),
])
def test_numeric_settings_refuse_booleans_strings_and_nan_in_scripts_param_and_python_alike(key, value, says):
    """true ran as temperature 1.0 (and was recorded so); NaN was called out of range."""
    with pytest.raises(ScriptError) as caught:
        parse_script({"name": "p", "agents": {}, "params": {key: value}}, "p.json")
    assert str(caught.value) == f"p.json: request parameter {key}: {says}"
    with pytest.raises(ModelSettingsError) as caught:
        parse_params([f"{key}={json.dumps(value)}"])
    assert str(caught.value) == f"--param: request parameter {key}: {says}"
    with pytest.raises(ValueError) as caught:
        ModelSettings(**{key: value})
    assert str(caught.value) == f"ModelSettings: {key}={value!r}: {says}"
    assert ModelSettings(temperature=1, top_p=0).span_attributes()[sc.GEN_AI_REQUEST_TEMPERATURE] == 1.0  # ints are fine


def test_script_params_and_agent_params_are_validated():
    base = {"name": "p", "agents": {}}
    script = parse_script({**base, "params": {"temperature": 0.1}, "agent_params": {"Jack": {"seed": 4}},
                           "stream": True}, "p.json")
    assert script.stream is True
    by_name = script.agent_settings("main", ModelSettings(max_tokens=9))
    assert by_name["main"] == ModelSettings(temperature=0.1, max_tokens=9)
    assert by_name["Jack"] == ModelSettings(seed=4)
    for bad, says in [({"params": {"temprature": 1}}, "unknown request parameter(s) temprature"),
                      ({"agent_params": {"Jack": {"seed": "x"}}}, "agent_params.Jack: request parameter seed"),
                      ({"agent_params": []}, "'agent_params' must map"),
                      ({"stream": "yes"}, "'stream' must be true or false")]:
        with pytest.raises(ScriptError, match="p.json") as caught:
            parse_script({**base, **bad}, "p.json")
        assert says in str(caught.value)


# --- the CLI on the offline scripted model ---------------------------------------------------------

def cli(*args: str, home: Path, check: bool = True) -> subprocess.CompletedProcess:
    done = run_in_process(*args, home=home)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def session_of(done: subprocess.CompletedProcess) -> str:
    return [line for line in done.stderr.splitlines() if line.startswith("session: ")][-1].split(": ", 1)[1]


def chat_params(home: Path, session_id: str) -> list[dict]:
    """The gen_ai.request.* attributes of every chat span start in the journal, in order."""
    out = []
    for line in (home / "sessions" / session_id / "spans.jsonl").read_text().splitlines():
        record = json.loads(line)
        if str(record.get("name", "")).startswith("chat "):
            attrs = record.get("attrs") or {}
            out.append({k.removeprefix("gen_ai.request."): v for k, v in attrs.items()
                        if k.startswith("gen_ai.request.") and k != sc.GEN_AI_REQUEST_MODEL})
    return out


@pytest.mark.parametrize("args, says", [
    (["--param", "colour=1"], "unknown request parameter(s) colour"),
    (["--param", "temperature"], "is not key=value"),
    (["--param", "seed=1.5"], "request parameter seed"),
    (["--param", "temperature=true"], "request parameter temperature: must be a number, not a boolean"),
])
def test_bad_param_on_run_and_resume_is_exit_2_without_a_traceback(tmp_path, args, says):
    home = tmp_path / "home"
    done = cli("run", *args, "hi", home=home, check=False)
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())  # nothing started
    first = cli("run", "hi", home=home)
    session_id = session_of(first)
    before = (home / "sessions" / session_id / "meta.json").read_bytes()
    again = cli("resume", session_id, *args, "more", home=home, check=False)
    assert again.returncode == 2 and says in again.stderr and "Traceback" not in again.stderr
    assert (home / "sessions" / session_id / "meta.json").read_bytes() == before  # nothing damaged


def test_run_params_are_recorded_and_resume_carries_them_on_with_its_own_on_top(tmp_path):
    home = tmp_path / "home"
    done = cli("run", "--param", "temperature=0.3", "--param", "stop=END", home=home)
    session_id = session_of(done)
    first_run = chat_params(home, session_id)
    assert first_run and all(p == {"temperature": 0.3, "stop_sequences": ["END"]} for p in first_run)
    meta = json.loads((home / "sessions" / session_id / "meta.json").read_text())
    assert json.loads(meta["last_run"]["params"]) == {"temperature": 0.3, "stop": ["END"]}

    cli("resume", session_id, "--param", "seed=7", "--param", "temperature=0.9", "once more", home=home)
    resumed = chat_params(home, session_id)[len(first_run):]
    assert resumed and all(p == {"temperature": 0.9, "stop_sequences": ["END"], "seed": 7} for p in resumed)
    cli("resume", session_id, "and again", home=home)  # nothing given: the session's parameters
    last = chat_params(home, session_id)[len(first_run) + len(resumed):]
    assert last and all(p == {"temperature": 0.9, "stop_sequences": ["END"], "seed": 7} for p in last)


def test_script_params_apply_to_the_root_and_sub_agents_and_agent_params_by_name(tmp_path):
    script = tmp_path / "p.json"
    script.write_text(json.dumps({
        "name": "params",
        "params": {"temperature": 0.1},
        "agent_params": {"Jack": {"max_tokens": 64}},
        "agents": {"main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Jack", "user_prompt": "hi"}}]},
                            "done"],
                   "Jack": ["hello"]},
    }))
    home = tmp_path / "home"
    session_id = session_of(cli("run", "--script", str(script), "go", home=home))
    assert chat_params(home, session_id) == [{"temperature": 0.1}, {"temperature": 0.1, "max_tokens": 64},
                                             {"temperature": 0.1}]


# --- the Python API ---------------------------------------------------------------------------------

def test_api_agent_and_session_settings_and_resume_reimports_the_app(tmp_path, monkeypatch):
    import otel_agents

    (tmp_path / "settings_app.py").write_text(
        "from otel_agents import Agent, ModelSettings, tool\n"
        "@tool\ndef shout(text: str) -> str:\n    '''Say it loudly.'''\n    return text.upper()\n"
        "def make():\n    return Agent('main', tools=[shout], model_settings=ModelSettings(top_p=0.5))\n"
    )
    (tmp_path / "s.json").write_text(json.dumps({"name": "shouty", "agents": {"main": [
        {"tool_calls": [{"name": "shout", "arguments": {"text": "hi"}}]}, "said",
        {"tool_calls": [{"name": "shout", "arguments": {"text": "again"}}]}, "said again"]}}))
    monkeypatch.syspath_prepend(str(tmp_path))
    from settings_app import make

    with otel_agents.recording(home=tmp_path / "home"):
        with otel_agents.Session(make(), script=tmp_path / "s.json", app="settings_app:make",
                                 model_settings=otel_agents.ModelSettings(seed=5)) as session:
            assert session.run_sync("go") == "said"
            session_id = session.id
    home = tmp_path / "home"
    assert chat_params(home, session_id) == [{"top_p": 0.5, "seed": 5}] * 2
    with otel_agents.recording(home=home):
        # No tools given: the app is imported again, so `shout` is there; the seed comes back from the session.
        with otel_agents.resume(session_id) as resumed:
            assert resumed.run_sync("again") == "said again"
    events = [json.loads(line) for line in (home / "sessions" / session_id / "events.jsonl").read_text().splitlines()]
    assert any(e.get("role") == "tool" and e.get("content") == "AGAIN" for e in events)
    assert chat_params(home, session_id)[2:] == [{"top_p": 0.5, "seed": 5}] * 2
    sys.modules.pop("settings_app", None)


def test_api_resume_of_an_app_that_cannot_be_imported_is_a_resume_error(tmp_path, monkeypatch):
    import otel_agents

    (tmp_path / "gone_app.py").write_text("from otel_agents import Agent\ndef make():\n    return Agent('main')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from gone_app import make

    with otel_agents.recording(home=tmp_path / "home"):
        with otel_agents.Session(make(), script="jack-and-jill", app="gone_app:make") as session:
            session.run_sync("hi")
            session_id = session.id
    (tmp_path / "gone_app.py").unlink()
    sys.modules.pop("gone_app", None)
    with otel_agents.recording(home=tmp_path / "home"):
        with pytest.raises(otel_agents.ResumeError, match="gone_app"):
            otel_agents.resume(session_id)
        # tools and hooks given explicitly: the app is not needed
        with otel_agents.resume(session_id, tools=[], hooks=[]) as resumed:
            assert resumed.run_sync("more")
