"""The public API end to end: programs built on it run as real processes, are recorded, verify and resume."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

import orjson
import pytest

from otel_agents import ToolContext

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = Path(__file__).resolve().parent / "data" / "api_programs"

SCRIPT = {
    "name": "cities",
    "agents": {
        "researcher": [
            {"tool_calls": [{"name": "population", "arguments": {"city": "Paris"}},
                            {"name": "delete_notes", "arguments": {}}]},
            "Paris is large.",
        ]
    },
}


def python(*args: str, home: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "cities.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def events(home: Path, session_id: str) -> list[dict]:
    return [orjson.loads(line) for line in (home / "sessions" / session_id / "events.jsonl").read_bytes().splitlines()]


def ledger(home: Path, session_id: str) -> list[dict]:
    rows = [orjson.loads(line) for line in (home / "billing.jsonl").read_bytes().splitlines()]
    return [row for row in rows if row["session_id"] == session_id]


def run_researcher(home: Path, script: Path, prompt: str = "How big is Paris?") -> tuple[str, str]:
    done = python(str(PROGRAMS / "researcher.py"), str(home), str(script), prompt, home=home)
    *answer, last = done.stdout.splitlines()
    return "\n".join(answer), json.loads(last)["session"]


def test_a_program_with_a_custom_tool_and_a_hook_is_recorded_and_verifies(tmp_path, script):
    home = tmp_path / "home"
    answer, session_id = run_researcher(home, script)
    assert answer == "Paris is large."
    contents = [e.get("content") for e in events(home, session_id)]
    # The custom tool ran with its context; the hook stopped the other call before it ran.
    assert "Paris has 5 million people (asked by researcher)" in contents
    assert "Error: Action blocked by hook 'keep_notes': notes are kept" in contents
    rows = ledger(home, session_id)
    assert sorted(row["type"] for row in rows) == ["llm", "llm", "tool", "tool"]
    # The first turn is timed without the seconds of importing litellm (loaded before the run's spans).
    tree = orjson.loads(gzip.decompress((home / "sessions" / session_id / "tree.json.gz").read_bytes()))
    turn = tree["session"]["runs"][0]["turns"][0]
    attempts = [op for op in turn["ops"] if op["kind"] == "llm"]
    seconds = [(n["ended_ns"] - n["started_ns"]) / 1e9 for n in (turn, *attempts)]
    assert attempts and seconds[0] - sum(seconds[1:]) < 1.0, seconds
    verify = python("-m", "otel_agents", "sessions", "verify", session_id, home=home, check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_the_cli_resumes_a_session_the_api_recorded(tmp_path, script):
    """The script is recorded on the runs, so `otel-agents resume` finds it; the custom tools
    are not needed as long as the model does not call them again (re-importing them is `--app`)."""
    home = tmp_path / "home"
    _, session_id = run_researcher(home, script)
    before = len(ledger(home, session_id))
    done = python("-m", "otel_agents", "resume", session_id, "And Rome?", home=home)
    assert done.stdout.strip() == "I have nothing further to add."  # the script's turns are used up
    # The hook that denied delete_notes is code the CLI does not have: said, not silently dropped.
    (warning,) = [line for line in done.stderr.splitlines() if line.startswith("warning: hook")]
    assert warning.startswith("warning: hook 'keep_notes' watched this session and is not installed now")
    assert len(ledger(home, session_id)) == before + 1
    assert python("-m", "otel_agents", "sessions", "verify", session_id, home=home, check=False).returncode == 0


def test_python_resume_continues_with_the_custom_tools(tmp_path, script):
    home = tmp_path / "home"
    _, session_id = run_researcher(home, script)
    more = dict(SCRIPT)
    more["agents"] = {"researcher": [*SCRIPT["agents"]["researcher"],
                                     {"tool_calls": [{"name": "population", "arguments": {"city": "Rome"}}]},
                                     "Rome is smaller."]}
    script.write_text(json.dumps(more))
    program = tmp_path / "resume_it.py"
    program.write_text(
        "import sys, otel_agents\n"
        "from otel_agents import tool\n"
        "@tool\n"
        "def population(city: str) -> str:\n"
        "    '''People in a city.'''\n"
        "    return f'{city}: resumed tool'\n"
        "with otel_agents.recording(home=sys.argv[1]):\n"
        "    with otel_agents.resume(sys.argv[2], tools=[population], script=sys.argv[3]) as session:\n"
        "        print(session.run_sync('And Rome?'))\n"
    )
    done = python(str(program), str(home), session_id, str(script), home=home)
    assert done.stdout.strip() == "Rome is smaller."
    assert "hook 'keep_notes' watched session" in done.stderr  # logged: resumed without the hook
    contents = [e.get("content") for e in events(home, session_id)]
    assert "Rome: resumed tool" in contents and "How big is Paris?" in contents
    assert python("-m", "otel_agents", "sessions", "verify", session_id, home=home, check=False).returncode == 0


def test_python_resume_with_the_sessions_hooks_warns_of_none(tmp_path, script):
    home = tmp_path / "home"
    _, session_id = run_researcher(home, script)
    program = tmp_path / "resume_it.py"
    program.write_text(
        "import sys, otel_agents\n"
        "from otel_agents import Decision, approval, tool\n"
        "@tool\n"
        "def delete_notes() -> str:\n"
        "    \"Delete the notes.\"\n"
        "    return 'deleted'\n"
        "@approval(tools=['delete_notes'])\n"
        "def keep_notes(request):\n"
        "    return Decision(False, 'notes are kept')\n"
        "with otel_agents.recording(home=sys.argv[1]):\n"
        "    with otel_agents.resume(sys.argv[2], tools=[delete_notes], hooks=[keep_notes],\n"
        "                            script=sys.argv[3]) as session:\n"
        "        print(session.run_sync('And Rome?'))\n"
    )
    done = python(str(program), str(home), session_id, str(script), home=home)
    assert done.stdout.strip() == "I have nothing further to add."
    assert "watched session" not in done.stderr


def test_the_applications_own_provider_keeps_its_spans_and_the_session_is_saved(tmp_path, script):
    home = tmp_path / "home"
    done = python(str(PROGRAMS / "own_provider.py"), str(home), str(script), home=home)
    out = json.loads(done.stdout.splitlines()[-1])
    names = out["spans"]
    # The app's spans before, during and after the recording reached its exporter, and so did ours.
    assert {"app: before", "app: during", "app: after", "invoke_agent researcher"} <= set(names)
    assert "warning" not in done.stderr  # no closed recorder was handed a later span
    session_id = out["session"]
    assert (home / "sessions" / session_id / "tree.json.gz").is_file()
    assert len(ledger(home, session_id)) >= 2
    assert python("-m", "otel_agents", "sessions", "verify", session_id, home=home, check=False).returncode == 0


def test_outside_a_recording_a_session_runs_and_saves_nothing(tmp_path, script, monkeypatch):
    from otel_agents import Agent, Session

    monkeypatch.setenv("OTEL_AGENTS_HOME", str(tmp_path / "home"))
    with Session(Agent("researcher"), script=script) as session:
        session.external("A note from outside.")
        assert not session.recorded
        assert session.run_sync("How big is Paris?") == "Paris is large."
        transcript = session.agent("researcher").transcript
    assert transcript[:2] == [{"role": "user", "content": "A note from outside."},
                              {"role": "user", "content": "How big is Paris?"}]
    assert not (tmp_path / "home").exists()


def test_an_agent_without_any_model_is_refused():
    from otel_agents import Agent, Session

    with pytest.raises(ValueError, match="has no model"):
        Session(Agent("lost"))


def test_resume_needs_a_recording_and_an_existing_session(tmp_path, monkeypatch):
    import otel_agents

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with pytest.raises(RuntimeError, match="recording"):
        otel_agents.resume("20260101-000000-abcdef")
    with otel_agents.recording(home=tmp_path):
        with pytest.raises(otel_agents.RecordingError, match="no session"):
            otel_agents.resume("20260101-000000-abcdef")
    assert not (tmp_path / "sessions" / "20260101-000000-abcdef").exists()


def test_a_recorded_session_cannot_be_resumed_while_it_is_open(tmp_path, script, monkeypatch):
    import otel_agents
    from otel_agents import Agent, Session

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with otel_agents.recording(home=tmp_path) as rec:
        session = Session(Agent("researcher"), script=script)
        session.run_sync("How big is Paris?")
        with pytest.raises(otel_agents.RecordingError, match="session"):
            otel_agents.resume(session.id)
    # The block closed the session it left open: saved whole, lock released.
    assert rec.saved_everything and not session.recorded
    with otel_agents.recording(home=tmp_path):
        with otel_agents.resume(session.id, script=script) as again:
            assert again.run_sync("More?") == "I have nothing further to add."


def test_two_sessions_in_one_recording_are_each_saved_whole(tmp_path, script, monkeypatch):
    import otel_agents
    from otel_agents import Agent, Session

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with otel_agents.recording(home=tmp_path) as rec:
        with Session(Agent("researcher"), script=script) as first:
            first.run_sync("How big is Paris?")
        with Session(Agent("researcher"), script=script) as second:
            second.run_sync("And Rome?")
    assert rec.saved_everything
    for session in (first, second):
        assert [e["content"] for e in events(tmp_path, session.id) if e.get("role") == "user"][:1] == \
            ["How big is Paris?" if session is first else "And Rome?"]
        assert len(ledger(tmp_path, session.id)) == 4
        assert python("-m", "otel_agents", "sessions", "verify", session.id, home=tmp_path).returncode == 0


def test_a_bad_tracing_setting_is_one_line_and_nothing_is_created(tmp_path, monkeypatch):
    import otel_agents

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "carrier-pigeon")
    with pytest.raises(otel_agents.RecordingError) as caught:
        with otel_agents.recording(home=tmp_path / "home"):
            pass
    assert "OTEL_TRACES_EXPORTER" in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "home").exists()


def test_a_malformed_otlp_endpoint_is_a_recording_error_and_nothing_is_created(tmp_path, monkeypatch):
    """An unclosed IPv6 bracket raised urlparse's bare ValueError from ``recording()``."""
    import otel_agents

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1")
    with pytest.raises(otel_agents.RecordingError, match="invalid OTLP endpoint 'http://\\[::1'") as caught:
        with otel_agents.recording(home=tmp_path / "home"):
            pass
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "home").exists()


