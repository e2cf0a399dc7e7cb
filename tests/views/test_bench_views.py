"""The benchmark's synthetic session generator is importable and produces a consistent session."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from otel_agents.tracing.records import RECORD_FIELDS, message_from_record
from otel_agents.views import SessionViewer

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_views.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_views", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def synthetic(bench):
    return bench.synthetic_session(8_000, agents=12, seed=3)


def test_generator_makes_valid_records(synthetic):
    assert synthetic.entries >= 8_000
    ids = [r["message_id"] for r in synthetic.records]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    for record in synthetic.records:
        fields = set(record) - {"message_id", "event_type", "ts", "trace_id", "span_id"}
        assert fields <= set(RECORD_FIELDS[record["event_type"]])
    kinds = {r["event_type"] for r in synthetic.records}
    assert kinds == {"agent_created", "transcript_entry", "piece_of_text", "transcript_truncated"}


def test_every_synthetic_chat_context_is_consistent(synthetic):
    viewer = SessionViewer(synthetic.records, synthetic.tree)
    checked = 0
    for agent_id, span_ids in synthetic.chat_span_ids.items():
        for span_id in span_ids[:: max(1, len(span_ids) // 25)]:
            context = viewer.chat_context(span_id)  # raises if the count disagrees with the records
            assert context.agent_id == agent_id
            assert context.messages == [message_from_record(r) for r in viewer.get_transcript(agent_id, after=context.last_message_id)]
            checked += 1
    assert checked > 100
    # Dialog of everyone: every delivered copy collapses onto its original utterance or piece.
    items = viewer.extract_dialog([a.agent_id for a in viewer.list_agents()])
    assert {viewer.record(i.message_id)["event_type"] for i in items} == {"transcript_entry", "piece_of_text"}


def test_benchmark_runs_end_to_end(bench, tmp_path):
    session = bench.synthetic_session(1_500, agents=5)
    path = bench.write_session_dir(session, tmp_path)
    rows = bench.view_timings(session, path, repeat=1)
    assert [r[0] for r in rows][:2] == ["load events.jsonl + index", "agents"]
    assert all(wall >= 0 and cpu >= 0 for _, wall, cpu, _ in rows)
