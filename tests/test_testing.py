"""`otel_agents.testing.assert_replays`: a saved session as a regression test, used as a project's suite would."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from otel_agents.testing import assert_replays
from support.in_process import run_in_process

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "otel_agents" / "llm" / "scripts" / "jack-and-jill.json"


def record(home: Path, *args: str) -> Path:
    """A session recorded by `otel-agents run` (in this process: the replays are the processes here); its directory."""
    done = run_in_process("run", *args, home=home)
    assert done.returncode == 0, done.stderr
    session_id = [line for line in done.stderr.splitlines() if line.startswith("session: ")][-1].split(": ", 1)[1]
    return home / "sessions" / session_id


def checksums(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


@pytest.fixture
def cafe(tmp_path) -> tuple[Path, Path]:
    """(the demo script copied where a test can edit it, a session recorded with it)."""
    script = tmp_path / "cafe.json"
    script.write_text(DEMO.read_text())
    return script, record(tmp_path / "recorded", "--script", str(script))


def test_an_unchanged_session_replays_and_its_directory_is_only_read(cafe, tmp_path):
    _, session_dir = cafe
    before = checksums(session_dir)
    replayed = assert_replays(session_dir, workdir=tmp_path / "scratch")
    assert "replay: 13 LLM calls of 1 runs matched" in replayed.report
    assert (tmp_path / "scratch" / "sessions" / replayed.session_id / "events.jsonl").is_file()
    assert checksums(session_dir) == before
    assert sorted(p.name for p in session_dir.parent.iterdir()) == [session_dir.name]  # nothing written beside it


def test_a_divergence_fails_the_test_with_the_agent_turn_and_diff(cafe):
    script, session_dir = cafe
    data = json.loads(script.read_text())
    data["root"]["system_prompt"] = "You direct a play."
    script.write_text(json.dumps(data))
    with pytest.raises(AssertionError) as failed:
        assert_replays(session_dir)
    text = str(failed.value)
    assert f"session {session_dir.name} does not replay (exit 1)" in text
    assert "replay diverged: agent main, turn 1, attempt 1: messages differ" in text
    assert '+  "content": "You direct a play.",' in text


def test_strict_is_passed_on(tmp_path):
    script = tmp_path / "echo.json"
    data = {"name": "echo", "params": {"seed": 1}, "agents": {"main": ["Echo!"]}}
    script.write_text(json.dumps(data))
    session_dir = record(tmp_path / "recorded", "--script", str(script), "hello")
    data["params"]["seed"] = 2
    script.write_text(json.dumps(data))
    assert "parameters differ" in assert_replays(session_dir).report  # noted only
    with pytest.raises(AssertionError, match="parameters differ"):
        assert_replays(session_dir, strict=True)


def test_a_directory_that_is_no_session_is_said_so(tmp_path):
    with pytest.raises(AssertionError, match="is not a saved session directory"):
        assert_replays(tmp_path)


def test_a_session_its_limit_stopped_replays_though_both_exit_1(tmp_path):
    done = run_in_process("run", "--max-llm-calls", "2", "Hello", home=tmp_path / "recorded")
    assert done.returncode == 1 and "budget exhausted for session: 2 of 2 LLM calls made" in done.stderr
    session_id = [line for line in done.stderr.splitlines() if line.startswith("session: ")][-1].split(": ", 1)[1]
    replayed = assert_replays(tmp_path / "recorded" / "sessions" / session_id)
    assert "replay: 2 LLM calls of 1 runs matched" in replayed.report
    assert "error: budget exhausted for session: 2 of 2 LLM calls made" in replayed.report


@pytest.mark.parametrize("from_run, error, message", [
    (0, ValueError, "from_run= must be at least 1, not 0"),
    (2, ValueError, r"from_run=2 is past session .*'s runs \(1 to 1\)"),
    ("2", TypeError, "from_run= takes a whole number"),
])
def test_a_bad_from_run_is_a_usage_error_naming_it_not_a_divergence(cafe, tmp_path, from_run, error, message):
    _, session_dir = cafe
    workdir = tmp_path / "work"
    with pytest.raises(error, match=message):
        assert_replays(session_dir, from_run=from_run, workdir=workdir)
    assert not workdir.exists()  # checked before anything ran or was copied