def test_a_new_session_with_a_saved_sessions_id_is_refused_and_the_saved_one_is_untouched(tmp_path, script, monkeypatch):
    import otel_agents
    from otel_agents import Agent, Session
    from otel_agents.session_recording import SessionExists

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with otel_agents.recording(home=tmp_path):
        with Session(Agent("researcher"), script=script) as first:
            first.run_sync("How big is Paris?")
    directory = tmp_path / "sessions" / first.id
    before = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
    billed = (tmp_path / "billing.jsonl").read_bytes()
    with otel_agents.recording(home=tmp_path):
        with pytest.raises(SessionExists, match=f"session {first.id} already exists.*resume it"):
            Session(Agent("researcher"), script=script, session_id=first.id)
        with Session(Agent("researcher"), script=script, session_id="20260101-000000-0a0b0c") as fresh:
            fresh.run_sync("And Rome?")  # an id nobody used is still taken
    assert {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()} == before
    assert (tmp_path / "billing.jsonl").read_bytes().startswith(billed)
    assert python("-m", "otel_agents", "sessions", "verify", first.id, home=tmp_path).returncode == 0


def test_a_closed_session_refuses_to_run_or_hear(tmp_path, script, monkeypatch):
    import otel_agents
    from otel_agents import Agent, Session

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with otel_agents.recording(home=tmp_path):
        session = Session(Agent("researcher"), script=script)
        session.run_sync("How big is Paris?")
        assert session.close()
        for attempt in (lambda: session.run_sync("Again?"), lambda: session.external("news")):
            with pytest.raises(RuntimeError, match="is closed"):
                attempt()
    unrecorded = Session(Agent("researcher"), script=script)
    unrecorded.close()
    with pytest.raises(RuntimeError, match="is closed"):
        unrecorded.run_sync("Anyone?")
    # Only the first run was spent, and it is all that was saved.
    assert [e["content"] for e in events(tmp_path, session.id) if e.get("role") == "user"] == ["How big is Paris?"]
    assert len(ledger(tmp_path, session.id)) == 4


