"""ToolContext.reply: text only, and only while its call runs: what it appends must stay a transcript providers accept."""

from __future__ import annotations

import asyncio

from otel_agents.llm.scripts import parse_script
from otel_agents.runtime.scenario import build_session
from otel_agents.runtime.tools import ToolContext, tool
from support.transcripts import assert_provider_valid

SCRIPT = {"name": "replies", "root": {"name": "main"},
          "agents": {"main": [{"tool_calls": [{"name": "answer", "arguments": {}}]}, "done", "again"]}}


def _session(memory_tracing, answer):
    return build_session(parse_script(SCRIPT, "inline"), telemetry=memory_tracing.telemetry, tools=[answer])


def test_a_reply_that_is_not_text_is_the_tool_s_failure_and_nothing_but_text_is_recorded(memory_tracing):
    @tool
    def answer(ctx: ToolContext) -> str:
        """Reply with a number."""
        ctx.reply(5)
        return "unreached"

    session = _session(memory_tracing, answer)
    assert asyncio.run(session.run("go")) == "done"
    (result,) = [m for m in session.root.transcript if m["role"] == "tool"]
    assert result["content"] == "Error: tool 'answer' failed: TypeError: ToolContext.reply takes text (str), not int"
    assert all(isinstance(r.get("content", ""), (str, type(None))) for r in memory_tracing.recorder.records)
    assert_provider_valid(session.root.transcript)


def test_a_reply_after_the_call_ended_is_refused_and_the_transcript_is_unchanged(memory_tracing):
    kept: list[ToolContext] = []

    @tool
    def answer(ctx: ToolContext) -> str:
        """Keep the context."""
        kept.append(ctx)
        return "now"

    session = _session(memory_tracing, answer)
    assert asyncio.run(session.run("go")) == "done"
    before = list(session.root.transcript)
    try:
        kept[0].reply("late result")
    except RuntimeError as exc:
        assert "has ended" in str(exc) and "'answer'" in str(exc)
    else:
        raise AssertionError("a reply after the call ended was taken")
    assert session.root.transcript == before
    assert not [r for r in memory_tracing.recorder.records if r.get("content") == "late result"]
    assert asyncio.run(session.run("more")) == "again"
    assert_provider_valid(session.root.transcript)


# --- tell and piece_of_text: new tools pass text on with its substance, the logging unchanged (seed 001) ---

WHISPERS = {"name": "whispers", "agents": {
    "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Jack"}},
                             {"name": "task", "arguments": {"name": "Jill"}}]},
             {"tool_calls": [{"name": "whisper", "arguments": {"to": "Jill", "text": "The cake is a lie"}}]},
             {"tool_calls": [{"name": "broadcast", "arguments": {"to": ["Jack", "Jill"], "text": "Closing time"}}]},
             {"tool_calls": [{"name": "whisper", "arguments": {"to": "main", "text": "Note to self"}},
                             {"name": "whisper", "arguments": {"to": "Nobody", "text": "Hello?"}}]},
             "done"]}}


@tool
def whisper(to: str, text: str, ctx: ToolContext) -> str:
    """Say something to one agent only.

    to: the agent's name
    text: what to say
    """
    return f"whispered as {ctx.tell(to, text)}"


@tool
def broadcast(to: list[str], text: str, ctx: ToolContext) -> str:
    """Say the same thing to several agents.

    to: their names
    text: what to say
    """
    piece = ctx.piece_of_text(text)  # stored once, every entry's substance
    return ", ".join(ctx.tell(name, piece) for name in to)


