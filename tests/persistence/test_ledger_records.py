"""Ledger records derived from the tree: every attempt and tool call, the issue's fields."""

from __future__ import annotations

from otel_agents.persistence.ledger_records import ledger_records
from otel_agents.persistence.timestamps import iso_ts, parse_iso_ts
from otel_agents.persistence.tree import build_tree
from otel_agents.persistence.tree_walk import iter_ops
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData

COMMON = {"record_id", "ts", "session_id", "trace_id", "span_id", "run", "path", "agent_id", "agent_name",
          "call_path", "type", "status", "latency_ms", "error"}
LLM = COMMON | {"provider", "model", "response_model", "attempt", "tokens", "cost_usd", "price_source"}
TOOL = COMMON | {"tool", "chars_in", "chars_out"}


def test_demo_records_have_the_issue_fields(record):
    recorded = record()
    tree = recorded.recorder.tree()
    records = ledger_records(tree)
    assert len(records) == 20 and len({r["record_id"] for r in records}) == 20
    for r in records:
        # A priced attempt also names its entry of the session's pricing snapshot (issue 23).
        priced = {"price_id"} if r["type"] == "llm" and r["cost_usd"] is not None else set()
        assert set(r) == (LLM | priced if r["type"] == "llm" else TOOL), r["type"]
        assert r["session_id"] == recorded.session.id and r["run"] == 1
        assert r["record_id"] == f"{r['trace_id']}:{r['span_id']}"
        parse_iso_ts(r["ts"])
    by_path = {r["path"]: r for r in records}
    failed = by_path["4-1"]
    assert failed["status"] == "failed" and "RateLimitError" in failed["error"] and failed["attempt"] == 1
    assert failed["cost_usd"] is None and failed["tokens"]["total"] == 0
    retry = by_path["4-2"]
    assert retry["status"] == "ok" and retry["error"] is None and retry["attempt"] == 2
    assert retry["provider"] == "scripted" and retry["model"] == "scripted/jack-and-jill"
    assert retry["price_source"] and retry["cost_usd"] > 0
    assert retry["tokens"]["total"] == retry["tokens"]["input"] + retry["tokens"]["output"] > 0
    denied = by_path["5-2"]
    assert denied["type"] == "tool" and denied["tool"] == "task" and denied["status"] == "failed"
    assert "blocked by hook 'ResourceMonitor'" in denied["error"]
    inner = by_path["4-3-2.2-2-1.1-1"]
    assert inner["agent_name"] == "Inner" and inner["call_path"] == "main/Jill/Inner"
    assert inner["agent_id"] == "agent_005"
    discuss = by_path["4-3"]
    assert discuss["chars_in"] > 0 and discuss["chars_out"] > 0 and discuss["latency_ms"] >= 0
    # Ledger costs add up to the session total the runtime computed.
    total = sum(r["cost_usd"] or 0 for r in records if r["type"] == "llm")
    assert abs(total - tree["runs"][0]["attributes"][sc.total_attr("inclusive", "cost_usd")]) < 1e-9


def test_runs_filter_and_derivation_is_stable(record):
    recorded = record(prompts=["Create Jack and Jill for a cafe discussion", "More?"])
    tree = recorded.recorder.tree()
    assert {r["run"] for r in ledger_records(tree, runs=[2])} == {2}
    assert ledger_records(tree) == ledger_records(build_tree(recorded.spans()))
    assert len(ledger_records(tree, runs=[1])) + len(ledger_records(tree, runs=[2])) == len(ledger_records(tree))


def test_cancelled_and_unfinished_ops_are_billed_as_failed():
    def span(sid, parent, name, start, end, **attrs):
        return SpanData("c" * 32, sid, parent, name, "INTERNAL", start, end, attrs)

    spans = [
        span("1" * 16, None, "invoke_agent main", 1_000, None, **{sc.SESSION_ID: "s", sc.RUN_INDEX: 3,
                                                                  sc.GEN_AI_OPERATION_NAME: "invoke_agent"}),
        span("2" * 16, "1" * 16, "turn", 1_100, None),
        span("3" * 16, "2" * 16, "chat m", 1_200, 5_000_000, **{sc.GEN_AI_OPERATION_NAME: "chat", sc.LLM_ATTEMPT: 1,
                                                              sc.GEN_AI_REQUEST_MODEL: "m"}),
        span("4" * 16, "2" * 16, "execute_tool t", 1_300, None, **{sc.GEN_AI_OPERATION_NAME: "execute_tool",
                                                                 sc.GEN_AI_TOOL_NAME: "t", sc.TOOL_CHARS_IN: 4}),
    ]
    tree = build_tree(spans)
    assert [ref.op["status"] for ref in iter_ops(tree)] == ["cancelled", "in_progress"]
    cancelled, unfinished = ledger_records(tree)
    assert cancelled["status"] == "failed" and "cancelled" in cancelled["error"] and cancelled["run"] == 3
    assert cancelled["latency_ms"] == round((5_000_000 - 1_200) / 1e6, 3)
    assert cancelled["model"] == "m" and cancelled["cost_usd"] is None and cancelled["ts"] == iso_ts(5_000_000)
    assert unfinished["status"] == "failed" and "unfinished" in unfinished["error"]
    assert unfinished["latency_ms"] is None and unfinished["chars_in"] == 4 and unfinished["ts"] == iso_ts(1_300)


def test_timestamps_round_trip():
    for ns in (0, 1, 1_700_000_000_123_456_789, 4_102_444_800_000_000_000):
        assert parse_iso_ts(iso_ts(ns)) == ns
    assert parse_iso_ts("2023-11-14T22:13:20Z") == 1_700_000_000_000_000_000
