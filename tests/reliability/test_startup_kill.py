"""kill -9 of a real ``otel-agents run`` the moment it holds its new session's lock, before any span.

The process is made to kill itself right after taking the lock (nothing else of the session
written yet), so the window is hit every time: the session left must read as a new one with no
runs, which every command accepts and ``resume`` starts afresh; and litellm must be loaded by then,
so that in a real run that window is milliseconds, not the seconds of its import. A SIGTERM during
that import, before the lock, ends the command with nothing saved.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reliability_helpers import ScriptBuilder, invoke, load_tree, subprocess_env, verify

# The CLI with session_recording.own_session wrapped: it notes whether litellm is loaded, then the
# process SIGKILLs itself holding the new session's lock (argv: the note's path, then the CLI's).
KILLED_AT_LOCK = """
import os, signal, sys
import otel_agents.session_recording as recording
taken = recording.own_session
def own_then_die(*args, **kwargs):
    taken(*args, **kwargs)
    with open(sys.argv[1], "w") as note:
        note.write("loaded" if "litellm" in sys.modules else "not loaded")
    os.kill(os.getpid(), signal.SIGKILL)
recording.own_session = own_then_die
from otel_agents.cli import cli
cli(sys.argv[2:], prog_name="otel-agents")
"""


def killed_at_lock(home: Path, tmp_path: Path) -> tuple[Path, Path, str]:
    """(the session directory, the script, what the note says) of a run killed holding its lock."""
    script = ScriptBuilder("greet", {"main": ["hello", "hello again"]}).write(tmp_path / "greet.json")
    note = tmp_path / "note.txt"
    proc = subprocess.run([sys.executable, "-c", KILLED_AT_LOCK, str(note), "run", "--script", str(script), "hi"],
                          capture_output=True, text=True, env=subprocess_env(home), cwd=home.parent, timeout=120)
    assert proc.returncode == -9, proc.stderr
    (directory,) = (home / "sessions").iterdir()
    assert sorted(p.name for p in directory.iterdir()) == ["owner.lock"]  # the lock alone: no span, no meta.json
    return directory, script, note.read_text()


def test_a_session_killed_holding_only_its_lock_is_listed_read_and_resumed(rel_home, tmp_path):
    directory, script, _ = killed_at_lock(rel_home, tmp_path)
    session_id = directory.name

    listed = invoke(["sessions", "list"])
    assert listed.exit_code == 0 and "unreadable" not in listed.output, listed.output
    (row,) = [line for line in listed.output.splitlines() if line.startswith(session_id)]
    assert row.split()[2:4] == ["0", "new"], row
    (entry,) = json.loads(invoke(["sessions", "list", "--json"]).output)
    assert entry["status"] == "new" and entry["runs"] == 0 and "problem" not in entry
    assert invoke(["sessions", "show", session_id]).exit_code == 0
    checked = verify(session_id)
    assert checked.exit_code == 0 and "no run was recorded" in checked.output, checked.output
    repaired = invoke(["sessions", "repair", session_id])
    assert repaired.exit_code == 0 and "nothing to repair" in repaired.output, repaired.output
    assert sorted(p.name for p in directory.iterdir()) == ["owner.lock"]  # reading and repairing wrote nothing

    resumed = invoke(["resume", session_id, "--script", str(script), "hi"])
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout.strip() == "hello"  # its root started afresh, from the script given
    (run,) = load_tree(rel_home, session_id)["runs"]
    assert run["status"] == "ok"
    assert verify(session_id).exit_code == 0
    again = invoke(["resume", session_id, "--script", str(script), "more"])
    assert again.exit_code == 0 and again.stdout.strip() == "hello again", again.output


def test_run_loads_litellm_before_it_takes_the_lock(rel_home, tmp_path):
    """The import takes seconds (about 15 on a loaded machine): made after the lock, it was the window in
    which a kill left a session without its prompt. Before the lock, a kill then leaves no session at all."""
    _, _, note = killed_at_lock(rel_home, tmp_path)
    assert note == "loaded"


# The CLI with litellm's import preceded by a SIGTERM to itself: the signal lands during the import.
TERMINATED_IN_IMPORT = """
import os, signal, sys
import otel_agents.llm.litellm_loader as loader
load = loader.load_litellm
def terminated_first():
    os.kill(os.getpid(), signal.SIGTERM)
    return load()
