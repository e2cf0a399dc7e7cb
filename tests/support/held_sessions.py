"""Real sessions held open for readers to look at: a run held inside its tool, a session opened before its first run."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from otel_agents.persistence.ownership import owner_of

ROOT = Path(__file__).resolve().parents[2]

APP = '''
import os, signal, time
from pathlib import Path

from otel_agents import Agent, tool


@tool
def hold(marker: str) -> str:
    """Wait (a live run) until the test creates MARKER.go.

    marker: a file to create once waiting
    """
    Path(marker).write_text("waiting")
    deadline = time.monotonic() + 120
    while not Path(marker + ".go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return "released"


@tool
def die() -> str:
    """Die mid-call, as a process killed by the OOM killer would."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "never said"


def make():
    return Agent("worker", "You work.", tools=[hold, die])
'''


def start_run(tmp_path: Path, home: Path, turns: list, prompt: str) -> subprocess.Popen:
    """A real ``python -m otel_agents run --app`` process, offline on a scripted model."""
    (tmp_path / "reader_app.py").write_text(APP)
    script = tmp_path / "reader.json"
    script.write_text(json.dumps({"name": "reader", "agents": {"worker": turns}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]),
               LITELLM_LOCAL_MODEL_COST_MAP="True")
    return subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "--app", "reader_app:make",
                             "--script", str(script), prompt], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)


def wait_for(condition, what: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def settled(directory: Path) -> None:
    """Wait until the recorder has written what it was sent (the files stop changing)."""
    previous = None
    while True:
        now = {p.name: p.stat().st_size for p in directory.iterdir()}
        if now == previous:
            return
        previous = now
        time.sleep(0.3)


def session_dir(home: Path) -> Path:
    (directory,) = (home / "sessions").iterdir()
    return directory


@contextlib.contextmanager
def held_run(tmp_path):
    """A real run held inside its tool ("Hold on"): yields its home and session directory while the run
    is open; on leaving, the tool is let go and the run must end cleanly, its recorder done."""
    home = tmp_path / "home"
    marker = tmp_path / "held"
    proc = start_run(tmp_path, home, [{"tool_calls": [{"name": "hold", "arguments": {"marker": str(marker)}}]},
                                      "Done holding."], "Hold on")
    try:
        wait_for(lambda: marker.exists() or proc.poll() is not None, "the tool to start")
        assert proc.poll() is None, proc.communicate()[1]
        directory = session_dir(home)
        # The recorder process writes in the order spans came: once the tool's start is in the journal, so
        # is the end of the call that asked for it (a pause in the files' growth alone is no proof under load).
        journal = directory / "spans.jsonl"
        wait_for(lambda: journal.exists() and b'"name":"execute_tool hold"' in journal.read_bytes(), "the tool's span")
        settled(directory)
        yield home, directory
    finally:
        Path(str(marker) + ".go").write_text("go")
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    wait_for(lambda: owner_of(directory) is None, "the recorder to end")


OPENER = '''
import sys

from otel_agents import Agent, Session, recording

# What a program does between opening a recorded session and its first run: the test says when
# to go on (a line on stdin), so a reader looks at the session in that window as long as it likes.
with recording(home=sys.argv[1]):
    session = Session(Agent("main", "You help."), script="jack-and-jill")
    print(session.id, flush=True)
    if sys.stdin.readline().strip() == "note":
        session.external("A note before any run")
        print("noted", flush=True)
        sys.stdin.readline()
'''


@dataclasses.dataclass
class Opened:
    """A real program whose recorded session is open and has had no run: nothing but its lock is saved."""

    proc: subprocess.Popen
    home: Path
    directory: Path

    def note(self) -> None:
        """Tell the session's root agent something outside any run: the journal and events.jsonl begin, no meta.json."""
        self.proc.stdin.write("note\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "noted", self.proc.stderr.read()
        wait_for(lambda: (self.directory / "spans.jsonl").exists() and (self.directory / "events.jsonl").exists(),
                 "the note to be saved")
        settled(self.directory)
        assert not (self.directory / "meta.json").exists()


@contextlib.contextmanager
def opened_session(tmp_path: Path):
    """Yields an :class:`Opened` session; on leaving, the program closes it (or has been killed)."""
    home = tmp_path / "home"
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "opener.py").write_text(OPENER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = subprocess.Popen([sys.executable, str(tmp_path / "opener.py"), str(home)], env=env, cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        session_id = proc.stdout.readline().strip()
        assert session_id, proc.communicate(timeout=60)[1]
        directory = home / "sessions" / session_id
        yield Opened(proc, home, directory)
    finally:
        if proc.poll() is None:
            proc.communicate("\n\n", timeout=120)
        else:
            proc.communicate(timeout=120)
    wait_for(lambda: owner_of(directory) is None, "the recorder to end")
