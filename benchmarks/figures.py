"""The harness's figures: the sizes each run uses, every figure's target, and the results table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sizes:
    overhead_calls: int  # LLM calls of the scripted session
    overhead_pairs: int
    instrumentation_pairs: int
    bytes_short_calls: int  # the long session has 8x as many
    resume_entries: tuple[int, int, int]  # named 1k, 10k, 100k
    capture_agents: int  # sub-agents of the session the large saved sessions repeat
    resume_repeat: int
    ledger_records: int  # named 1m
    process_repeat: int  # cold processes per command figure
    collect_spans: int  # sent to `otel-agents collect` and imported from a file
    memory_agents: tuple[int, int] = (250, 1_000)  # sub-agents of the many-agents session, named 1000 by the larger
    ui_entries: int = 100_000  # the synthetic session the UI's first screen shows (named 100k)
    ui_repeat: int = 5  # navigations to it, after the server's first read
    ui_live_runs: int = 8  # runs of the scripted session the live page follows


FULL = Sizes(500, 9, 7, 200, (1_000, 10_000, 100_000), 20, 3, 1_000_000, 5, 20_000)
QUICK = Sizes(40, 1, 1, 30, (300, 1_000, 3_000), 4, 1, 20_000, 1, 1_000,
              memory_agents=(40, 160), ui_entries=3_000, ui_repeat=1, ui_live_runs=4)
# The bound stated for eviction: 4x the agents may cost at most this much more peak memory.
MEMORY_GROWTH_LIMIT = 1.10

# name -> (target, unit); a figure passes when it is at most its target (at least, for those in AT_LEAST).
TARGETS: dict[str, tuple[float | None, str]] = {
    "overhead_ratio": (1.15, "x"),
    "overhead_ratio_inline": (None, "x"),
    "cpu_us_per_call": (None, "us"),  # its target is 0.35 x the peer's, set when both are measured
    "cpu_vs_peer_litellm_otel": (0.35, "x"),
    "peer_litellm_otel_cpu_us_per_call": (None, "us"),
    "otlp_export_cpu_us_per_call": (400, "us"),
    "instrumentation_vs_sdk_same_data": (1.5, "x"),
    "instrumentation_vs_bare": (None, "x"),
    "recorder_replay_us_per_call": (None, "us"),  # resolves the recorder process's share of cpu_us_per_call
    "recorder_replay_instructions_per_call": (None, "instr"),  # the same replay counted exactly (valgrind)
    "otlp_export_replay_us_per_call": (None, "us"),  # resolves what otlp_export_cpu_us_per_call measures
    "bytes_growth": (1.1, "x"),
    "resume_s_1k": (None, "s"),
    "resume_s_10k": (None, "s"),
    "resume_s_100k": (2.0, "s"),
    "resume_peak_mb_100k": (None, "MB"),
    "resume_prompt_s_100k": (None, "s"),
    "resume_s_100k_no_journal": (None, "s"),
    "view_dialog_s_100k": (1.0, "s"),
    "view_perspective_s_100k": (1.0, "s"),
    "view_causality_s_100k": (1.0, "s"),
    "view_s_100k": (1.0, "s"),
    "view_s_100k_synthetic": (None, "s"),
    "view_context_s_100k": (None, "s"),
    "sessions_show_s_100k": (None, "s"),
    "billing_summary_s_1m": (5.0, "s"),
    "ledger_append_s_1m": (None, "s"),
    "rss_mb_1000_agents": (None, "MB"),  # its target is 1.10 x the peak with a quarter of the agents, set when measured
    "cli_start_s": (0.35, "s"),
    "cli_start_imports_litellm": (0, "bool"),
    "ui_first_screen_s_100k": (1.0, "s"),
    "ui_live_lag_s": (0.5, "s"),
    "collect_spans_per_s": (None, "/s"),
    "collect_vs_import": (0.8, "x"),
    "collect_ack_p99_ms": (None, "ms"),
}
AT_LEAST = {"collect_vs_import"}  # higher is better: central ingest at least 0.8 x import's pace
# Differences of two CPU measures of the same machine (and a ratio of two): below the noise, as at
# --quick sizes on a loaded machine, they may come out negative (a ratio over a negative, infinite).
DIFFERENCES = {"cpu_us_per_call", "peer_litellm_otel_cpu_us_per_call", "otlp_export_cpu_us_per_call",
               "cpu_vs_peer_litellm_otel"}
# Figures that need a tool the machine may lack (NaN, with an ``unavailable`` detail saying which).
NEEDS_VALGRIND = {"recorder_replay_instructions_per_call"}


def met(name: str, value: float, target: float) -> bool:
    return value >= target if name in AT_LEAST else value <= target


class Results:
    def __init__(self) -> None:
        self.figures: dict[str, float] = {}
        self.details: dict[str, dict[str, Any]] = {}
        self.targets: dict[str, float] = {n: t for n, (t, _) in TARGETS.items() if t is not None}

    def add(self, name: str, value: float, target: float | None = None, **details: Any) -> None:
        """``target``: for a figure whose target depends on another measured one."""
        self.figures[name] = float(value)
        if details:
            self.details[name] = details
        if target is not None:
            self.targets[name] = target
        unit = TARGETS.get(name, (None, ""))[1]
        target = self.targets.get(name)
        verdict = "" if target is None else ("ok" if met(name, value, target) else "MISSED")
        target_text = "" if target is None else f"{'>=' if name in AT_LEAST else '<='} {target:g}"
        print(f"  {name:<28} {value:>12.4g} {unit:<4} {target_text:<10} {verdict}", flush=True)
