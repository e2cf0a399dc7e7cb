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
            assert "--at" not in str(caught.value)  # the API's argument is at=, not the CLI's option
        with pytest.raises(otel_agents.ForkError, match="no session"):
            otel_agents.fork("20990101-000000-abcdef", at="msg_000001")
    assert sorted(p.name for p in (home / "sessions").iterdir()) == before


def test_fork_keeps_the_scripts_agent_budgets_and_its_eviction(tmp_path, monkeypatch):
    import json

    import otel_agents
    from otel_agents.persistence.saved import load_saved
    from otel_agents.runtime.eviction import EvictionPolicy
    from otel_agents.tracing import semconv as sc

    script = tmp_path / "budgeted.json"
    script.write_text(json.dumps({
        "name": "api-fork-budgets",
        "agents": {
            "main": ["hello", {"tool_calls": [{"name": "task", "arguments": {"name": "Worker", "user_prompt": "w"}}]},
                     "The worker stopped early."],
            "Worker": [{"tool_calls": [{"name": "task", "arguments": {"name": "Helper"}}],
                        "usage": {"input_tokens": 30, "output_tokens": 5}, "latency_ms": 300}, "never said"],
        },
        "agent_budgets": {"Worker": {"max_tokens": 20}},
    }))
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_EXPORTER_OTLP", "OTEL_AGENTS_"))}
    env.update({"OTEL_AGENTS_HOME": str(home), "OTEL_TRACES_EXPORTER": "none"})
    done = subprocess.run([sys.executable, "-m", "otel_agents", "run", "--script", str(script), "hi"],
                          capture_output=True, text=True, env=env, timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    sid = done.stderr.strip().splitlines()[-1].split(": ", 1)[1]
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    at = events(home, sid)[-1]["message_id"]
    with otel_agents.recording(home=home):
        with otel_agents.fork(sid, at=at, eviction=EvictionPolicy(max_live_agents=0)) as forked:
            forked.run_sync("go")
    results = [row["content"] for row in events(home, forked.id) if row.get("role") == "tool"]
    # Without the script's budget the Worker would have answered "never said".
    assert results[-1] == "Error: budget exhausted for Worker: 35 of 20 tokens spent"
    runs = load_saved(home / "sessions" / forked.id).tree["runs"]
    assert runs[-1]["attributes"].get(sc.RUN_AGENTS_EVICTED, 0) > 0  # the policy given was in force


def test_a_fork_closed_before_any_run_is_saved_whole_and_resumes(source, monkeypatch):
    """As ``otel-agents fork`` with no prompt: a run of no prompt records the inherited state (nothing was saved,
    ``close()`` said True, and the fork could be neither viewed nor resumed)."""
    import asyncio

    import otel_agents

    home, sid = source
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    lines = events(home, sid)
    runs = list(dict.fromkeys(line["trace_id"] for line in lines))
    last_of_run_1 = [line for line in lines if line["trace_id"] == runs[0]][-1]["message_id"]
    strip = lambda rows: [{k: v for k, v in row.items() if k not in VOLATILE} for row in rows]  # noqa: E731

    async def closed_by_aclose() -> str:
        async with otel_agents.recording(home=home):
            async with otel_agents.fork(sid, at=last_of_run_1) as forked:
                return forked.id

    with otel_agents.recording(home=home) as rec:
        closed = otel_agents.fork(sid, at=last_of_run_1)
        assert closed.close()
    assert rec.saved_everything
    for forked_id in (closed.id, asyncio.run(closed_by_aclose())):
        assert strip(events(home, forked_id)) == strip([line for line in lines if line["trace_id"] == runs[0]])
        with otel_agents.recording(home=home):
            with otel_agents.resume(forked_id) as resumed:
                resumed.run_sync(PROMPTS[1])
        assert strip(events(home, forked_id)) == strip([line for line in lines if line["trace_id"] in runs[:2]])


def test_fork_between_two_speakers_of_a_discuss_says_the_call_was_cut(source, monkeypatch):
    import otel_agents
    from otel_agents.forking import FORKED_RESULT
    from otel_agents.views import SessionViewer

    home, sid = source
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    lines = events(home, sid)
    call = next(line for line in lines if line["agent_id"] == "agent_001" and line.get("tool_calls")
                and line["tool_calls"][0]["function"]["name"] == "discuss")
    call_id = call["tool_calls"][0]["id"]
    jack = next(line for line in lines if line.get("tool_call_id") == call_id)  # Jack's reply; Jill's comes later
    with otel_agents.recording(home=home):
        with otel_agents.fork(sid, at=jack["message_id"]) as forked:
            forked.run_sync("And then?")
    viewer = SessionViewer.from_session_dir(home / "sessions" / forked.id)
    answer = next(line for line in events(home, forked.id) if line["agent_id"] == "agent_001"
                  and line.get("role") == "assistant" and line["message_id"] > jack["message_id"])
    messages = viewer.chat_context(answer["message_id"]).messages
    results = [m["content"] for m in messages if m.get("tool_call_id") == call_id]
    assert results == [jack["content"], FORKED_RESULT]


def test_fork_carries_the_sources_limits_from_zero_with_budget_on_top(tmp_path, monkeypatch):
    import json

    import otel_agents
    from otel_agents import Budget, BudgetExhausted
    from support.in_process import run_in_process

    script = tmp_path / "echo.json"
    script.write_text(json.dumps({"name": "echo", "agents": {"main": [f"answer {n}" for n in range(1, 9)]}}))
    home = tmp_path / "home"
    done = run_in_process("run", "--script", str(script), "--max-llm-calls", "2", "a", home=home,
                          env={"OTEL_TRACES_EXPORTER": "none"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    sid = done.stderr.strip().splitlines()[-1].split(": ", 1)[1]
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    at = events(home, sid)[-1]["message_id"]
    with otel_agents.recording(home=home):
        with otel_agents.fork(sid, at=at) as forked:  # the source's 2 calls, counted from zero
            forked.run_sync("b")
            forked.run_sync("c")
            with pytest.raises(BudgetExhausted, match="2 of 2 LLM calls made"):
                forked.run_sync("d")
        with otel_agents.fork(sid, at=at, budget=Budget(max_llm_calls=3)) as wider:
            for prompt in "bcd":
                wider.run_sync(prompt)
            with pytest.raises(BudgetExhausted, match="3 of 3 LLM calls made"):
                wider.run_sync("e")
    with pytest.raises(ValueError, match="budget_scope"):
        otel_agents.fork(sid, at=at, budget_scope="all")


def test_fork_at_an_outside_event_told_between_runs_starts_just_after_it(tmp_path, monkeypatch):
    """``Session.external`` between runs records the event outside any run: a fork there was refused
    ("recorded outside any run"), though docs/fork.md takes any message id."""
    import otel_agents
    from otel_agents import Agent, Session

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    home = tmp_path / "home"
    with otel_agents.recording(home=home):
        with Session(Agent("main"), script="jack-and-jill") as session:
            session.run_sync(PROMPTS[0])
            alarm = session.external("A fire alarm rings.", agent="Jill", source="alarm")
            buzz = session.external("Jack's phone buzzes.", agent="Jack")
            session.run_sync(PROMPTS[1])
    sid = session.id
    source_lines = events(home, sid)
    for at, heard in ((alarm, "A fire alarm rings."), (buzz, "Jack's phone buzzes.")):
        with otel_agents.recording(home=home):
            with otel_agents.fork(sid, at=at) as forked:
                last = forked.runtime.find_agent("Jill" if at == alarm else "Jack").transcript[-1]
                assert (last["role"], last["content"]) == ("user", heard)
                forked.run_sync(PROMPTS[1])
        inherited = [line for line in source_lines if int(line["message_id"][4:]) <= int(at[4:])]
        strip = lambda rows: [{k: v for k, v in row.items() if k not in VOLATILE} for row in rows]  # noqa: E731
        assert strip(events(home, forked.id)[:len(inherited)]) == strip(inherited)
        checked = subprocess.run([sys.executable, "-m", "otel_agents", "sessions", "verify", forked.id],
                                 capture_output=True, text=True, env={**os.environ, "OTEL_AGENTS_HOME": str(home)},
                                 timeout=120)
        assert checked.returncode == 0, checked.stdout + checked.stderr