def test_sessions_never_closed_still_close_their_loops_without_a_warning(tmp_path, script):
    program = tmp_path / "unclosed.py"
    program.write_text(
        "import sys\n"
        "from otel_agents import Agent, Session\n"
        "for _ in range(3):  # each session dropped at once, never closed\n"
        "    print(Session(Agent('researcher'), script=sys.argv[1]).run_sync('How big is Paris?'))\n"
    )
    done = python(str(program), str(script), home=tmp_path / "home")
    assert done.stdout.splitlines() == ["Paris is large."] * 3
    assert "Task was destroyed" not in done.stderr and "never awaited" not in done.stderr, done.stderr


def test_run_sync_inside_a_running_loop_says_so_and_leaves_no_coroutine_behind(script):
    import asyncio
    import warnings

    from otel_agents import Agent, Session

    session = Session(Agent("researcher"), script=script)

    async def inside() -> None:
        with pytest.raises(RuntimeError, match="await session.run"):
            session.run_sync("How big is Paris?")

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" would be raised here
        asyncio.run(inside())
        import gc
        gc.collect()
    session.close()


def test_run_sync_from_two_threads_at_once_takes_turns_and_the_session_verifies(tmp_path, monkeypatch):
    """The second used to raise "This event loop is already running" with its prompt run anyway on the
    first's loop, interleaved with it: the saved session failed verify."""
    import asyncio
    import threading

    import otel_agents
    from otel_agents import Agent, Session, tool

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    path = tmp_path / "turns.json"
    path.write_text(json.dumps({"name": "turns", "agents": {"main": [
        {"tool_calls": [{"name": "slow", "arguments": {}}]}, "first", "second"]}}))
    started, release = threading.Event(), threading.Event()

    @tool
    async def slow() -> str:
        """Waits to be released."""
        started.set()
        while not release.is_set():
            await asyncio.sleep(0.01)
        return "done"

    answers: dict[str, str] = {}
    with otel_agents.recording(home=tmp_path / "home"):
        with Session(Agent("main", "x", tools=[slow]), script=path) as session:
            def ask(prompt: str) -> None:
                try:
                    answers[prompt] = session.run_sync(prompt)
                except Exception as exc:
                    answers[prompt] = repr(exc)

            first = threading.Thread(target=ask, args=("a",))
            first.start()
            assert started.wait(10)
            second = threading.Thread(target=ask, args=("b",))
            second.start()
            second.join(0.3)  # it waits its turn
            release.set()
            first.join(10)
            second.join(10)
    assert answers == {"a": "first", "b": "second"}
    assert python("-m", "otel_agents", "sessions", "verify", session.id, home=tmp_path / "home",
                  check=False).returncode == 0