def test_tell_and_piece_of_text_record_what_task_and_discuss_record_of_text_passed_on(tmp_path, monkeypatch):
    import orjson

    import otel_agents
    from otel_agents import Agent, Session

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    path = tmp_path / "whispers.json"
    path.write_text(orjson.dumps(WHISPERS).decode())
    with otel_agents.recording(home=tmp_path):
        with Session(Agent("main", tools=[whisper, broadcast]), script=path) as session:
            assert session.run_sync("Gossip") == "done"
            jack, jill = session.agent("Jack"), session.agent("Jill")
            assert_provider_valid(session.agent("main").transcript)
    records = [orjson.loads(line) for line in (tmp_path / "sessions" / session.id / "events.jsonl").read_bytes().splitlines()]
    by_id = {r["message_id"]: r for r in records}
    calls = {c["function"]["name"] + c["function"]["arguments"]: r["message_id"] for r in records
             if r.get("tool_calls") for c in r["tool_calls"]}
    told = [r for r in records if r["event_type"] == "transcript_entry" and r["role"] == "user"
            and r["agent_id"] in (jack.agent_id, jill.agent_id)]
    assert [(r["agent_id"], r["content"]) for r in told] == [
        (jill.agent_id, "The cake is a lie"), (jack.agent_id, "Closing time"), (jill.agent_id, "Closing time")]
    whispered, *broadcast_entries = told
    piece = by_id[whispered["substance"]]  # a piece of text caused by the whisper call, in no transcript
    assert (piece["event_type"], piece["content"], piece["agent_id"]) == ("piece_of_text", "The cake is a lie",
                                                                           session.agent("main").agent_id)
    assert piece["cause"] == next(v for k, v in calls.items() if k.startswith("whisper") and "cake" in k)
    (shared,) = {r["substance"] for r in broadcast_entries}  # one piece, two entries
    assert by_id[shared]["cause"] == next(v for k, v in calls.items() if k.startswith("broadcast"))
    results = {r["content"] for r in records if r.get("role") == "tool"}
    assert f"whispered as {whispered['message_id']}" in results
    # Telling an agent waiting for its own calls' results (the caller), or no agent, is the call's error result.
    assert any("ToolContext.tell: main (" in r and "waits for its tool calls' results" in r for r in results)
    assert any("ToolContext.tell: no agent 'Nobody'" in r for r in results)
    assert not [r for r in records if r.get("content") in ("Note to self", "Hello?")]  # nothing recorded


# --- tell to an agent whose LLM request is in flight: held until its answer, as Session.external holds ---

OVERLAP = {"name": "overlap", "agents": {
    "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Jack", "user_prompt": "Hi"}}]},
             {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["Jack"], "prompt": "Talk"}},
                             {"name": "whisper_later", "arguments": {"to": "Jack", "text": "psst"}},
                             {"name": "forge", "arguments": {}}]},
             "done"],
    "Jack": ["Hello", {"text": "My answer", "latency_ms": 600}]}}


@tool
async def whisper_later(to: str, text: str, ctx: ToolContext) -> str:
    """Say something to one agent a little later.

    to: the agent's name
    text: what to say
    """
    await asyncio.sleep(0.2)  # Jack's request is in flight by now
    return f"whispered as {ctx.tell(to, text)}"


@tool
def forge(ctx: ToolContext) -> str:
    """Pass on text whose substance no record has."""
    from otel_agents import LoggedString

    return f"forged as {ctx.tell('Jack', LoggedString('made up', 'msg_999999'))}"


def test_tell_during_the_targets_llm_request_is_held_until_its_answer_with_its_substance(tmp_path, monkeypatch):
    import orjson

    import otel_agents
    from otel_agents import Agent, Session
    from support.in_process import run_in_process

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    path = tmp_path / "overlap.json"
    path.write_text(orjson.dumps(OVERLAP).decode())
    with otel_agents.recording(home=tmp_path):
        with Session(Agent("main", tools=[whisper_later, forge]), script=path) as session:
            assert session.run_sync("Go") == "done"
            jack = session.agent("Jack")
    records = [orjson.loads(line) for line in (tmp_path / "sessions" / session.id / "events.jsonl").read_bytes().splitlines()]
    said = [(r["role"], r["content"]) for r in records
            if r["event_type"] == "transcript_entry" and r["agent_id"] == jack.agent_id]
    assert said == [("user", "Hi"), ("assistant", "Hello"), ("user", "Talk"), ("assistant", "My answer"),
                    ("user", "psst")]  # after the answer its request was made without
    (psst,) = [r for r in records if r.get("content") == "psst" and r["event_type"] == "transcript_entry"]
    piece = next(r for r in records if r["message_id"] == psst["substance"])
    assert (piece["event_type"], piece["content"]) == ("piece_of_text", "psst")
    results = {r["content"] for r in records if r.get("role") == "tool"}
    assert "whispered as None" in results  # held: no id yet
    assert any("substance msg_999999 is no record of session" in r for r in results)
    assert not [r for r in records if r.get("content") == "made up"]
    assert run_in_process("sessions", "verify", session.id, home=tmp_path).returncode == 0
