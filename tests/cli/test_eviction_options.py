"""``run``/``resume --max-live-agents --evict-idle`` and a script's ``eviction``: the CLI commands (the recorder
in its own process, as by default), whose evicting runs save exactly what keeping every agent saves."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import orjson
import pytest

from otel_agents.persistence.saved import load_saved
from otel_agents.tracing import semconv as sc
from support.in_process import run_in_process

SLOW = 300  # ms per sub-agent answer: the recorder process writes a finished agent's records meanwhile


def _task(name: str, prompt: str) -> dict:
    return {"tool_calls": [{"name": "task", "arguments": {"name": name, "system_prompt": f"You are {name}.",
                                                          "user_prompt": prompt}}]}


SCRIPT = {
    "name": "evict-cli",
    "root": {"name": "main", "system_prompt": "You coordinate."},
    "agents": {
        "main": [_task("A1", "hi A1"), _task("A2", "hi A2"), _task("A3", "hi A3"), "made",
                 {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["A1", "A2", "A3"], "prompt": "go"}}]},
                 "talked",
                 {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["A2", "A1"], "prompt": "again"}}]},
                 "talked again"],
        **{name: [{"text": f"{name} says {n}", "latency_ms": SLOW} for n in ("one", "two", "three")]
           for name in ("A1", "A2", "A3")},
    },
}


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "evict.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def otel_agents(*args: str, home: Path) -> subprocess.CompletedProcess:
    return run_in_process(*args, home=home, env={"OTEL_TRACES_EXPORTER": "none"})


def session_of(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stderr
    return next(line.split(": ", 1)[1] for line in done.stderr.splitlines() if line.startswith("session: "))


def records(home: Path, session_id: str) -> list[bytes]:
    lines = (home / "sessions" / session_id / "events.jsonl").read_bytes().splitlines()
    # Each line's bytes, in the file's field order, without the three fields two runs can never share.
    return [orjson.dumps({k: v for k, v in orjson.loads(line).items() if k not in ("ts", "trace_id", "span_id")})
            for line in lines]


def run_counts(home: Path, session_id: str) -> list[tuple[int | None, int | None]]:
    tree = load_saved(home / "sessions" / session_id).tree
    return [(r["attributes"].get(sc.RUN_AGENTS_EVICTED), r["attributes"].get(sc.RUN_AGENTS_REVIVED))
            for r in tree["runs"]]


def test_an_evicting_run_and_resume_save_what_keeping_every_agent_saves(tmp_path, script):
    kept, evicting = tmp_path / "kept", tmp_path / "evicting"
    plain = session_of(otel_agents("run", "--script", str(script), "make them", "talk", home=kept))
    lean = session_of(otel_agents("run", "--script", str(script), "--max-live-agents", "1", "make them", "talk",
                                  home=evicting))
    assert records(evicting, lean) == records(kept, plain)
    evicted, revived = zip(*run_counts(evicting, lean))
    assert sum(evicted) > 0 and sum(revived) > 0  # agents really left memory and came back
    assert run_counts(kept, plain) == [(None, None), (None, None)]  # nothing said where nothing is evicted

    # A resume addresses agents evicted before it: the same answers, the same records.
    plain_resumed = otel_agents("resume", plain, "more", home=kept)
    lean_resumed = otel_agents("resume", lean, "more", "--evict-idle", "0", home=evicting)
    assert plain_resumed.returncode == lean_resumed.returncode == 0, lean_resumed.stderr
    assert lean_resumed.stdout == plain_resumed.stdout == "talked again\n"
    assert records(evicting, lean) == records(kept, plain)
    assert run_counts(evicting, lean)[-1][1] > 0


def test_the_scripts_eviction_is_used_and_the_options_override_it(tmp_path, script):
    document = {**SCRIPT, "eviction": {"max_live_agents": 0}}
    path = tmp_path / "scripted-eviction.json"
    path.write_text(json.dumps(document))
    home = tmp_path / "home"
    session = session_of(otel_agents("run", "--script", str(path), "make them", home=home))
    assert run_counts(home, session)[0][0] > 0
    # --max-live-agents 1000 keeps them all: options win over the script's values
    session = session_of(otel_agents("run", "--script", str(path), "--max-live-agents", "1000", "make them",
                                     home=home))
    assert run_counts(home, session) == [(0, 0)]


@pytest.mark.parametrize("args, message", [
    (["--max-live-agents", "-1"], "--max-live-agents"),
    (["--evict-idle", "soon"], "--evict-idle"),
])
def test_a_bad_option_is_one_line_and_exit_2(tmp_path, script, args, message):
    done = otel_agents("run", "--script", str(script), *args, "make them", home=tmp_path / "home")
    assert done.returncode == 2 and "Traceback" not in done.stderr and message in done.stderr
    assert not (tmp_path / "home" / "sessions").exists()


def test_a_bad_eviction_in_a_script_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**SCRIPT, "eviction": {"max_live_agents": "many"}}))
    done = otel_agents("run", "--script", str(path), "make them", home=tmp_path / "home")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "'eviction.max_live_agents' must be a whole number" in done.stderr
    assert not (tmp_path / "home" / "sessions").exists()
