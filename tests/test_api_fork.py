"""otel_agents.fork: the Python API forks as the CLI does (same state, same continuation), one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

PROMPTS = ["Create Jack and Jill for a cafe discussion", "And then?", "Goodbye."]
VOLATILE = {"ts", "trace_id", "span_id"}


def events(home: Path, sid: str) -> list[dict]:
    return [orjson.loads(line) for line in (home / "sessions" / sid / "events.jsonl").read_bytes().splitlines()]


@pytest.fixture
def source(tmp_path):
    """The demo with three prompts, run by a real CLI process."""
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_EXPORTER_OTLP", "OTEL_AGENTS_"))}
    env.update({"OTEL_AGENTS_HOME": str(home), "OTEL_TRACES_EXPORTER": "none"})
    done = subprocess.run([sys.executable, "-m", "otel_agents", "run", *PROMPTS], capture_output=True, text=True,
                          env=env, timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return home, done.stderr.strip().splitlines()[-1].split(": ", 1)[1]


def test_fork_runs_on_from_the_message_as_the_source_did(source, monkeypatch):
    import otel_agents

    home, sid = source
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    lines = events(home, sid)
    last_of_run_1 = [line for line in lines if line["trace_id"] == lines[0]["trace_id"]][-1]["message_id"]
    with otel_agents.recording(home=home):
        with otel_agents.fork(sid, at=last_of_run_1) as forked:
            for prompt in PROMPTS[1:]:
                forked.run_sync(prompt)
    assert forked.id != sid
    strip = lambda rows: [{k: v for k, v in row.items() if k not in VOLATILE} for row in rows]  # noqa: E731
    assert strip(events(home, forked.id)) == strip(lines)
    meta = orjson.loads((home / "sessions" / forked.id / "meta.json").read_bytes())
    assert meta["forked_from"] == {"session": sid, "message": last_of_run_1}


def test_fork_errors_are_one_line_and_create_nothing(source, monkeypatch):
    import otel_agents

    home, sid = source
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with pytest.raises(RuntimeError, match="recording"):
        otel_agents.fork(sid, at="msg_000001")
    before = sorted(p.name for p in (home / "sessions").iterdir())
    with otel_agents.recording(home=home):
        for at in ("msg_999999", "3-3-3-3", "x"):
            with pytest.raises(otel_agents.ForkError) as caught:
                otel_agents.fork(sid, at=at)
            assert "\n" not in str(caught.value)
        with pytest.raises(otel_agents.ForkError, match="no session"):
            otel_agents.fork("20990101-000000-abcdef", at="msg_000001")
    assert sorted(p.name for p in (home / "sessions").iterdir()) == before
