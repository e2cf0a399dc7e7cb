"""``sessions repair`` (repair.py) mends what a dead writer left so that the next resume has nothing to recover:
a torn last line of events.jsonl is made whole from tree.json.gz or cut, before the checkpoint's mark is taken."""

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
from otel_agents.persistence.events_file import read_event_lines
from otel_agents.persistence.saved import SOURCE_CHECKPOINT, load_saved
from otel_agents.persistence.store import SessionStore
from otel_agents.persistence.tree_walk import records_of

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


def test_a_torn_last_event_line_the_checkpoint_holds_is_restored(record, home):
    """events.jsonl's last line cut in half by hand after a clean close: the record is whole in tree.json.gz,
    so repair writes the rest of its line back (the same bytes), verify agrees, and resume keeps it."""
    store = record("jack-and-jill", ["Hello there"]).store
    before = store.events_path.read_bytes()
    whole = half_a_line(store.events_path)
    assert invoke("sessions", "verify", store.session_id).exit_code == 1  # the record is in the tree only

    repaired = invoke("sessions", "repair", store.session_id)
    assert repaired.exit_code == 0, repaired.stderr
    message_id = json.loads(whole)["message_id"]
    assert f"restored record {message_id} in events.jsonl from tree.json.gz" in repaired.stdout
    assert store.events_path.read_bytes() == before  # byte for byte: nothing else rewritten
    verified = invoke("sessions", "verify", store.session_id)
    assert verified.exit_code == 0, verified.stdout
    assert load_saved(store.directory, pytest.fail).source == SOURCE_CHECKPOINT  # the mark holds again
    assert "nothing to repair" in invoke("sessions", "repair", store.session_id).stdout

    resumed = invoke("resume", store.session_id, "And now?")
    assert resumed.exit_code == 0, resumed.stderr
    ids = [record["message_id"] for record in records_of(store.load_tree())]
    assert message_id in ids and len(ids) == len(set(ids))
    assert [line.record["message_id"] for line in read_event_lines(store.events_path, pytest.fail)] == ids
    assert invoke("sessions", "verify", store.session_id).exit_code == 0


def test_resume_without_a_repair_keeps_the_torn_record_the_checkpoint_holds(record, home):
    """The owner's resume makes the same mend, once its checks have passed: the record stays everywhere."""
    store = record("jack-and-jill", ["Hello there"]).store
    before = store.events_path.read_bytes()
    message_id = json.loads(half_a_line(store.events_path))["message_id"]

    resumed = invoke("resume", store.session_id, "And now?")
    assert resumed.exit_code == 0, resumed.stderr
    assert store.events_path.read_bytes().startswith(before)
    assert message_id in [record["message_id"] for record in records_of(store.load_tree())]
    assert invoke("sessions", "verify", store.session_id).exit_code == 0


def cut_journal_in_half(store: SessionStore) -> None:
    """spans.jsonl cut short after a clean close, as a truncated file or a restored older copy leaves it."""
    lines = store.journal_path.read_bytes().splitlines(keepends=True)
    store.journal_path.write_bytes(b"".join(lines[: len(lines) // 2]))


def test_a_journal_shorter_than_its_checkpoint_is_not_repaired(record, home):
    """Repair appended interrupted ends for spans tree.json.gz shows ended normally, so the journal recorded
    a false history and readers showed the part it holds; now it refuses, in one line, and writes nothing."""
    store = record("jack-and-jill", ["Hello there", "And again"]).store
    cut_journal_in_half(store)
    def files():  # but the lock the owner takes
        return {path.name: path.read_bytes() for path in store.directory.iterdir() if path.name != "owner.lock"}

    before = files()
    repaired = invoke("sessions", "repair", store.session_id)
    assert repaired.exit_code == 2, repaired.stdout
    (error,) = [line for line in repaired.stderr.splitlines() if line.startswith("Error:")]
    assert "shorter than tree.json.gz" in error and "nothing was changed" in error
    assert files() == before
    assert b"interrupted" not in store.journal_path.read_bytes()

    resumed = invoke("resume", store.session_id, "And now?")  # its write-back would record them too
    assert resumed.exit_code != 0 and "shorter than tree.json.gz" in resumed.stderr
    assert files() == before
