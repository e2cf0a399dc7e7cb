"""Agents known only by their spans: listed by id, else by name, with the enclosing agent as parent; ours skipped."""

from __future__ import annotations

from otel_agents.persistence.tree import build_tree
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData

TRACE = "0123456789abcdef0123456789abcdef"


def span(n: int, parent: int | None, name: str, **attributes) -> SpanData:
    return SpanData(TRACE, f"{n:016x}", None if parent is None else f"{parent:016x}", name, "INTERNAL", n, 100, attributes)


def test_span_only_agents_are_listed_by_id_else_name_with_their_parent():
    tree = build_tree([
        span(1, None, "invoke_agent Planner", **{sc.GEN_AI_AGENT_ID: "asst_1", sc.GEN_AI_REQUEST_MODEL: "gpt-4o"}),
        span(2, 1, "execute_tool delegate"),
        span(3, 2, "invoke_agent Writer"),
    ], "s")
    assert tree["agents"]["asst_1"]["name"] == "Planner" and tree["agents"]["asst_1"]["model"] == "gpt-4o"
    assert tree["agents"]["Writer"]["parent"] == "asst_1"
    assert tree["runs"][0]["agent_id"] == "asst_1"


def test_our_own_agents_are_not_listed_from_spans():
    tree = build_tree([span(1, None, "invoke_agent main", **{sc.AGENT_ID: "agent_1"})], "s")
    assert tree["agents"] == {}  # ours come from agent_created records only
