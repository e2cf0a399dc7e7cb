"""Building the session tree: shape from real runs, purity, unfinished and cancelled work, grouping and merging."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from otel_agents.persistence.tree import assemble_session, build_tree, group_by_session, merge_trees
from otel_agents.persistence.tree_paths import node_at, position_of
from otel_agents.persistence.tree_walk import iter_ops, iter_records, iter_sessions
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData

# --------------------------------------------------------------------------- real runs


def test_demo_tree_has_runs_turns_ops_and_child_sessions(record):
    recorded = record()
    tree = recorded.recorder.tree()
    assert tree["id"] == recorded.session.id
    assert tree["status"] == "ok" and tree["success"] is True
    (run,) = tree["runs"]
    assert run["index"] == 1 and run["agent_name"] == "main" and run["status"] == "ok"
    assert tree["trace_ids"] == [run["trace_id"]]
    assert tree["attributes"][sc.RUN_SCRIPT] == "jack-and-jill"
    assert [t["index"] for t in run["turns"]] == [1, 2, 3, 4, 5, 6]
    assert run["ops"][0]["kind"] == "create_agent" and run["ops"][0]["path"] == "0-1"
    # Turn 4: a failed attempt (429), the retry, then discuss with Jack and Jill as child sessions.
    turn4 = run["turns"][3]
    assert [op["kind"] for op in turn4["ops"]] == ["llm", "llm", "tool"]
    failed, retried, discuss = turn4["ops"]
    assert failed["status"] == "error" and failed["accounting"][0]["status"] == "failed"
    assert "RateLimitError" in failed["error"] and failed["logs"][0]["level"] == "WRN"
    assert retried["accounting"][0]["attempt"] == 2 and retried["accounting"][0]["cost_usd"] > 0
    assert [op["session"]["agent_name"] for op in discuss["ops"]] == ["Jack", "Jill"]
    assert [op["path"] for op in discuss["ops"]] == ["4-3-1", "4-3-2"]
    jill = discuss["ops"][1]["session"]
    assert jill["call_path"] == "main/Jill"
    inner = node_at(run, position_of("4-3-2.2-2-1"))
    assert inner["kind"] == "session" and inner["session"]["call_path"] == "main/Jill/Inner"
    # The approval hook's agent runs inside the denied task call.
    denied = run["turns"][4]["ops"][1]
    assert denied["kind"] == "tool" and denied["status"] == "error"
    assert "ResourceMonitor" in denied["error"]
    assert denied["ops"][0]["session"]["agent_name"] == "ResourceMonitor"
    assert any(log["event"] == sc.EVENT_HOOK and "deny" in log["message"] for log in denied["logs"])
    # Reasoning of the last answer is structured on its llm op.
    last = run["turns"][5]["ops"][0]
    assert last["reasoning"]["final"].startswith("The discussion is done")
    assert last["request"]["context_agent_id"] == run["agent_id"]
    assert last["response"]["message_id"].startswith("msg_")
    # Totals computed from the accounting equal the totals the runtime put on the span.
    for key in sc.TOTAL_KEYS:
        assert run["totals"]["inclusive"][key] == pytest.approx(run["attributes"][sc.total_attr("inclusive", key)])
        assert run["totals"]["self"][key] == pytest.approx(run["attributes"][sc.total_attr("self", key)])
    assert tree["totals"]["inclusive"]["llm_calls"] == 13
    assert set(tree["agents"]) == {"agent_001", "agent_002", "agent_003", "agent_004", "agent_005"}
    assert tree["agents"]["agent_005"]["parent"] == "agent_003"


def test_every_span_attribute_and_event_is_kept(record):
    recorded = record()
    tree = recorded.recorder.tree()
    nodes = {}
    for node in iter_sessions(tree):
        nodes[node["span_id"]] = node
    for ref in iter_ops(tree):
        if ref.op["kind"] != "session":
            nodes[ref.op["span_id"]] = ref.op
        if ref.turn is not None:
            nodes[ref.turn["span_id"]] = ref.turn
    spans = recorded.spans()
    assert len(nodes) == len(spans)
    for span in spans:
        node = nodes[span.span_id]
        assert node["attributes"] == span.attributes
        kept = len(node["events"]) + len(node["logs"]) + len(node["span_events"])
        assert kept == len(span.events), span.name


def test_live_tree_equals_tree_rebuilt_from_exported_spans(record):
    recorded = record()
    rebuilt = build_tree(recorded.spans(), recorded.session.id)
    assert json.dumps(recorded.recorder.tree(), sort_keys=True) == json.dumps(rebuilt, sort_keys=True)


def test_build_tree_is_pure_and_order_independent(record):
    spans = record().spans()
    first = build_tree(spans)
    shuffled = list(spans)
    random.Random(7).shuffle(shuffled)
    assert build_tree(shuffled) == first
    assert build_tree(spans) == first  # the input was not consumed or changed


# --------------------------------------------------------------------------- unfinished work


def _span(span_id, parent, name, start, end, **attrs):
    return SpanData(
        trace_id="a" * 32, span_id=span_id, parent_span_id=parent, name=name, kind="INTERNAL",
        start_ns=start, end_ns=end, attributes=attrs,
    )


def test_spans_started_but_never_ended_stay_in_progress():
    spans = [
        _span("1" * 16, None, "invoke_agent main", 10, None, **{
            sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.SESSION_ID: "s1", sc.RUN_INDEX: 1, sc.AGENT_ID: "agent_001"}),
        _span("2" * 16, "1" * 16, "turn", 11, None, **{sc.TURN_INDEX: 1}),
        _span("3" * 16, "2" * 16, "chat m", 12, 20, **{
            sc.GEN_AI_OPERATION_NAME: "chat", sc.LLM_ATTEMPT: 1, sc.LLM_LATENCY_MS: 8.0,
            sc.GEN_AI_USAGE_INPUT_TOKENS: 5, sc.GEN_AI_USAGE_OUTPUT_TOKENS: 2}),
        _span("4" * 16, "2" * 16, "execute_tool slow", 21, None, **{
            sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.TOOL_CHARS_IN: 2}),
    ]
    tree = build_tree(spans)
    assert tree["id"] == "s1" and tree["status"] == "in_progress" and tree["ended_ns"] is None
    run = tree["runs"][0]
    assert run["status"] == "in_progress" and run["ended_ns"] is None
    turn = run["turns"][0]
    assert turn["status"] == "in_progress"
    llm, tool = turn["ops"]
    assert llm["status"] == "ok" and llm["accounting"][0]["tokens"]["total"] == 7
    assert tool["status"] == "in_progress" and tool["started_ns"] == 21 and tool["ended_ns"] is None
    assert tool["accounting"] == [] and tool["path"] == "1-2"


def test_cancelled_run_keeps_the_interrupted_ops(write_script, home, monkeypatch):
    """An asyncio task cancelled mid-tool: the spans end, and the tree says what was cut short."""
    from otel_agents.runtime.tools import make_tool

    started = asyncio.Event()

    async def wait_forever() -> str:
        """Waits until cancelled."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    tool = make_tool(wait_forever)
    script = {"name": "cancel-me", "agents": {"main": [{"tool_calls": [{"name": "wait_forever", "arguments": {}}]}]}}

    # Driven by hand (not the fixture) so that the run can be cancelled.
    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.scripts import load_script
    from otel_agents.persistence.recorder import SessionRecorder
    from otel_agents.persistence.store import SessionStore
    from otel_agents.runtime.scenario import build_session
    from otel_agents.tracing.setup import TracingOptions, configure_tracing

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    tracing = configure_tracing(TracingOptions(batch=False))
    session = build_session(load_script(str(write_script(script))), telemetry=tracing.telemetry,
                            llm=LLMClient(tracing.telemetry), tools=[tool])
    store = SessionStore.create(home / "sessions", session.id)
    recorder = SessionRecorder(store, session.id, billing_file=home / "billing.jsonl", warn=lambda m: None)
    tracing.add_processor(recorder)
    tracing.add_listener(recorder)

    async def main():
        task = asyncio.create_task(session.run("wait please"))
        await started.wait()
        live = recorder.tree()  # while the tool runs: in progress, known by its start
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return live

    live = asyncio.run(main())
    recorder.close()
    tracing.shutdown()
    live_tool = live["runs"][0]["turns"][0]["ops"][1]
    assert live_tool["status"] == "in_progress" and live_tool["ended_ns"] is None
    assert live["runs"][0]["status"] == "in_progress"

    saved = store.load_tree()
    run = saved["runs"][0]
    tool_op = run["turns"][0]["ops"][1]
    assert tool_op["kind"] == "tool" and tool_op["status"] == "cancelled"
    assert tool_op["started_ns"] == live_tool["started_ns"] and tool_op["accounting"] == []
    assert run["turns"][0]["status"] == "cancelled" and run["status"] == "cancelled"
    assert saved["status"] == "cancelled" and saved["success"] is False
    assert run["turns"][0]["ops"][0]["status"] == "ok"  # the attempt before the tool completed