def test_a_python_hook_watching_an_agent_the_script_can_never_have_is_a_script_error():
    """Only the script's own hooks were checked: a program's hook naming a typo was accepted and never acted."""
    from otel_agents import Agent, ScriptError, Session, review

    @review(agents=["Jak"])
    def judge(agent, utterance):
        return True

    with pytest.raises(ScriptError, match=r"^Session: hook 'judge': agents names 'Jak', no agent of this script"):
        Session(Agent("main", "sys"), script="jack-and-jill", hooks=[judge])
    Session(Agent("main", "sys", model="openai/gpt-4o-mini"), hooks=[judge]).close()  # a real model names its own


def where(city: str, context: Optional[ToolContext] = None) -> str:
    """Where the caller asks from.

    city: a city
    """
    return f"{city} from {context.agent.name}"


def test_a_tool_may_take_an_optional_context():
    from otel_agents import tool

    made = tool(where)
    assert made.context_param == "context"
    assert list(made.schema()["function"]["parameters"]["properties"]) == ["city"]


def test_an_agent_gives_its_settings_and_budgets_for_what_session_takes_as_a_script(tmp_path):
    # A file (str or path), a built-in name or a loaded script, as Session(script=) takes them.
    from otel_agents import Agent, Budget, ModelSettings
    from otel_agents.llm.scripts import load_script

    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "s", "params": {"temperature": 0.5},
                                "agent_budgets": {"Jack": {"max_llm_calls": 2}}, "agents": {"lead": ["hi"]}}))
    agent = Agent("lead", model_settings=ModelSettings(seed=7), budget=Budget(max_tokens=10))
    for script in (str(path), path, load_script(str(path))):
        assert agent.settings_by_name(script) == {"lead": ModelSettings(temperature=0.5, seed=7)}
        assert agent.budgets_by_name(script) == {"lead": Budget(max_tokens=10), "Jack": Budget(max_llm_calls=2)}
    assert agent.settings_by_name("jack-and-jill") == {"lead": ModelSettings(seed=7)}
    assert agent.budgets_by_name("jack-and-jill") == {"lead": Budget(max_tokens=10)}


