"""`otel-agents fork` carries the session limits of the source's run of the message, counting from zero,
with its own --max-... on top; a resume of the fork carries them on (docs/budgets.md)."""

from __future__ import annotations

from pathlib import Path

import orjson

from support.in_process import run_in_process

ECHO = {"name": "echo", "agents": {"main": [f"answer {n}" for n in range(1, 9)]}}


def otel_agents(home: Path, *args: str):
    return run_in_process(*args, home=home, env={"OTEL_TRACES_EXPORTER": "none"}, cwd=home.parent)


def session_id_of(done) -> str:
    return [line for line in done.stderr.splitlines() if line.startswith("session: ")][-1].split(": ", 1)[1]


def meta(home: Path, sid: str) -> dict:
    return orjson.loads((home / "sessions" / sid / "meta.json").read_bytes())


def source_with_limit(tmp_path: Path) -> tuple[Path, str, str]:
    """(home, the source session, its last message): one run of one LLM call under --max-llm-calls 2."""
    home = tmp_path / "home"
    script = tmp_path / "echo.json"
    script.write_text(orjson.dumps(ECHO).decode())
    done = otel_agents(home, "run", "--script", str(script), "--max-llm-calls", "2", "a")
    assert done.returncode == 0, done.stderr
    sid = session_id_of(done)
    last = orjson.loads((home / "sessions" / sid / "events.jsonl").read_bytes().splitlines()[-1])
    return home, sid, last["message_id"]


def test_a_fork_carries_the_sources_limits_counting_from_zero_and_its_resume_too(tmp_path):
    home, source, at = source_with_limit(tmp_path)
    done = otel_agents(home, "fork", source, "--at", at, "b", "c", "d")
    assert done.returncode == 1, done.stderr  # stopped by the limit, not unlimited
    assert "budget exhausted for session: 2 of 2 LLM calls made" in done.stderr
    sid = session_id_of(done)
    forked = meta(home, sid)
    assert forked["last_run"]["budget"] == '{"max_llm_calls":2}'
    assert forked["totals"]["llm_calls"] == 2  # from zero: the source's call is not the fork's
    resumed = otel_agents(home, "resume", sid, "e")
    assert resumed.returncode == 1 and "budget exhausted for session" in resumed.stderr, resumed.stderr


def test_fork_limit_options_go_on_top_of_the_sources(tmp_path):
    home, source, at = source_with_limit(tmp_path)
    done = otel_agents(home, "fork", source, "--at", at, "--max-llm-calls", "3", "--max-tokens", "100000",
                       "b", "c", "d", "e")
    assert done.returncode == 1, done.stderr
    forked = meta(home, session_id_of(done))
    assert orjson.loads(forked["last_run"]["budget"]) == {"max_llm_calls": 3, "max_tokens": 100000}
    assert forked["totals"]["llm_calls"] == 3


def test_a_fork_with_budget_scope_run_leaves_the_sources_limits_to_its_resume(tmp_path):
    home, source, at = source_with_limit(tmp_path)
    done = otel_agents(home, "fork", source, "--at", at, "--max-llm-calls", "1", "--budget-scope", "run", "b")
    assert done.returncode == 0, done.stderr
    last = meta(home, session_id_of(done))["last_run"]
    assert (last["budget"], last["budget_carried"]) == ('{"max_llm_calls":1}', '{"max_llm_calls":2}')
