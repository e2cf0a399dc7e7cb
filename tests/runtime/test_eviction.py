"""otel_agents.runtime.eviction: idle agents leave memory and come back from the saved records unchanged.

Sessions here are real: the scripted model through litellm, recorded by the real recorder
(in the test's process, ``OTEL_AGENTS_RECORDER=inline``, so the runtime can be looked at),
revived from the events.jsonl that recorder wrote.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from pydantic import ValidationError

import otel_agents
from otel_agents.persistence.saved import load_saved
from otel_agents.runtime.eviction import EvictionPolicy, RevivalError, eviction_policy, rebuilt
from otel_agents.tracing import semconv as sc

SCRIPT = {
    "name": "evict-unit",
    "root": {"name": "main", "system_prompt": "You coordinate."},
    "agents": {
        "main": [
            # one call per turn: concurrent calls finish in the order litellm's threads do, eviction or not
            *({"tool_calls": [{"name": "task", "arguments": {"name": name, "system_prompt": f"You are {name}.",
                                                             "user_prompt": f"hi {name}"}}]} for name in ("A1", "A2", "A3")),
            "made",
            # a discuss round among evicted agents, then a task to a name that exists
            {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["A1", "A2"], "listeners": ["A3"],
                                                              "prompt": "go"}}]},
            {"tool_calls": [{"name": "task", "arguments": {"name": "A1", "user_prompt": "again"}}]},
            "talked",
        ],
        "A1": ["A1 one", "A1 two", "A1 three"],
        "A2": ["A2 one", "A2 two", "A2 three"],
        "A3": ["A3 one", "A3 two", "A3 three"],
    },
}


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "evict.json"
    path.write_text(json.dumps(SCRIPT))
    return path


@pytest.fixture(autouse=True)
def inline_recorder(monkeypatch):
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")  # the records are written when logged
    monkeypatch.setenv("OTEL_AGENTS_HOME", "/nonexistent-home-never-used")


def root() -> otel_agents.Agent:
    return otel_agents.Agent("main", "You coordinate.")


def events(home: Path, session_id: str) -> list[bytes]:
    lines = (home / "sessions" / session_id / "events.jsonl").read_bytes().splitlines()
    # Each line's bytes, in the file's field order, without the three fields two runs can never share.
    return [orjson.dumps({k: v for k, v in orjson.loads(line).items() if k not in ("ts", "trace_id", "span_id")})
            for line in lines]


def state(runtime) -> dict:
    """Everything an agent is: ids, names, parents, transcripts entry for entry, and the counters."""
    return {
        "counters": runtime.counters,
        "agents": {a.agent_id: (a.name, a.model, a.parent.agent_id if a.parent else None, sorted(a.subagents),
                                a.transcript, a.transcript_ids, a.description) for a in runtime.agents.values()},
    }


def run_session(home: Path, script: Path, prompts: list[str], eviction: EvictionPolicy | None, session_id: str,
                between=None) -> tuple[list[str], dict, object]:
    answers = []
    with otel_agents.recording(home=home):
        with otel_agents.Session(root(), script=script, eviction=eviction, session_id=session_id) as session:
            for number, prompt in enumerate(prompts):
                answers.append(session.run_sync(prompt))
                if between is not None:
                    between(number, session.runtime)
            final = state(session.runtime)
            evictor = session.runtime.evictor
    return answers, final, evictor


def test_an_evicted_agent_is_revived_with_its_state_and_answers_as_if_never_evicted(tmp_path, script):
    evicted_after_first = {}

    def look(number, runtime):
        if number == 0:
            evicted_after_first.update({a.name: a.evicted for a in runtime.agents.values()})

    kept = run_session(tmp_path / "kept", script, ["make them", "talk"], None, "20260101-000000-aaaaaa")
    evicting = run_session(tmp_path / "evicting", script, ["make them", "talk"], EvictionPolicy(max_live_agents=0),
                           "20260101-000000-aaaaaa", between=look)
    # Every agent, the root included, was out of memory between the runs, and came back when addressed.
    assert evicted_after_first == {"main": True, "A1": True, "A2": True, "A3": True}
    evictor = evicting[2]
    assert evictor.evictions >= 8 and evictor.revivals >= 4
    # The same answers, the same state entry for entry, the same records.
    assert evicting[0] == kept[0] == ["made", "talked"]
    assert evicting[1] == kept[1]
    assert events(tmp_path / "evicting", "20260101-000000-aaaaaa") == events(tmp_path / "kept", "20260101-000000-aaaaaa")
    assert "Error: subagent 'A1' already exists" in str(evicting[1]["agents"]["agent_001"][4])


def test_each_run_root_span_counts_what_left_memory_and_came_back(tmp_path, script):
    home = tmp_path / "home"
    run_session(home, script, ["make them", "talk"], EvictionPolicy(max_live_agents=0), "20260101-000000-bbbbbb")
    tree = load_saved(home / "sessions" / "20260101-000000-bbbbbb").tree
    ends = [run["attributes"] for run in tree["runs"]]
    counts = [(a.get(sc.RUN_AGENTS_EVICTED), a.get(sc.RUN_AGENTS_REVIVED)) for a in ends]
    assert counts[0] == (4, 0)  # the three sub-agents and the root, once each run had ended
    assert counts[1][0] > 0 and counts[1][1] >= 4  # the root and the three speakers and listener came back


def test_without_a_recording_nothing_is_evicted(script, tmp_path):
    with otel_agents.Session(root(), script=script, eviction=EvictionPolicy(max_live_agents=0)) as session:
        session.run_sync("make them")
        assert session.runtime.evictor is None
        assert not any(a.evicted for a in session.runtime.agents.values())
        assert [m["role"] for m in session.agent("A1").transcript] == ["system", "user", "assistant"]


def test_a_redacted_save_keeps_every_agent_in_memory(script, tmp_path):
    with otel_agents.recording(home=tmp_path, redacted_save=True):
        with otel_agents.Session(root(), script=script, eviction=EvictionPolicy(max_live_agents=0)) as session:
            session.run_sync("make them")
            assert session.runtime.evictor is None
            assert not any(a.evicted for a in session.runtime.agents.values())


def test_an_agent_answering_is_never_evicted(tmp_path):
    seen = []

    @otel_agents.tool
    def look(ctx: otel_agents.ToolContext) -> str:
        """Say which agents are out of memory while this one runs a tool."""
        seen.append(sorted(a.name for a in ctx.agent.session.agents.values() if a.evicted))
        return "looked"

    path = tmp_path / "look.json"
    path.write_text(json.dumps({"name": "look", "agents": {
        "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "B", "user_prompt": "hi"}}]},
                 {"tool_calls": [{"name": "look", "arguments": {}}]}, "done"],
        "B": ["b"]}}))
    with otel_agents.recording(home=tmp_path / "home"):
        agent = otel_agents.Agent("main", tools=[look])
        with otel_agents.Session(agent, script=path, eviction=EvictionPolicy(max_live_agents=0)) as session:
            assert session.run_sync("go") == "done"
    assert seen == [["B"]]  # B finished and left; main, in the middle of its response, stayed


def test_idle_seconds_evicts_what_was_not_used_for_that_long(tmp_path, script):
    now = [1000.0]
    with otel_agents.recording(home=tmp_path):
        with otel_agents.Session(root(), script=script, eviction=EvictionPolicy(idle_seconds=60)) as session:
            session.runtime.evictor.clock = lambda: now[0]
            session.run_sync("make them")
            assert not any(a.evicted for a in session.runtime.agents.values())  # nothing idle for 60 s yet
            now[0] += 60
            session.runtime.evictor.sweep()
            assert all(a.evicted for a in session.runtime.agents.values())


def test_the_limit_keeps_the_most_recently_used(tmp_path, script):
    with otel_agents.recording(home=tmp_path):
        with otel_agents.Session(root(), script=script, eviction=EvictionPolicy(max_live_agents=2)) as session:
            session.run_sync("make them")
            live = [a.name for a in session.runtime.agents.values() if not a.evicted]
    assert live == ["main", "A3"]  # main answered last, A3 was the last sub-agent to answer


def test_saved_records_that_changed_after_eviction_are_a_clear_error(tmp_path, script):
    with otel_agents.recording(home=tmp_path):
        with otel_agents.Session(root(), script=script, eviction=EvictionPolicy(max_live_agents=0)) as session:
            session.run_sync("make them")
            a1 = session.agent("A1")
            assert a1.evicted
            events_file = tmp_path / "sessions" / session.id / "events.jsonl"
            kept = [line for line in events_file.read_bytes().splitlines(keepends=True)
                    if b'"agent_002"' not in line or b'"assistant"' not in line]
            events_file.write_bytes(b"".join(kept))  # A1's answer is no longer saved (the file shrank too)
            with pytest.raises(RevivalError, match="agent_002"):
                a1.transcript
            assert a1.evicted  # still evicted: nothing half-rebuilt


def test_an_agent_whose_records_are_not_saved_yet_stays_in_memory(tmp_path, script):
    with otel_agents.recording(home=tmp_path):
        with otel_agents.Session(root(), script=script, eviction=EvictionPolicy(max_live_agents=0)) as session:
            session.run_sync("make them")
            runtime = session.runtime
            a2 = session.agent("A2")
            a2.transcript  # revived, and in memory again
            a2.harken("a note")
            events_file = tmp_path / "sessions" / session.id / "events.jsonl"
            saved = events_file.read_bytes()
            events_file.write_bytes(saved[: saved.rstrip(b"\n").rfind(b"\n") + 1])  # as if not written yet
            runtime.evictor.saved = type(runtime.evictor.saved)(events_file)  # a reader that saw nothing more
            assert runtime.evictor.evict(a2) is False
            assert not a2.evicted and a2.transcript[-1]["content"] == "a note"
            events_file.write_bytes(saved)
            assert runtime.evictor.evict(a2) is True


def test_the_policy_is_frozen_checked_and_states_its_bound():
    policy = EvictionPolicy(max_live_agents=5, idle_seconds=2.5)
    with pytest.raises(ValidationError):
        policy.max_live_agents = 3  # type: ignore[misc]
    for bad, says in (({"max_live_agents": -1}, "max_live_agents=-1: input should be greater than or equal to 0"),
                      ({"idle_seconds": -1}, "idle_seconds=-1: input should be"),
                      ({"idle_seconds": float("inf")}, "idle_seconds=inf: idle_seconds must be a finite number"),
                      ({"other": 1}, "other=1: extra inputs are not permitted")):
        with pytest.raises(ValueError, match=f"^EvictionPolicy: {re.escape(says)}") as caught:
            EvictionPolicy(**bad)
        assert "\n" not in str(caught.value)  # one line, not pydantic's report
    assert eviction_policy(None) is None and eviction_policy({}) is None
    assert eviction_policy({"idle_seconds": 0}) == EvictionPolicy(idle_seconds=0)
    assert "bound" in EvictionPolicy.__doc__.lower()


def test_rebuilt_applies_entries_and_truncations_in_order():
    def entry(number, text):
        return {"event_type": sc.EVENT_TRANSCRIPT_ENTRY, "message_id": f"msg_{number:06d}", "agent_id": "agent_001",
                "role": "user", "content": text}

    truncation = {"event_type": sc.EVENT_TRANSCRIPT_TRUNCATED, "message_id": "msg_000003", "agent_id": "agent_001",
                  "keep": 1}
    transcript, ids = rebuilt([entry(1, "a"), entry(2, "b"), truncation, entry(4, "c")])
    assert [m["content"] for m in transcript] == ["a", "c"] and ids == ["msg_000001", "msg_000004"]


def test_an_agent_saved_otherwise_than_it_is_held_is_kept_and_not_checked_again(tmp_path, script):
    with otel_agents.recording(home=tmp_path):
        with otel_agents.Session(root(), script=script, eviction=EvictionPolicy(max_live_agents=0)) as session:
            session.run_sync("make them")
            evictor = session.runtime.evictor
            a3 = session.agent("A3")
            a3.transcript  # revived
            events_file = tmp_path / "sessions" / session.id / "events.jsonl"
            saved = events_file.read_bytes()
            events_file.write_bytes(saved.replace(b'"A3 one"', b'"A3 1!!"'))  # same ids, other content
            evictor.saved = type(evictor.saved)(events_file)
            assert evictor.evict(a3) is False
            assert a3.agent_id in evictor.kept and a3.agent_id not in evictor.live
            a3.harken("still here")  # used again: not tracked, so never checked again
            assert evictor.sweep() == 0 and not a3.evicted
            assert a3.transcript[-1]["content"] == "still here"


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limit=st.integers(0, 4),
       rounds=st.lists(st.lists(st.sampled_from(["A1", "A2", "A3", "A4"]), min_size=1, max_size=4, unique=True),
                       min_size=1, max_size=3))
def test_any_limit_and_any_order_of_discussions_saves_what_keeping_every_agent_saves(tmp_path_factory, limit, rounds):
    turns = [*({"tool_calls": [{"name": "task", "arguments": {"name": f"A{n}", "user_prompt": f"hi {n}"}}]}
               for n in range(1, 5)), "made"]
    for number, speakers in enumerate(rounds):
        turns += [{"tool_calls": [{"name": "discuss", "arguments": {"speakers": speakers, "prompt": f"round {number}"}}]},
                  f"round {number} done"]
    document = {"name": "evict-property", "agents": {
        "main": turns, **{f"A{n}": [f"A{n} says {k}" for k in range(6)] for n in range(1, 5)}}}
    where = tmp_path_factory.mktemp("property")
    path = where / "script.json"
    path.write_text(json.dumps(document))
    prompts = ["make them", *(f"round {n}" for n in range(len(rounds)))]
    kept = run_session(where / "kept", path, prompts, None, "20260101-000000-cccccc")
    evicting = run_session(where / "evicting", path, prompts, EvictionPolicy(max_live_agents=limit),
                           "20260101-000000-cccccc")
    assert evicting[0] == kept[0] and evicting[1] == kept[1]
    assert events(where / "evicting", "20260101-000000-cccccc") == events(where / "kept", "20260101-000000-cccccc")
    assert evicting[2].evictions > 0


def test_idle_agents_leave_memory_while_the_session_waits_on_a_long_tool_call(tmp_path):
    seen = []

    @otel_agents.tool
    async def wait(ctx: otel_agents.ToolContext) -> str:
        """Wait as a long tool call does, then say which agents are out of memory."""
        await asyncio.sleep(0.6)  # no response ends meanwhile: only the timer can sweep
        seen.append(sorted(a.name for a in ctx.agent.session.agents.values() if a.evicted))
        return "waited"

    path = tmp_path / "wait.json"
    path.write_text(json.dumps({"name": "wait", "agents": {
        "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "B", "user_prompt": "hi"}}]},
                 {"tool_calls": [{"name": "wait", "arguments": {}}]}, "done"],
        "B": ["b"]}}))
    with otel_agents.recording(home=tmp_path / "home"):
        agent = otel_agents.Agent("main", tools=[wait])
        with otel_agents.Session(agent, script=path, eviction=EvictionPolicy(idle_seconds=0.15)) as session:
            assert session.run_sync("go") == "done"
            assert [m["content"] for m in session.agent("B").transcript][-1] == "b"  # revived intact
    # B answered before the wait (its response's end was too soon to evict it); idle for 0.15 s
    # during the wait, it left. main, answering, stayed.
    assert seen == [["B"]]
