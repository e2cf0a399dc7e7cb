"""Closing a session while one of its runs is in progress: the run is ended first, so what it spent is saved and billed."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading

import orjson
import pytest

import otel_agents
from otel_agents import Agent, Session, tool

INTERRUPTED = "Error: the run was interrupted before this tool call finished"
SCRIPT = {"name": "slow", "agents": {"main": [{"tool_calls": [{"name": "slow", "arguments": {}}]}, "after slow"]}}


@pytest.fixture
def script(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def slow_agent(started: threading.Event) -> Agent:
    @tool
    async def slow() -> str:
        """Takes long."""
        started.set()
        await asyncio.sleep(30)
        return "finished"

    return Agent("main", "x", tools=[slow])


def assert_saved_whole(home, session_id):
    records = (home / "sessions" / session_id / "events.jsonl").read_bytes().splitlines()
    tool_results = [e.get("content") for e in map(orjson.loads, records) if e.get("role") == "tool"]
    assert len(tool_results) == 1 and tool_results[0].startswith(INTERRUPTED)
    billed = [orjson.loads(line) for line in (home / "billing.jsonl").read_bytes().splitlines()]
    assert [row for row in billed if row["session_id"] == session_id]  # the LLM call it made is billed
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"OTEL_AGENTS_HOME": str(home)}
    verify = subprocess.run([sys.executable, "-m", "otel_agents", "sessions", "verify", session_id], env=env,
                            capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_aclose_cancels_a_run_in_progress_and_saves_what_it_did(tmp_path, script):
    started = threading.Event()

    async def main():
        async with otel_agents.recording(home=tmp_path) as rec:
            session = Session(slow_agent(started), script=script)
            run = asyncio.create_task(session.run("go"))
            while not started.is_set():
                await asyncio.sleep(0.01)
            assert await session.aclose()
            assert run.done()  # ended before aclose returned, not left running unsaved
            with pytest.raises(asyncio.CancelledError):
                await run
        return rec, session

    rec, session = asyncio.run(main())
    assert rec.saved_everything
    assert_saved_whole(tmp_path, session.id)


def test_close_from_another_thread_cancels_a_run_sync_in_progress(tmp_path, script):
    started = threading.Event()
    with otel_agents.recording(home=tmp_path):
        session = Session(slow_agent(started), script=script)
        closed: list[bool] = []
        closer = threading.Thread(target=lambda: (started.wait(10), closed.append(session.close())))
        closer.start()
        with pytest.raises(RuntimeError, match="closed while the run was in progress"):
            session.run_sync("go")  # not an empty CancelledError: it says what happened
        closer.join(10)
    assert closed == [True]
    assert_saved_whole(tmp_path, session.id)


def test_close_on_the_loop_of_a_run_in_progress_refuses_and_leaves_the_session_open(tmp_path, script):
    started = threading.Event()

    async def main():
        with otel_agents.recording(home=tmp_path):
            session = Session(slow_agent(started), script=script)
            run = asyncio.create_task(session.run("go"))
            while not started.is_set():
                await asyncio.sleep(0.01)
            with pytest.raises(RuntimeError, match="run in progress.*aclose"):
                session.close()  # it cannot wait for the run: the run needs this very loop
            assert await session.aclose()
            with pytest.raises(asyncio.CancelledError):
                await run
        return session

    session = asyncio.run(main())
    assert_saved_whole(tmp_path, session.id)


class ToolEscape(BaseException):
    """A tool's own BaseException: it stops the run as an interruption does, its call answered first."""


@pytest.mark.parametrize("escape", [KeyboardInterrupt, SystemExit, ToolEscape])
def test_a_tool_raising_keyboard_interrupt_ends_its_run_and_the_session_goes_on(tmp_path, monkeypatch, escape):
    """Raised in the tool call's own task, it left the loop with the run still waiting on the call: the next
    run_sync ran under it (its spending counted into the first run's span) and close failed."""
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    path = tmp_path / "boom.json"
    path.write_text(json.dumps({"name": "boom", "agents": {"main": [
        {"tool_calls": [{"name": "boom", "arguments": {}}]}, "after boom"]}}))

    @tool
    def boom() -> str:
        """Explode."""
        raise escape()

    with otel_agents.recording(home=tmp_path) as rec:
        with Session(Agent("main", "x", tools=[boom]), script=path) as session:
            with pytest.raises(escape):
                session.run_sync("go")
            assert session.run_sync("again") == "after boom"
    assert rec.saved_everything
    assert_saved_whole(tmp_path, session.id)


def test_close_from_another_thread_ends_a_run_sync_waiting_its_turn_with_the_closed_error(tmp_path, script):
    started = threading.Event()
    results: dict[str, object] = {}
    with otel_agents.recording(home=tmp_path):
        session = Session(slow_agent(started), script=script)

        def ask(prompt: str) -> None:
            try:
                results[prompt] = session.run_sync(prompt)
            except BaseException as exc:
                results[prompt] = exc

        first = threading.Thread(target=ask, args=("go",))
        first.start()
        assert started.wait(10)
        waiting = threading.Thread(target=ask, args=("next",))
        waiting.start()
        waiting.join(0.3)  # waiting its turn
        assert session.close()
        first.join(10)
        waiting.join(10)
    assert isinstance(results["go"], RuntimeError) and "closed while the run" in str(results["go"]), results
    assert isinstance(results["next"], RuntimeError) and "is closed" in str(results["next"]), results
    assert_saved_whole(tmp_path, session.id)