loader.load_litellm = terminated_first
from otel_agents.cli import cli
cli(sys.argv[1:], prog_name="otel-agents")
"""


def test_sigterm_during_the_import_before_the_lock_exits_130_saving_nothing(rel_home, tmp_path):
    script = ScriptBuilder("greet", {"main": ["hello"]}).write(tmp_path / "greet.json")
    proc = subprocess.run([sys.executable, "-c", TERMINATED_IN_IMPORT, "run", "--script", str(script), "hi"],
                          capture_output=True, text=True, env=subprocess_env(rel_home), cwd=rel_home.parent, timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "interrupted before the session started: nothing was saved"
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not list((rel_home / "sessions").glob("*"))


def started_session(home: Path, tmp_path: Path) -> str:
    """A saved session of one run (in this process), to fork or replay."""
    script = ScriptBuilder("greet", {"main": ["hello", "hello again"]}).write(tmp_path / "greet.json")
    done = invoke(["run", "--script", str(script), "hi"])
    assert done.exit_code == 0, done.output
    (directory,) = (home / "sessions").iterdir()
    return directory.name


NEW_SESSION_COMMANDS = {  # the commands that make a new session from a saved one
    "fork": lambda source: ["fork", source, "--at", "msg_000001", "more"],
    "replay": lambda source: ["replay", source],
}


@pytest.mark.parametrize("command", sorted(NEW_SESSION_COMMANDS))
def test_fork_and_replay_load_litellm_before_they_take_the_new_sessions_lock(rel_home, tmp_path, command):
    """As run: a kill in the seconds of the import left an empty session holding only its lock, which
    resume then started afresh from the default script, not the fork's or replay's."""
    source = started_session(rel_home, tmp_path)
    note = tmp_path / "note.txt"
    proc = subprocess.run([sys.executable, "-c", KILLED_AT_LOCK, str(note), *NEW_SESSION_COMMANDS[command](source)],
                          capture_output=True, text=True, env=subprocess_env(rel_home), cwd=rel_home.parent,
                          timeout=120)
    assert proc.returncode == -9, proc.stderr
    assert note.read_text() == "loaded"


@pytest.mark.parametrize("command", sorted(NEW_SESSION_COMMANDS))
def test_sigterm_during_the_import_of_fork_and_replay_exits_130_saving_nothing(rel_home, tmp_path, command):
    source = started_session(rel_home, tmp_path)
    proc = subprocess.run([sys.executable, "-c", TERMINATED_IN_IMPORT, *NEW_SESSION_COMMANDS[command](source)],
                          capture_output=True, text=True, env=subprocess_env(rel_home), cwd=rel_home.parent,
                          timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "interrupted before the session started: nothing was saved"
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert [p.name for p in (rel_home / "sessions").iterdir()] == [source]  # no new session, not even its lock


def test_a_session_killed_before_its_lock_was_made_reads_as_new_and_resumes(rel_home, tmp_path):
    # take() makes the directory, then the lock: killed in between, the empty directory was "unreadable" to
    # list, refused by show, damaged to verify, and "nothing to repair" to repair.
    script = ScriptBuilder("greet", {"main": ["hello", "hello again"]}).write(tmp_path / "greet.json")
    directory = rel_home / "sessions" / "20261129-165641-318b9d"
    directory.mkdir(parents=True, mode=0o700)
    listed = invoke(["sessions", "list"])
    (row,) = [line for line in listed.output.splitlines() if line.startswith(directory.name)]
    assert row.split()[2:4] == ["0", "new"], row
    assert invoke(["sessions", "show", directory.name]).exit_code == 0
    checked = verify(directory.name)
    assert checked.exit_code == 0 and "no run was recorded" in checked.output, checked.output
    resumed = invoke(["resume", directory.name, "--script", str(script), "hi"])
    assert resumed.exit_code == 0 and resumed.stdout.strip() == "hello", resumed.output
    assert verify(directory.name).exit_code == 0


# The CLI with the runtime's agent creation wrapped: the process SIGKILLs itself as its first agent is made,
# after the run's span started (argv: the CLI's).
KILLED_AT_FIRST_AGENT = """
import os, signal, sys
import otel_agents.runtime.session as runtime
made = runtime.Session.create_agent
def die(*args, **kwargs):
    import time
    time.sleep(0.5)  # the recorder process writes the run's start meanwhile
    os.kill(os.getpid(), signal.SIGKILL)