def test_a_nul_character_in_a_prompt_round_trips_through_record_view_and_resume(tmp_path, script, monkeypatch):
    import otel_agents
    from otel_agents import Agent, Session

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with otel_agents.recording(home=tmp_path):
        with Session(Agent("researcher"), script=script) as session:
            assert session.run_sync("a\x00b\x01c") == "Paris is large."
    assert [e["content"] for e in events(tmp_path, session.id) if e.get("role") == "user"] == ["a\x00b\x01c"]
    assert python("-m", "otel_agents", "sessions", "verify", session.id, home=tmp_path).returncode == 0
    dialog = json.loads(python("-m", "otel_agents", "view", session.id, "dialog", "researcher", "--json",
                               home=tmp_path).stdout)
    assert [item["content"] for item in dialog["items"]][:1] == ["a\x00b\x01c"]
    with otel_agents.recording(home=tmp_path):
        with otel_agents.resume(session.id, script=script) as again:
            again.run_sync("d\x00e")
            users = [m["content"] for m in again.agent("researcher").transcript if m["role"] == "user"]
    assert users == ["a\x00b\x01c", "d\x00e"]
    assert python("-m", "otel_agents", "sessions", "verify", session.id, home=tmp_path).returncode == 0


def test_a_saved_session_whose_root_has_a_name_agent_now_refuses_still_resumes_and_forks(tmp_path, script, monkeypatch):
    # Recorded before names were checked (a script's root "team/lead"), or imported from another
    # instrumentation's trace: its name is what was recorded, not a new one to refuse.
    import otel_agents
    from otel_agents import Agent, Session

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with otel_agents.recording(home=tmp_path):
        with Session(Agent("researcher"), script=script) as session:
            session.runtime.root_spec.name = "team/lead"
            session.run_sync("How big is Paris?")
    with otel_agents.recording(home=tmp_path):
        with otel_agents.resume(session.id, script=script) as again:
            again.run_sync("More?")
            assert again.agent("team/lead") is again.runtime.root
        first_answer = [e for e in events(tmp_path, session.id) if e.get("role") == "assistant"][0]["message_id"]
        with otel_agents.fork(session.id, at=first_answer, script=script) as forked:
            forked.run_sync("Else?")
            assert forked.runtime.root.name == "team/lead"


def test_a_prompt_with_a_lone_surrogate_is_refused_where_given_and_the_session_stays_whole(tmp_path, script,
                                                                                          monkeypatch):
    """A lone surrogate in a prompt reached the model and then stopped the session being saved."""
    import asyncio

    import otel_agents
    from otel_agents import Agent, Session

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with otel_agents.recording(home=tmp_path) as rec:
        with Session(Agent("researcher"), script=script) as session:
            with pytest.raises(ValueError, match=r"Session.run_sync: prompt holds a lone surrogate '\\ud83d'"):
                session.run_sync("go \ud83d")
            with pytest.raises(ValueError, match="Session.run: prompt holds a lone surrogate"):
                asyncio.run(session.run("\udcff"))
            with pytest.raises(ValueError, match="Session.external: text holds a lone surrogate"):
                session.external("x\udfff")
            assert session.run_sync("go \U0001f600") == "Paris is large."
    assert rec.saved_everything
    assert [e["content"] for e in events(tmp_path, session.id) if e.get("role") == "user"] == ["go \U0001f600"]


