"""The benchmark generators are exact: scripted call counts, alternation order, ledger counts, and
large recorded sessions as consistent as a session recorded whole."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield {name: importlib.import_module(name) for name in ("bench_session", "bench_timing", "bench_billing")}
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.mark.parametrize("calls", [25, 26, 27, 40, 101, 500])
def test_script_plans_exactly_the_calls_asked(bench, calls):
    from otel_agents.llm.scripts import parse_script

    plan = bench["bench_session"].make_script(calls)
    script = parse_script(plan.document, "bench")
    # Every scripted turn is one LLM call; the plan leaves no agent to the fallback.
    assert sum(len(turns) for turns in script.agents.values()) == calls == plan.llm_calls
    assert len(plan.prompts) == sum(1 for t in script.agents["main"] if t.text and not t.tool_calls)


def test_script_refuses_a_session_too_short_for_its_shape(bench):
    with pytest.raises(ValueError, match="at least"):
        bench["bench_session"].make_script(10)


def test_alternation_puts_each_side_first_equally_often(bench):
    order = []
    timing = bench["bench_timing"]
    comparison = timing.alternate(lambda: order.append("a") or 2.0, lambda: order.append("b") or 1.0, 4)
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert comparison.ratios == [2.0] * 4 and comparison.ratio == 2.0


def test_synthetic_ledger_counts_what_it_wrote(bench, tmp_path):
    from otel_agents.persistence.ledger_summary import summarize_file

    billing = bench["bench_billing"]
    ledger = billing.write_ledger(tmp_path / "billing.jsonl", 3_000)
    rows = summarize_file(ledger.path, "model")
    assert sum(r.calls for r in rows) == 3_000
    assert sum(r.tool_calls for r in rows) == ledger.tool_records
    assert sum(r.llm_calls for r in rows) == ledger.llm_records


def test_a_recorded_session_repeated_keeps_every_chat_context_exact(bench, tmp_path, monkeypatch):
    from otel_agents.views import SessionViewer

    monkeypatch.setenv("OTEL_AGENTS_HOME", str(tmp_path / "home"))
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    instrumentation = importlib.import_module("bench_instrumentation")
    recorded_module = importlib.import_module("bench_recorded")
    plan = bench["bench_session"].make_script(40, agents=3, runs=2)
    script = bench["bench_session"].write_script(plan, tmp_path)
    capture = instrumentation.capture_session(script, plan.prompts, tmp_path / "capture")
    once = sum(1 for kind, _, p, _ in capture.actions if kind == "record" and p["event_type"] == "transcript_entry")
    recorded = recorded_module.write_recorded_session(capture, 3 * once, tmp_path / "recorded")
    assert recorded.repeats >= 3
    recorded_module.settle(recorded.directory)

    viewer = SessionViewer.from_session_dir(recorded.directory)
    answered = [r for r in viewer.records if r.get("role") == "assistant"]
    assert len(answered) == recorded.repeats * plan.llm_calls
    for record in answered:  # every copy's calls: the context counts follow the growing transcripts
        context = viewer.chat_context(record["message_id"])  # raises when a count disagrees with the records
        assert context.message_count == len(context.messages) > 0


def test_a_session_and_a_replay_without_their_recorder_save_nothing(bench, tmp_path, monkeypatch):
    """The recorder-free halves of cpu_us_per_call and instrumentation_vs_sdk_same_data: traced, nothing written."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    instrumentation = importlib.import_module("bench_instrumentation")
    session = bench["bench_session"]
    plan = session.make_script(30, agents=2, runs=1)
    script = session.write_script(plan, tmp_path)
    session.warm_up(tmp_path / "warm")

    unrecorded = session.run_session(script, plan.prompts, tmp_path / "bare", traced=True, recorded=False)
    assert unrecorded.session_dir is None and unrecorded.child_cpu_seconds == 0
    assert unrecorded.llm_calls == plan.llm_calls
    assert not (tmp_path / "bare" / "sessions").exists() and not (tmp_path / "bare" / "billing.jsonl").exists()
    recorded = session.run_session(script, plan.prompts, tmp_path / "saved", traced=True)
    assert recorded.session_dir is not None and (recorded.session_dir / "spans.jsonl").exists()

    capture = instrumentation.capture_session(script, plan.prompts, tmp_path / "capture")
    assert instrumentation.replay_instrumented(capture, tmp_path / "replay-bare", recorded=False) > 0
    assert not (tmp_path / "replay-bare" / "sessions").exists()
    instrumentation.replay_instrumented(capture, tmp_path / "replay-saved")
    assert any((tmp_path / "replay-saved" / "sessions").glob("*/spans.jsonl"))