# --------------------------------------------------------------------------- grouping and merging


def test_group_by_session_uses_the_trace_root(record):
    first = record()
    second = record("jack-and-jill")
    groups = group_by_session(first.spans() + second.spans())
    assert set(groups) == {first.session.id, second.session.id}
    assert len(groups[first.session.id]) == len(first.spans())


def test_merge_trees_keeps_earlier_runs(record):
    recorded = record(prompts=["Create Jack and Jill for a cafe discussion", "Anything else?"])
    spans = recorded.spans()
    full = build_tree(spans)
    assert [r["index"] for r in full["runs"]] == [1, 2]
    first_trace = full["runs"][0]["trace_id"]
    older = build_tree([s for s in spans if s.trace_id == first_trace])
    newer = build_tree([s for s in spans if s.trace_id != first_trace])
    merged = merge_trees(older, newer)
    assert json.dumps(merged, sort_keys=True) == json.dumps(full, sort_keys=True)
    assert merged["totals"]["inclusive"]["llm_calls"] == sum(r["totals"]["inclusive"]["llm_calls"] for r in full["runs"])


def test_assemble_session_without_runs():
    tree = assemble_session("empty", [], [])
    assert tree["runs"] == [] and tree["success"] is False and tree["totals"]["inclusive"]["llm_calls"] == 0


def test_spans_outside_any_run_are_kept_as_session_ops(memory_tracing):
    from otel_agents.runtime.session import Session
    from otel_agents.tracing.spandata import from_readable

    session = Session("loose-session", telemetry=memory_tracing.telemetry)
    agent = session.create_agent("Loose", "some/model", system_prompt="Be loose.")
    spans = [from_readable(s) for s in memory_tracing.spans()]
    tree = build_tree(spans)
    assert tree["id"] == "loose-session" and tree["runs"] == []
    (op,) = tree["ops"]
    assert op["kind"] == "create_agent" and op["path"] == "0-1" and op["trace_id"] == spans[0].trace_id
    refs = list(iter_records(tree))
    assert [r.record["event_type"] for r in refs] == ["agent_created", "transcript_entry"]
    assert all(r.trace_id == spans[0].trace_id and r.span_id == op["span_id"] for r in refs)
    assert tree["agents"][agent.agent_id]["name"] == "Loose"
    assert [ref.label for ref in iter_ops(tree)] == ["0-1"] and next(iter_ops(tree)).run is None
