"""Walks over a built tree: records in order and on their spans, child sessions in tree order."""

from __future__ import annotations

from otel_agents.persistence.tree_walk import iter_records, iter_sessions, records_of
from otel_agents.tracing import semconv as sc


def test_records_in_tree_rebuild_every_transcript(record):
    recorded = record()
    tree = recorded.recorder.tree()
    records = records_of(tree)
    assert [r["message_id"] for r in records] == sorted(r["message_id"] for r in records)
    transcripts: dict[str, list] = {}
    from otel_agents.tracing.records import message_from_record

    for record_ in records:
        if record_["event_type"] == sc.EVENT_TRANSCRIPT_ENTRY:
            transcripts.setdefault(record_["agent_id"], []).append(message_from_record(record_))
        elif record_["event_type"] == sc.EVENT_TRANSCRIPT_TRUNCATED:
            del transcripts[record_["agent_id"]][record_["keep"]:]
    for agent in recorded.session.agents.values():
        assert transcripts[agent.agent_id] == agent.transcript, agent.name


def test_records_are_located_on_their_spans(record):
    recorded = record()
    tree = recorded.recorder.tree()
    by_span = {s.span_id: s for s in recorded.spans()}
    refs = list(iter_records(tree))
    assert len(refs) == 41  # the demo's 39 records and its two host notices (issue 23), each on its span
    for ref in refs:
        span = by_span[ref.span_id]
        assert ref.trace_id == span.trace_id
        assert any(e.time_ns == ref.ts_ns and e.name == sc.record_event_name(ref.record["event_type"]) for e in span.events)


def test_child_sessions_are_found_in_tree_order_through_nested_operations():
    """iter_sessions walks each session level's operations depth first, in the order they sit."""

    def session(name, *ops, turns=()):
        return {"span_id": name, "ops": list(ops), "turns": [{"ops": list(t)} for t in turns]}

    def op(*children, child=None):
        return {"ops": list(children), "session": child}

    run = session(
        "run",
        op(op(child=session("a", op(child=session("a1")))), op(child=session("b"))),
        turns=[[op(child=session("c"), ), op(op(op(child=session("d"))), child=session("e"))]],
    )
    names = [node["span_id"] for node in iter_sessions({"runs": [run]})]
    assert names == ["run", "a", "a1", "b", "c", "e", "d"]
