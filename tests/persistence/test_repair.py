"""``sessions repair`` (repair.py) mends what a dead writer left so that the next resume has nothing to recover:
a torn last line of events.jsonl is cut before the checkpoint's mark is taken."""

from __future__ import annotations

import json
import os
import signal
import time
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.persistence.store import SessionStore

ROOT = Path(__file__).resolve().parents[2]
APP = '''
import os, signal
from otel_agents import Agent, tool


@tool
def die() -> str:
    """Die mid-call, as a process killed by the OOM killer would (only in the first run)."""
    if os.environ.get("DIE_NOW"):
        os.kill(os.getpid(), signal.SIGKILL)
    return "alive"


def make():
    return Agent("worker", "You work.", tools=[die])
'''


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def said(result) -> list[str]:
    """stderr without the console's log lines and the session id: the warnings."""
    return [line for line in result.stderr.splitlines() if not line.startswith(("[txn", "session: "))]


def half_a_line(path: Path) -> bytes:
    """The last line of ``path`` cut in half, newline gone, as a writer killed mid-line leaves it; its whole bytes."""
    data = path.read_bytes()
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    whole = data[start:]
    path.write_bytes(data[: start + len(whole) // 2])
    return whole


@pytest.fixture
def killed(tmp_path, home, monkeypatch):
    """A real ``otel-agents run --app`` process SIGKILLed inside its tool; its session once its recorder has ended."""
    from otel_agents.persistence.ownership import owner_of

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    (tmp_path / "dying_app.py").write_text(APP)
    monkeypatch.syspath_prepend(str(tmp_path))  # the in-process resume imports the app again
    script = tmp_path / "dying.json"
    script.write_text(json.dumps({"name": "dying", "agents": {"worker": [
        {"tool_calls": [{"name": "die", "arguments": {}}]}, "after the crash", "and again"]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), OTEL_TRACES_EXPORTER="none", DIE_NOW="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]), LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = subprocess.run([sys.executable, "-m", "otel_agents", "run", "--app", "dying_app:make", "--script",
                           str(script), "Work"], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    (directory,) = (home / "sessions").iterdir()
    deadline = time.monotonic() + 60
    while owner_of(directory) is not None:  # the recorder process writes what it was sent, then lets go
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return SessionStore(directory)


@pytest.mark.parametrize("torn", [False, True], ids=["whole-lines", "torn-events-tail"])
def test_the_first_resume_after_a_repair_has_nothing_to_recover(killed, torn):
    """The kill left the run open (and, when the recorder died mid-line too, half a line of events.jsonl):
    repair mends it all, so the resume that follows says nothing of a recovery."""
    if torn:
        with open(killed.events_path, "ab") as handle:
            handle.write(b'{"message_id": "msg_000099", "event_type": "transcript_en')
    repaired = invoke("sessions", "repair", killed.session_id)
    assert repaired.exit_code == 0, repaired.stderr
    assert invoke("sessions", "verify", killed.session_id).exit_code == 0

    resumed = invoke("resume", killed.session_id, "Carry on")
    assert resumed.exit_code == 0, resumed.stderr
    assert said(resumed) == []  # no "recovered from spans.jsonl", no torn line skipped or removed
    assert ("removed a torn last line of events.jsonl" in repaired.stdout) == torn
    assert invoke("sessions", "verify", killed.session_id).exit_code == 0
