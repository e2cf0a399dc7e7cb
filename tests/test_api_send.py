"""Outside events from Python as ``otel-agents send`` records them: ``Session.send`` answers at once,
``Session.external(source=)`` names the sender; a script's ``triggers`` are not silently dropped."""

from __future__ import annotations

import asyncio
import gzip
import json
import warnings
from pathlib import Path

import orjson
import pytest

import otel_agents
from otel_agents import Agent, LoggedString, Session
from support.in_process import run_in_process

SCRIPT = {"name": "cron", "agents": {"main": ["Backup noted.", "Both noted."]}}


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "cron.json"
    path.write_text(json.dumps(SCRIPT))
    return path


@pytest.fixture(autouse=True)
def inline_recorder(monkeypatch):
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")


def entries(home: Path, session_id: str) -> list[tuple]:
    path = home / "sessions" / session_id / "events.jsonl"
    records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return [(r["role"], r.get("content"), r.get("source"), r["message_id"]) for r in records
            if r["event_type"] == "transcript_entry"]


def runs(home: Path, session_id: str) -> list[dict]:
    tree = orjson.loads(gzip.decompress((home / "sessions" / session_id / "tree.json.gz").read_bytes()))
    return tree["session"]["runs"]


def test_send_is_seed_example_4_an_outside_event_and_its_answer_recorded_as_the_cli_send_does(tmp_path, script):
    with otel_agents.recording(home=tmp_path):
        with Session(Agent("main"), script=script) as session:
            answer = session.send_sync("Nightly backup finished", source="cron")
    assert answer == "Backup noted." and isinstance(answer, LoggedString)
    (event_role, event, source, _), (role, said, _, said_id) = entries(tmp_path, session.id)
    assert (event_role, event, source) == ("user", "Nightly backup finished", "external:cron")  # no made-up prompt
    assert (role, said) == ("assistant", "Backup noted.") and answer.message_id == said_id
    (run,) = runs(tmp_path, session.id)
    assert run["attributes"]["otel_agents.run.source"] == "external"
    assert run["attributes"]["otel_agents.ingress.sender"] == "cron"
    meta = orjson.loads((tmp_path / "sessions" / session.id / "meta.json").read_bytes())
    assert meta["last_run"]["ingress"] == {"sender": "cron"}  # a program's run: no process facts, as run's
    shown = run_in_process("sessions", "show", session.id, home=tmp_path)
    assert "from external (sender cron)\n" in shown.stdout and "?@?" not in shown.stdout, shown.stdout
    assert run_in_process("sessions", "verify", session.id, home=tmp_path).returncode == 0


def test_send_without_a_source_is_plain_external_and_external_names_its_sender(tmp_path, script):
    async def program() -> str:
        async with otel_agents.recording(home=tmp_path):
            async with Session(Agent("main"), script=script) as session:
                await session.send("ping")
                session.external("Disk 80% full", source="monitor")
                await session.send("Disk 90% full", agent="main", source="monitor")
                return session.id

    session_id = asyncio.run(program())
    assert [e[:3] for e in entries(tmp_path, session_id)] == [
        ("user", "ping", "external"), ("assistant", "Backup noted.", None),
        ("user", "Disk 80% full", "external:monitor"),
        ("user", "Disk 90% full", "external:monitor"), ("assistant", "Both noted.", None)]
    first, second = runs(tmp_path, session_id)
    assert "otel_agents.ingress.sender" not in first["attributes"]
    assert first["attributes"]["otel_agents.run.source"] == second["attributes"]["otel_agents.run.source"] == "external"
    shown = run_in_process("sessions", "show", session_id, home=tmp_path).stdout
    assert shown.count("  from external\n") == 1 and "from external (sender monitor)\n" in shown, shown  # as CLI send