def test_a_tool_text_with_a_lone_surrogate_is_saved_as_u_fffd_and_the_session_verifies_and_resumes(tmp_path,
                                                                                                  monkeypatch):
    """A tool's result or exception text holding a lone surrogate left the rest of the run unsaved
    (``str is not valid UTF-8``) while it still called, and billed, the model."""
    import otel_agents
    from otel_agents import Agent, Session, tool

    @tool
    def population(city: str) -> str:
        """Population of a city."""
        return f"{city}: 2.1 million \ud800 (half \ud83d\ude00 pair)"

    @tool
    def delete_notes() -> str:
        """Delete the notes."""
        raise OSError("cannot delete \udcff")

    script = tmp_path / "cities.json"
    script.write_text(json.dumps(SCRIPT))
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    agent = Agent("researcher", tools=[population, delete_notes])
    with otel_agents.recording(home=tmp_path) as rec:
        with Session(agent, script=script) as session:
            assert session.run_sync("How big is Paris?") == "Paris is large."
            held = [m["content"] for m in session.agent("researcher").transcript if m["role"] == "tool"]
    assert rec.saved_everything
    assert held == ["Paris: 2.1 million \ufffd (half \U0001f600 pair)",
                    "Error: tool 'delete_notes' failed: OSError: cannot delete \ufffd"]
    assert [e["content"] for e in events(tmp_path, session.id) if e.get("role") == "tool"] == held
    assert python("-m", "otel_agents", "sessions", "verify", session.id, home=tmp_path).returncode == 0
    with otel_agents.recording(home=tmp_path) as again_rec:
        with otel_agents.resume(session.id, script=script, tools=[population, delete_notes]) as again:
            assert [m["content"] for m in again.agent("researcher").transcript if m["role"] == "tool"] == held
            again.run_sync("And now?")
    assert again_rec.saved_everything
    assert python("-m", "otel_agents", "sessions", "verify", session.id, home=tmp_path).returncode == 0


@pytest.mark.parametrize("mode", ["deny", "reject", "raise", "capture"])
def test_a_hook_or_model_text_with_a_lone_surrogate_leaves_the_session_whole(mode, tmp_path, script, monkeypatch):
    """A hook's reason, a failing hook's exception (its traceback on the run's span) and captured
    content (a model's tool arguments) holding a lone surrogate stopped the session being saved."""
    import otel_agents
    from otel_agents import Agent, Decision, Session, approval, review, tool
    from otel_agents.runtime.hooks import HookFailed

    @tool
    def population(city: str) -> str:
        """Population of a city."""
        return "2.1 million"

    @tool
    def delete_notes() -> str:
        """Delete the notes."""
        return "done"

    @approval
    def guard(request):
        return Decision(False, "not \ud800 now") if mode == "deny" else True

    @review
    def judge(agent, utterance):
        if mode == "raise":
            raise ValueError("kaput \udcff")
        return Decision(False, "again \udfff") if mode == "reject" and utterance == "Paris is large." else True

    if mode == "capture":
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        data = json.loads(script.read_text())
        data["agents"]["researcher"][0]["tool_calls"][0]["arguments"]["city"] = "Par\ud800is"
        script.write_text(json.dumps(data))
    if mode == "reject":
        data = json.loads(script.read_text())
        data["agents"]["researcher"].append("Paris is very large.")
        script.write_text(json.dumps(data))
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with otel_agents.recording(home=tmp_path, otlp_file=tmp_path / "spans.jsonl") as rec:
        with Session(Agent("researcher", tools=[population, delete_notes]), script=script,
                     hooks=[guard, judge]) as session:
            if mode == "raise":
                with pytest.raises(HookFailed, match="kaput \ufffd"):
                    session.run_sync("How big is Paris?")
            else:
                session.run_sync("How big is Paris?")
    assert rec.saved_everything
    saved = json.dumps(events(tmp_path, session.id), ensure_ascii=False)
    assert "\ufffd" in saved or mode == "capture"
    spans = (tmp_path / "spans.jsonl").read_bytes()  # --otlp-file's copy too, the failing hook's traceback in it
    assert [orjson.loads(line) for line in spans.splitlines()] and (mode != "raise" or "kaput \ufffd".encode() in spans)
    assert python("-m", "otel_agents", "sessions", "verify", session.id, home=tmp_path).returncode == 0
