"""Reading a saved session for replay: its run prompts and every chat attempt as a recorded call, read-only."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from otel_agents.replay_source import ReplayError, read_source
from otel_agents.views import SessionViewer


def run(home: Path, *args: str) -> Path:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True")
    done = subprocess.run([sys.executable, "-m", "otel_agents", *args], env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return home / "sessions" / done.stderr.splitlines()[-1].split(": ", 1)[1]


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The demo, then resumed with a second prompt: two runs."""
    home = tmp_path_factory.mktemp("replay-source")
    session_dir = run(home, "run")
    run(home, "resume", session_dir.name, "And then?")
    return session_dir


def test_every_attempt_is_a_recorded_call_with_the_request_as_sent(demo):
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in demo.iterdir() if p.is_file()}
    source = read_source(demo)
    assert [run for run, _ in source.prompts] == [1, 2]
    assert source.prompts[1][1] == "And then?"
    assert source.script == "jack-and-jill" and source.app is None
    viewer = SessionViewer.from_session_dir(demo)
    answered = [r for r in viewer.records if r.get("role") == "assistant"]
    assert len([c for c in source.calls if c.message is not None]) == len(answered)
    (failed,) = [c for c in source.calls if c.message is None]
    assert (failed.agent, failed.turn, failed.attempt, failed.error_type) == ("main", 4, 1, "RateLimitError")
    retried = next(c for c in source.calls if (c.agent, c.turn, c.attempt) == ("main", 4, 2))
    assert retried.messages == failed.messages  # the retry sent the same request
    main = [c for c in source.calls if c.agent == "main" and c.attempt == 1]
    assert [c.turn for c in main] == list(range(1, len(main) + 1))
    assert main[0].messages[0]["role"] == "system" and main[0].tools
    assert all(c.compare for c in source.calls)
    assert before == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in demo.iterdir() if p.is_file()}


def test_calls_before_from_run_are_not_compared(demo):
    source = read_source(demo, from_run=2)
    first_run = read_source(demo).calls[:13]
    assert [c.compare for c in source.calls] == [False] * 13 + [True] * (len(source.calls) - 13)
    assert [c.messages for c in source.calls[:13]] == [c.messages for c in first_run]


@pytest.mark.parametrize("from_run", [0, 3])
def test_a_run_the_session_does_not_have_is_refused(demo, from_run):
    with pytest.raises(ReplayError, match=f"--from-run {from_run}: session .* has runs 1 to 2"):
        read_source(demo, from_run)


def test_a_directory_without_a_tree_is_refused(tmp_path):
    (tmp_path / "20990101-000000-abcdef").mkdir()
    with pytest.raises(ReplayError, match="cannot be replayed"):
        read_source(tmp_path / "20990101-000000-abcdef")


def test_run_2_starts_from_a_fork_point_just_after_run_1s_last_record_with_run_1s_spending(demo):
    from otel_agents.replay_source import state_before_run

    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in demo.iterdir() if p.is_file()}
    start = state_before_run(demo, 2)
    viewer = SessionViewer.from_session_dir(demo)
    prompt = next(r for r in viewer.records if r.get("role") == "user" and r.get("content") == "And then?")
    earlier = [r["message_id"] for r in viewer.records if r["message_id"] < prompt["message_id"]]
    assert start.point.message_id == earlier[-1]
    assert start.point.session_id == demo.name
    first_run = json.loads((demo / "meta.json").read_text())["totals"]
    assert start.spent["llm_calls"] == 13 < first_run["llm_calls"]  # run 1's attempts, the 429 included
    assert start.agents_spent["agent_001"]["llm_calls"] == 13  # the root, its sub-agents inclusive
    assert before == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in demo.iterdir() if p.is_file()}


def test_an_attempt_cut_off_in_an_earlier_run_counts_in_what_the_runs_before_spent(tmp_path, monkeypatch):
    # As at resume: the ledger bills it, so a replay from run 2 on must count it against --max-llm-calls.
    import asyncio
    import json

    import otel_agents
    from otel_agents import Agent, Session
    from otel_agents.replay_source import state_before_run

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    script = tmp_path / "slow.json"
    script.write_text(json.dumps({"name": "slow", "agents": {"main": [{"text": "late", "latency_ms": 60000}, "on"]}}))

    async def cut_off() -> str:
        async with otel_agents.recording(home=tmp_path / "home"):
            session = Session(Agent("main"), script=script)
            running = asyncio.create_task(session.run("go"))
            journal = tmp_path / "home" / "sessions" / session.id / "spans.jsonl"
            while not (journal.exists() and b'"chat ' in journal.read_bytes()):
                await asyncio.sleep(0.02)
            assert await session.aclose()
            assert running.cancelled()  # the attempt was cut off, not finished
            return session.id

    session_id = asyncio.run(cut_off())
    quick = tmp_path / "quick.json"  # the same script's model, answering at once (the cut turn never counted)
    quick.write_text(json.dumps({"name": "slow", "agents": {"main": ["on"]}}))
    with otel_agents.recording(home=tmp_path / "home"):
        with otel_agents.resume(session_id, script=quick) as again:
            assert again.run_sync("And then?") == "on"
    start = state_before_run(tmp_path / "home" / "sessions" / session_id, 2)
    assert start.spent["llm_calls"] == 1
    root = next(iter(start.agents_spent.values()))
    assert root["llm_calls"] == 1