def test_external_from_several_threads_before_the_root_exists_makes_one_root(tmp_path, monkeypatch):
    import threading
    import time

    from otel_agents.runtime.session import Session as RuntimeSession

    made = RuntimeSession.create_agent

    def slow_create(self, *args, **kwargs):  # widen the window two threads would both find no root in
        time.sleep(0.05)
        return made(self, *args, **kwargs)

    monkeypatch.setattr(RuntimeSession, "create_agent", slow_create)
    script = tmp_path / "t3.json"
    script.write_text(json.dumps({"name": "t3", "agents": {"main": ["warm ok", "x"]}}))
    barrier = threading.Barrier(2)
    with otel_agents.recording(home=tmp_path):
        with Session(Agent("main", "sys"), script=script) as session:
            def tell(k: int) -> None:
                barrier.wait()
                session.external(f"hello from {k}")

            threads = [threading.Thread(target=tell, args=(k,)) for k in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert session.run_sync("warm") == "warm ok"
    path = tmp_path / "sessions" / session.id / "events.jsonl"
    records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    (root,) = [r["agent_id"] for r in records if r["event_type"] == "agent_created"]
    assert sorted(e[1] for e in entries(tmp_path, session.id) if e[0] == "user") == [
        "hello from 0", "hello from 1", "warm"]
    assert {r["agent_id"] for r in records if r["event_type"] == "transcript_entry"} == {root}
    assert run_in_process("view", session.id, "transcript", "main", home=tmp_path).returncode == 0


def test_a_bad_source_or_text_is_refused_where_given_and_nothing_runs(script):
    session = Session(Agent("main"), script=script)
    for call, match in [
        (lambda: session.send_sync("hi", source="two\nlines"), "Session.send_sync: source must be one printable line"),
        (lambda: session.send_sync("hi", source="x" * 201), "1 to 200 characters"),
        (lambda: session.external("hi", source=""), "Session.external: source must be one printable line"),
        (lambda: session.send_sync("  "), "Session.send_sync: text must be a non-empty string"),
        (lambda: session.send_sync("hi", agent="Nobody"), "no agent 'Nobody'"),
    ]:
        with pytest.raises(ValueError, match=match):
            call()
    with pytest.raises(TypeError, match="Session.send_sync: source must be a string, not int"):
        session.send_sync("hi", source=3)
    assert session.agent("main") is None  # nothing ran: not even the root was made
    session.close()
    with pytest.raises(RuntimeError, match="is closed"):
        session.send_sync("hi")


def test_a_scripts_triggers_are_a_warning_naming_them_not_silently_dropped(tmp_path, script):
    path = tmp_path / "watching.json"
    path.write_text(json.dumps({**SCRIPT, "triggers": [{"watch": "data.json", "agent": "main"}]}))
    with pytest.warns(RuntimeWarning, match=r"Session: script .*watching.json's triggers \('data.json'\) are not "
                                            r"watched from Python, only by otel-agents run; .*session.send"):
        Session(Agent("main"), script=path).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Session(Agent("main"), script=script).close()  # no triggers: no warning


def test_a_run_awaited_inside_a_tool_of_the_same_sessions_run_is_refused_not_run_out_of_turn(tmp_path):
    from otel_agents import tool

    opened: list[Session] = []

    @tool
    async def nested(how: str) -> str:
        """Start another run of this session.

        how: send or run
        """
        session = opened[0]
        return await (session.send("inner") if how == "send" else session.run("inner"))

    script = tmp_path / "nested.json"
    script.write_text(json.dumps({"name": "nested", "agents": {"main": [
        {"tool_calls": [{"name": "nested", "arguments": {"how": "send"}},
                        {"name": "nested", "arguments": {"how": "run"}}]}, "done", "later"]}}))
    with otel_agents.recording(home=tmp_path):
        with Session(Agent("main", tools=[nested]), script=script) as session:
            opened.append(session)
            assert session.run_sync("outer") == "done"
            assert session.run_sync("after") == "later"  # the session goes on
    results = [e[1] for e in entries(tmp_path, session.id) if e[0] == "tool"]
    assert len(results) == 2 and all("a run cannot start inside one of its own runs" in r for r in results), results
    assert "inner" not in [e[1] for e in entries(tmp_path, session.id)]
    assert len(runs(tmp_path, session.id)) == 2
    assert run_in_process("sessions", "verify", session.id, home=tmp_path).returncode == 0
