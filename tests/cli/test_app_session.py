"""`otel-agents run --app module:factory`: a Python app run from the CLI, recorded, verified, resumed with its tools."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from support.stderr_lines import error_lines

ROOT = Path(__file__).resolve().parents[2]
APPS = Path(__file__).resolve().parents[1] / "data" / "apps"

SCRIPT = {
    "name": "cities",
    "agents": {
        "researcher": [
            {"tool_calls": [{"name": "population", "arguments": {"city": "Paris"}},
                            {"name": "delete_notes", "arguments": {}}]},
            "Paris is large.",
            {"tool_calls": [{"name": "population", "arguments": {"city": "Rome"}},
                            {"name": "delete_notes", "arguments": {}}]},
            "Rome is smaller.",
        ]
    },
}


def cli(*args: str, home: Path, extra_env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update({"OTEL_AGENTS_HOME": str(home), "PYTHONPATH": os.pathsep.join([str(ROOT), str(APPS)]),
                "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(extra_env or {})})
    done = subprocess.run([sys.executable, "-m", "otel_agents", *args], env=env, capture_output=True, text=True,
                          timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def session_of(done: subprocess.CompletedProcess) -> str:
    return [line for line in done.stderr.splitlines() if line.startswith("session: ")][-1].split(": ", 1)[1]


def contents(home: Path, session_id: str) -> list:
    path = home / "sessions" / session_id / "events.jsonl"
    return [orjson.loads(line).get("content") for line in path.read_bytes().splitlines()]


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "cities.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def test_an_app_runs_records_its_reference_verifies_and_resumes_with_its_tools(tmp_path, script):
    home = tmp_path / "home"
    done = cli("run", "--app", "city_app:make", "--script", str(script), "How big is Paris?", home=home)
    assert done.stdout.strip() == "Paris is large."
    session_id = session_of(done)
    said = contents(home, session_id)
    assert "Paris has 5 million people" in said  # the app's own tool ran
    assert "Error: Action blocked by hook 'keep_notes': notes are kept" in said  # and its hook stopped the other
    meta = json.loads((home / "sessions" / session_id / "meta.json").read_text())
    assert meta["last_run"]["app"] == "city_app:make"
    assert cli("sessions", "verify", session_id, home=home, check=False).returncode == 0

    resumed = cli("resume", session_id, "And Rome?", home=home)
    assert resumed.stdout.strip() == "Rome is smaller."
    said = contents(home, session_id)
    assert "Rome has 4 million people" in said  # re-imported, not "Error: unknown tool"
    assert not [c for c in said if isinstance(c, str) and "unknown tool" in c]
    assert said.count("Error: Action blocked by hook 'keep_notes': notes are kept") == 2  # the hook came back too
    assert cli("sessions", "verify", session_id, home=home, check=False).returncode == 0


@pytest.mark.parametrize("reference, says", [
    ("no_such_app:make", "cannot import app 'no_such_app:make'"),
    ("city_app:missing", "app 'city_app:missing': city_app has no callable 'missing'"),
    ("city_app:broken", "app 'city_app:broken': its factory raised RuntimeError: no configuration"),
    ("city_app:population", "app 'city_app:population'"),
    ("city_app", "app 'city_app' is not of the form package.module:factory"),
])
def test_an_app_that_cannot_be_loaded_is_one_line_and_exit_2(tmp_path, script, reference, says):
    home = tmp_path / "home"
    done = cli("run", "--app", reference, "--script", str(script), "Hi", home=home, check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert says in lines[-1] and "Traceback" not in done.stderr
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


@pytest.mark.parametrize("app, deny, code", [
    (["--app", "city_app:make"], "delete_notes", 0),  # the app's tool: a script's hook may guard it
    (["--app", "city_app:make"], "delete_note", 2),
    ([], "delete_notes", 2),  # without the app no agent has that tool
])
def test_a_scripts_hook_naming_a_tool_no_agent_has_is_refused_before_anything_is_saved(tmp_path, app, deny, code):
    home = tmp_path / "home"
    path = tmp_path / "guarded.json"
    path.write_text(json.dumps({**SCRIPT, "hooks": [{"kind": "approval", "name": "NoDelete", "deny_tools": [deny]}]}))
    done = cli("run", *app, "--script", str(path), "How big is Paris?", home=home, check=False)
    assert done.returncode == code, done.stderr
    if code == 2:
        assert done.stderr.strip().splitlines()[-1] == (
            f"Error: script 'cities': hook 'NoDelete': deny_tools names {deny!r}, which no agent of this session has "
            f"as a tool (its tools: {'census, delete_notes, discuss, population, task' if app else 'discuss, task'}): "
            "the hook would never act on it")
        assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())
    else:
        assert "Error: Action blocked by hook 'NoDelete'" in str(contents(home, session_of(done)))


def test_an_apps_hook_named_as_one_of_the_scripts_is_refused_before_anything_is_saved(tmp_path):
    """Both were installed, and denials, hook events and run.hooks could not tell them apart."""
    home = tmp_path / "home"
    path = tmp_path / "guarded.json"
    path.write_text(json.dumps({**SCRIPT, "hooks": [{"kind": "approval", "name": "keep_notes",
                                                     "deny_tools": ["delete_notes"]}]}))
    done = cli("run", "--app", "city_app:make", "--script", str(path), "How big is Paris?", home=home, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == ("Error: app 'city_app:make': hooks: two hooks are named "
                                                    "'keep_notes' (one of them the script's); give each its own name=")
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


def test_resume_exits_2_naming_the_app_when_it_cannot_be_imported_and_changes_nothing(tmp_path, script):
    home = tmp_path / "home"
    session_id = session_of(cli("run", "--app", "city_app:make", "--script", str(script), "Paris?", home=home))
    before = (home / "sessions" / session_id / "events.jsonl").read_bytes()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    done = subprocess.run([sys.executable, "-m", "otel_agents", "resume", session_id, "Rome?"], env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)  # the app is not on the path
    assert done.returncode == 2
    assert "cannot import app 'city_app:make'" in done.stderr.strip().splitlines()[-1]
    assert "Traceback" not in done.stderr
    assert (home / "sessions" / session_id / "events.jsonl").read_bytes() == before


def test_a_failing_review_hook_ends_the_run_in_one_line_with_exit_1_and_the_session_saved(tmp_path, script):
    home = tmp_path / "home"
    done = cli("run", "--app", "city_app:with_broken_review", "--script", str(script), "Paris?", home=home, check=False)
    assert done.returncode == 1, done.stderr
    assert error_lines(done.stderr) == ["error: review hook 'offline_reviewer' failed: RuntimeError: reviewer offline"]
    assert "Traceback" not in done.stderr and done.stdout == ""  # the answer nobody could judge is not printed
    session_id = session_of(done)
    said = contents(home, session_id)
    assert said[-2:] == ["Paris is large.",  # recorded as said, never accepted, and the agent told so
                         "Your answer was not delivered: review hook 'offline_reviewer' failed: RuntimeError: reviewer offline"]
    assert cli("sessions", "verify", session_id, home=home, check=False).returncode == 0
    dialog = cli("view", session_id, "dialog", "researcher", home=home).stdout.splitlines()
    assert [line.split(" ", 1)[1] for line in dialog if "Paris is large." in line] == [
        "researcher: Paris is large.  [not delivered: review hook 'offline_reviewer' failed]"]


@pytest.mark.parametrize("factory, says", [
    ("with_multiline_review", "error: review hook 'brittle' failed: ValueError: review broke second line"),
    ("with_multiline_approval", "1-3 tool/function:delete_notes: WRN Error: Action blocked by hook 'brittle_approval': "
                                "hook failed: ValueError: approval broke second line"),
])
def test_a_hook_failing_with_a_multi_line_message_says_so_in_one_stderr_line(tmp_path, script, factory, says):
    done = cli("run", "--app", f"city_app:{factory}", "--script", str(script), "Paris?", home=tmp_path / "home",
               check=False)
    assert any(line.endswith(says) for line in done.stderr.splitlines()), done.stderr
    assert "second line" not in done.stderr.replace(says, "")  # no line of its own, nowhere else


CRASH_SCRIPT = {
    "name": "census",
    "agents": {
        "researcher": [
            {"tool_calls": [{"name": "population", "arguments": {"city": "Oslo"}}]},
            {"tool_calls": [{"name": "census", "arguments": {"city": "Oslo"}}]},  # killed here on the first run
            {"tool_calls": [{"name": "population", "arguments": {"city": "Lima"}}]},
            "Lima counted.",
        ]
    },
}


def test_an_app_killed_mid_run_resumes_from_the_cli_with_its_custom_tools(tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "census.json"
    script.write_text(json.dumps(CRASH_SCRIPT))
    killed = cli("run", "--app", "city_app:make", "--script", str(script), "Count Oslo", home=home,
                 extra_env={"CITY_APP_KILL": "1"}, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    (session_dir,) = (home / "sessions").iterdir()
    said = contents(home, session_dir.name)
    assert "Oslo has 4 million people" in said and "census of Oslo: done" not in said

    resumed = cli("resume", session_dir.name, "Now Lima", home=home)
    assert resumed.stdout.strip() == "Lima counted."
    said = contents(home, session_dir.name)
    assert "Lima has 4 million people" in said  # the app's tool again, after the crash
    assert not [c for c in said if isinstance(c, str) and "unknown tool" in c]
    assert any(isinstance(c, str) and c.startswith("Error: the run was interrupted") for c in said)
    assert cli("sessions", "verify", session_dir.name, home=home, check=False).returncode == 0


@pytest.mark.parametrize("tool_name, exit_code", [("interrupted", 130), ("give_up", 3)])
def test_a_tool_that_interrupts_or_exits_leaves_its_call_answered_and_the_session_resumable(
        tmp_path, tool_name, exit_code):
    home = tmp_path / "home"
    script = tmp_path / "quit.json"
    script.write_text(json.dumps({"name": "quit", "agents": {"researcher": [
        {"tool_calls": [{"name": "population", "arguments": {"city": "Oslo"}},
                        {"name": tool_name, "arguments": {}}]},
        "after the stop",
    ]}}))
    done = cli("run", "--app", "city_app:with_quitting_tools", "--script", str(script), "Go", home=home, check=False)
    assert done.returncode == exit_code, done.stderr
    if tool_name == "give_up":
        assert "stopped: sys.exit(3) was called during the run; the session was saved" in done.stderr.splitlines()
    (session_dir,) = (home / "sessions").iterdir()
    said = contents(home, session_dir.name)
    # Answered as the run stopped, not left open for a resume to mend.
    assert said.count("Error: the run was interrupted before this tool call finished; its outcome is unknown.") == 1
    assert cli("sessions", "verify", session_dir.name, home=home, check=False).returncode == 0
    resumed = cli("resume", session_dir.name, "Go on", home=home)
    assert resumed.stdout.strip() == "after the stop"
    assert "repair" not in resumed.stderr.lower()


def test_an_apps_agent_approval_hook_answered_by_no_agent_of_the_script_is_refused(tmp_path):
    """Answered by an agent that never exists, it approved everything the script's turns did."""
    home = tmp_path / "home"
    (tmp_path / "gated_app.py").write_text(
        "from otel_agents import Agent, agent_approval_hook\n"
        "def make():\n"
        "    return Agent('main'), [agent_approval_hook('ResourceMonitr', tools=['task'])]\n")
    path = tmp_path / "gated.json"
    path.write_text(json.dumps({"name": "gated", "agents": {
        "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "ResourceMonitor"}}]}, "x"],
        "ResourceMonitor": ["DENY. no"]}}))
    done = cli("run", "--app", "gated_app:make", "--script", str(path), "hi", home=home, check=False,
               extra_env={"PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: app 'gated_app:make': hook 'ResourceMonitr': agent 'ResourceMonitr' answers it and is no agent of "
        "this script (its agents: ResourceMonitor, main): it would approve everything")
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())
