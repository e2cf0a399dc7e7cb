"""Soak: a long scripted session with many sub-agents, through the CLI; nothing lost, memory linear.

By default the session makes about 600 LLM calls (and as many tool calls) so
the suite stays fast; ``OTEL_AGENTS_SOAK=1`` makes it 10,000 (minutes). Either
way ``sessions verify`` and ``billing rebuild`` must find nothing to change,
and the live tree's memory must grow linearly with the number of calls.
"""

from __future__ import annotations

import os
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

from reliability_helpers import ScriptBuilder, invoke, ledger, llm_ops, load_tree, session_id_of, verify, walk_ops

SOAK = os.environ.get("OTEL_AGENTS_SOAK") == "1"


@dataclass(frozen=True)
class Shape:
    """``runs`` prompts; in each, main makes ``main_turns`` turns of ``leads`` task calls; each lead
    delegates to ``workers`` workers (one call each) and then answers."""

    runs: int
    main_turns: int
    leads: int
    workers: int

    @property
    def llm_calls(self) -> int:
        per_lead = 2 + self.workers  # the lead's two turns, one call per worker
        return self.runs * (self.main_turns + 1 + self.main_turns * self.leads * per_lead)

    @property
    def sub_agents(self) -> int:
        return self.runs * self.main_turns * self.leads * (1 + self.workers)

    @property
    def tool_calls(self) -> int:
        return self.sub_agents  # one task call creates (and runs) each sub-agent

    def script(self, path: Path, name: str) -> Path:
        main, agents = [], {}
        for run in range(1, self.runs + 1):
            for turn in range(1, self.main_turns + 1):
                calls = []
                for lead_no in range(1, self.leads + 1):
                    lead = f"Lead{run}x{turn}x{lead_no}"
                    calls.append(_task(lead, "You lead a team.", "Get it done."))
                    agents[lead] = [
                        {"tool_calls": [_task(f"Worker{w}", "You work.", f"Part {w}, please.")
                                        for w in range(1, self.workers + 1)]},
                        f"{lead}: all {self.workers} parts done.",
                    ]
                main.append({"tool_calls": calls})
            main.append(f"run {run} done")
        agents["main"] = main  # workers have no turns: each answers once with the fallback
        prompts = [f"part {run}" for run in range(1, self.runs + 1)]
        return ScriptBuilder(name, agents, prompts).write(path)


def _task(name: str, system_prompt: str, user_prompt: str) -> dict:
    return {"name": "task", "arguments": {"name": name, "system_prompt": system_prompt, "user_prompt": user_prompt}}


SOAK_SHAPE = Shape(runs=4, main_turns=5, leads=10, workers=48) if SOAK else Shape(runs=2, main_turns=2, leads=3, workers=48)


def run_script(shape: Shape, tmp_path: Path, name: str) -> tuple[str, float]:
    path = shape.script(tmp_path / f"{name}.json", name)
    started = time.perf_counter()
    result = invoke(["run", "--script", str(path), "--max-turns", str(shape.main_turns + 2)])
    elapsed = time.perf_counter() - started
    assert result.exit_code == 0, result.output[-2000:]
    assert result.stdout.splitlines() == [f"run {r} done" for r in range(1, shape.runs + 1)]
    assert "warning" not in result.stderr, result.stderr[-2000:]
    return session_id_of(result.stderr), elapsed


def test_a_long_session_verifies_and_rebuilds_the_ledger_unchanged(rel_home, tmp_path):
    shape = SOAK_SHAPE
    assert shape.llm_calls >= (10_000 if SOAK else 600)
    session_id, elapsed = run_script(shape, tmp_path, "soak")
    print(f"\nsoak: {shape.llm_calls} LLM calls, {shape.tool_calls} tool calls, {shape.sub_agents} sub-agents "
          f"in {elapsed:.1f} s ({1000 * elapsed / shape.llm_calls:.1f} ms per call)")

    # Every call is in the tree, once, and succeeded; every sub-agent is an agent of the session.
    tree = load_tree(rel_home, session_id)
    assert len(tree["runs"]) == shape.runs
    ops = llm_ops(tree)
    assert len(ops) == shape.llm_calls and all(op["status"] == "ok" for op in ops)
    assert len({op["span_id"] for op in ops}) == shape.llm_calls
    assert sum(1 for op in walk_ops(tree) if op["kind"] == "tool") == shape.tool_calls
    assert len(tree["agents"]) == 1 + shape.sub_agents
    inclusive = tree["totals"]["inclusive"]
    assert inclusive["llm_calls"] == shape.llm_calls and inclusive["tool_calls"] == shape.tool_calls
    assert inclusive["unpriced_calls"] == 0 and inclusive["cost_usd"] > 0

    # The ledger holds each of them once.
    billing = rel_home / "billing.jsonl"
    records = ledger(billing, session_id)
    assert len(records) == shape.llm_calls + shape.tool_calls
    assert len({r["record_id"] for r in records}) == len(records)
    assert sorted(r["span_id"] for r in records if r["type"] == "llm") == sorted(op["span_id"] for op in ops)

    checked = verify(session_id)
    assert checked.exit_code == 0, checked.output
    assert f"ledger ({len(records)} records) agree" in checked.stdout
    before = billing.read_bytes()
    rebuilt = invoke(["billing", "rebuild"])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert f"{len(records)} records derived; 0 added, 0 changed, 0 removed, 0 duplicate" in rebuilt.stdout
    assert "the ledger already matches the saved sessions" in rebuilt.stdout
    assert billing.read_bytes() == before


def test_memory_of_a_live_session_grows_linearly(rel_home, tmp_path):
    """tracemalloc peak over a whole CLI run at about 0, N and 4N calls.

    The growth from N to 4N must be about 3 times the growth from ~0 to N (linear);
    quadratic growth would make it about 15 times. The ratio of the peaks themselves
    (at most 5) is checked too, though fixed costs keep it well below 4.
    """
    tiny = Shape(runs=1, main_turns=1, leads=1, workers=1)
    small = Shape(runs=1, main_turns=1, leads=3, workers=10)
    large = Shape(runs=1, main_turns=4, leads=3, workers=10)
    assert 3.8 < large.llm_calls / small.llm_calls < 4.2
    run_script(tiny, tmp_path, "warm-up")  # imports and one-time caches outside the measurement

    peaks = []
    # The tiny run is measured first and last: a one-time allocation of the process (seen once in a
    # full suite: 4 MB against 0.2 MB) that lands in one of them must not pass for the base.
    for shape, name in ((tiny, "mem-tiny"), (small, "mem-small"), (large, "mem-large"), (tiny, "mem-tiny-again")):
        tracemalloc.start()
        try:
            run_script(shape, tmp_path, name)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    base, at_n, at_4n = min(peaks[0], peaks[3]), peaks[1], peaks[2]
    growth = (at_4n - at_n) / (at_n - base)
    print(f"\nmemory: peak {base / 1e6:.1f} MB at {tiny.llm_calls} calls, {at_n / 1e6:.1f} MB at {small.llm_calls}, "
          f"{at_4n / 1e6:.1f} MB at {large.llm_calls} (x{at_4n / at_n:.2f}; growth N->4N = {growth:.2f} x growth 0->N)")
    assert at_n > base
    assert at_4n / at_n <= 5.0, "memory grew more than 5x for 4x the calls"
    expected = (large.llm_calls - small.llm_calls) / (small.llm_calls - tiny.llm_calls)  # ~3.3 when linear
    assert growth <= 1.6 * expected, f"memory growth x{growth:.2f} (linear: x{expected:.2f}): worse than linear"