runtime.Session.create_agent = die
from otel_agents.cli import cli
cli(sys.argv[1:], prog_name="otel-agents")
"""


def test_a_session_killed_as_its_first_run_began_resumes_with_its_root_started_afresh(rel_home, tmp_path):
    # Its run's span was saved and no agent: verify said to resume it, resume said "no agents to resume".
    script = ScriptBuilder("greet", {"main": ["hello", "hello again"]}).write(tmp_path / "greet.json")
    proc = subprocess.run([sys.executable, "-c", KILLED_AT_FIRST_AGENT, "run", "--script", str(script), "hi"],
                          capture_output=True, text=True, env=subprocess_env(rel_home), cwd=rel_home.parent, timeout=120)
    assert proc.returncode == -9, proc.stderr
    (directory,) = (rel_home / "sessions").iterdir()
    assert (directory / "spans.jsonl").exists() and not (directory / "events.jsonl").exists()
    resumed = invoke(["resume", directory.name, "--script", str(script), "hi"])
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout.strip() == "hello"  # its root started afresh, from the script given
    assert verify(directory.name).exit_code == 0


def test_an_imported_trace_of_another_tool_has_no_agents_of_ours_and_is_not_started_afresh(rel_home):
    # Its runs hold model calls and no records: a resume starting a new root there would mix two histories.
    imported = invoke(["import", str(Path(__file__).parents[1] / "data" / "foreign" / "openinference.json")])
    assert imported.exit_code == 0, imported.output
    (directory,) = (rel_home / "sessions").iterdir()
    refused = invoke(["resume", directory.name, "hi"])
    assert refused.exit_code == 2 and "has no agents to resume" in refused.output, refused.output


def test_python_resume_of_a_session_killed_holding_its_lock_starts_its_root_afresh(rel_home, tmp_path, monkeypatch):
    """As the command does: ``otel_agents.resume`` refused it ("no agents to resume"), with no way on but
    a new session under the id. Without a script there is no root to start: refused, saying what to pass."""
    import otel_agents

    directory, script, _ = killed_at_lock(rel_home, tmp_path)
    session_id = directory.name
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with otel_agents.recording(home=rel_home):
        with pytest.raises(otel_agents.ResumeError, match=r"no agents yet .* pass script="):
            otel_agents.resume(session_id)
        assert sorted(p.name for p in directory.iterdir()) == ["owner.lock"]  # the refusal wrote nothing
        with otel_agents.resume(session_id, script=script) as session:
            assert session.run_sync("hi") == "hello"
    (run,) = load_tree(rel_home, session_id)["runs"]
    assert run["status"] == "ok" and run["attributes"]["otel_agents.run.source"] == "resume"
    assert verify(session_id).exit_code == 0
    with otel_agents.recording(home=rel_home):
        with otel_agents.resume(session_id) as session:  # its script is now the session's own
            assert session.run_sync("more") == "hello again"
