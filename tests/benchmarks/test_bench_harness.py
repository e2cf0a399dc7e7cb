"""The benchmark harness must not rot: a quick run produces every named figure, and its parts are right."""

from __future__ import annotations

import importlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def counting_instructions() -> bool:
    """Whether the harness counts instructions here: valgrind installed (.ci/run installs it, and says it must be)."""
    if shutil.which("valgrind") is not None:
        return True
    assert os.environ.get("OTEL_AGENTS_REQUIRE_FIXTURES") != "1", "valgrind is required here: apt-get install valgrind"
    return False


@pytest.fixture(scope="module")
def harness():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module("run")
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One ``--quick`` run in a clean working directory (no timing targets are asserted)."""
    workdir = tmp_path_factory.mktemp("bench")
    out = workdir / "out.json"
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--quick", "--json", str(out)],
        cwd=workdir, capture_output=True, text=True, timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return workdir, json.loads(out.read_text()), done.stdout


def test_quick_run_writes_every_named_figure_as_a_number(quick_run, harness):
    _, document, stdout = quick_run
    figures = document["figures"]
    assert set(harness.TARGETS) <= set(figures)
    for name, value in figures.items():
        assert isinstance(value, (int, float)) and not isinstance(value, bool), name
        if name in harness.NEEDS_VALGRIND and not counting_instructions():
            assert math.isnan(value) and "valgrind" in document["details"][name]["unavailable"], name
            continue
        if name in harness.DIFFERENCES:  # measured, but at these sizes below the noise: any sign
            assert not math.isnan(value), (name, value)
            continue
        assert math.isfinite(value) and value >= 0, (name, value)
    # ...and really a difference: traced minus disabled, pair by pair
    cpu = document["details"]["cpu_us_per_call"]
    assert len(cpu["runs_us"]) == harness.QUICK.overhead_pairs and figures["cpu_us_per_call"] in cpu["runs_us"]
    for name in harness.TARGETS:
        assert name in stdout  # the table names every figure too
    assert document["quick"] is True
    assert document["targets"]["overhead_ratio"] == 1.15
    assert document["machine"]["cpus"] >= 1 and document["machine"]["python"]


def test_quick_run_measures_what_it_says(quick_run, harness):
    _, document, _ = quick_run
    details = document["details"]
    overhead = details["overhead_ratio"]
    assert overhead["llm_calls"] == harness.QUICK.overhead_calls
    assert len(overhead["traced_s"]) == len(overhead["disabled_s"]) == harness.QUICK.overhead_pairs
    # The recorder's CPU is counted where it runs: its own process by default, the run's with inline.
    assert overhead["recorder_cpu_s"] > 0
    assert details["overhead_ratio_inline"]["recorder_cpu_s"] == 0
    bytes_growth = details["bytes_growth"]
    # Every artifact of the recorder is counted, the journal included.
    assert {"events.jsonl", "spans.jsonl", "tree.json.gz", "billing.jsonl"} <= set(bytes_growth["short_bytes"])
    assert sum(bytes_growth["long_bytes"].values()) > 4 * sum(bytes_growth["short_bytes"].values())
    sizes = harness.QUICK.resume_entries
    for label, asked in zip(("1k", "10k", "100k"), sizes):
        assert details[f"resume_s_{label}"]["entries"] >= asked
    assert details["billing_summary_s_1m"]["records"] == harness.QUICK.ledger_records
    assert len(details["ledger_append_s_1m"]["runs"]) == len(details["ledger_append_s_1m"]["one_call_runs"]) >= 1
    assert details["instrumentation_vs_bare"]["turns"] > 0
    floor = details["instrumentation_vs_sdk_same_data"]  # the replay without the recorder, against the SDK's
    assert floor["unrecorded_us_per_turn"] > 0
    assert floor["unrecorded_vs_sdk_same_data"] == pytest.approx(
        floor["unrecorded_us_per_turn"] / floor["sdk_same_data_us_per_turn"])
    replay = details["recorder_replay_us_per_call"]  # the recorder's work on a real session's frames...
    assert replay["messages"] > replay["llm_calls"] > 0 and len(replay["runs_us"]) == harness.QUICK.instrumentation_pairs
    assert replay["same_streams"] is True  # ...writing what the live recorder process wrote
    if counting_instructions():
        counted = details["recorder_replay_instructions_per_call"]  # the same frames, counted by valgrind
        assert counted["instructions_two_replays"] > counted["instructions_one_replay"] > 0
        assert counted["llm_calls"] == replay["llm_calls"]
        assert document["figures"]["recorder_replay_instructions_per_call"] == pytest.approx(
            (counted["instructions_two_replays"] - counted["instructions_one_replay"]) / counted["llm_calls"])
    export = details["otlp_export_replay_us_per_call"]  # a real session's spans, each received by the receiver
    assert export["spans"] > export["llm_calls"] > 0 and len(export["runs_us"]) == harness.QUICK.instrumentation_pairs
    memory = details["rss_mb_1000_agents"]  # the larger session really had its agents, evicted and revived
    assert (memory["agents_small"], memory["agents"]) == harness.QUICK.memory_agents
    assert memory["evicted"] > 0 and memory["revived"] > 0
    assert memory["rss_mb_without_eviction"] > 0 and memory["rss_mb_small"] > 0
    # The resume of the larger session was measured, and its policy left at most the limit live (+ the root).
    assert memory["rss_mb_resume"] > 0 and 0 < memory["resume_live_agents"] <= memory["max_live_agents"] + 1
    assert document["targets"]["rss_mb_1000_agents"] == pytest.approx(
        harness.MEMORY_GROWTH_LIMIT * memory["rss_mb_small"])
    assert document["figures"]["cli_start_imports_litellm"] == 0


def test_quick_run_reports_the_cpu_figures_against_the_peer(quick_run, harness):
    _, document, _ = quick_run
    figures, details, targets = document["figures"], document["details"], document["targets"]
    # Ours from the overhead pairs: every pair, recorder process included.
    assert len(details["cpu_us_per_call"]["runs_us"]) == harness.QUICK.overhead_pairs
    assert details["cpu_us_per_call"]["recorder_cpu_us_per_call"] > 0
    # The same session without its recorder, paired with disabled ones: the instrumentation's own share.
    cpu = details["cpu_us_per_call"]
    assert len(cpu["unrecorded_runs_us"]) == harness.QUICK.overhead_pairs
    assert cpu["unrecorded_cpu_us_per_call"] == pytest.approx(statistics.median(cpu["unrecorded_runs_us"]))
    assert targets["cpu_us_per_call"] == pytest.approx(0.35 * figures["peer_litellm_otel_cpu_us_per_call"])
    peer_us = figures["peer_litellm_otel_cpu_us_per_call"]
    # A --quick peer can measure at or below zero on a loaded machine: the ratio then says infinite.
    assert figures["cpu_vs_peer_litellm_otel"] == (
        pytest.approx(figures["cpu_us_per_call"] / peer_us) if peer_us > 0 else float("inf"))
    # The peer replayed every request of the session, and litellm's callback really recorded spans.
    peer = details["peer_litellm_otel_cpu_us_per_call"]
    assert peer["calls"] == harness.QUICK.overhead_calls
    assert peer["spans_per_call"] >= 1 and peer["attribute_bytes_per_call"] > 1000
    assert peer["total_cpu_us_per_call"] > 0 and peer["bare_litellm_cpu_us_per_call"] > 0
    # The export really reached the loopback receiver in every exporting run.
    export = details["otlp_export_cpu_us_per_call"]
    assert len(export["spans_received_per_run"]) == harness.QUICK.overhead_pairs
    assert all(n >= 3 * harness.QUICK.overhead_calls for n in export["spans_received_per_run"])
    assert targets["otlp_export_cpu_us_per_call"] == 400 and targets["instrumentation_vs_sdk_same_data"] == 1.5


def test_quick_run_leaves_nothing_in_the_working_directory(quick_run):
    workdir, _, _ = quick_run
    assert sorted(p.name for p in workdir.iterdir()) == ["out.json"]


def test_quick_run_measures_central_ingest_against_import(quick_run, harness):
    _, document, stdout = quick_run
    figures, details, targets = document["figures"], document["details"], document["targets"]
    ingest = details["collect_spans_per_s"]
    assert ingest["spans"] >= harness.QUICK.collect_spans and ingest["requests"] >= 2
    assert figures["collect_spans_per_s"] == pytest.approx(ingest["spans"] / ingest["collect_s"])
    ratio = details["collect_vs_import"]
    # Import's whole process against collect's ingest and its SIGTERM (the trees and ledger written).
    assert figures["collect_vs_import"] == pytest.approx(ratio["import_s"] / (ratio["collect_s"] + ratio["collect_stop_s"]))
    assert details["collect_ack_p99_ms"]["p50_ms"] <= figures["collect_ack_p99_ms"]
    assert targets["collect_vs_import"] == 0.8 and ">= 0.8" in stdout


def test_a_ratio_that_should_be_high_is_met_from_above(harness):
    assert harness.met("collect_vs_import", 0.9, 0.8) and not harness.met("collect_vs_import", 0.7, 0.8)
    assert harness.met("bytes_growth", 1.0, 1.1) and not harness.met("bytes_growth", 1.2, 1.1)


def test_only_cpu_reports_the_recording_paths_figures_and_nothing_else(tmp_path, harness):
    out = tmp_path / "out.json"
    # No valgrind on this run's PATH: the quick run above counts instructions already, and a second
    # count costs a minute; here the figure must still be reported, as unavailable.
    (tmp_path / "bin").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--quick", "--only", "cpu", "--json", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**env, "PATH": str(tmp_path / "bin")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(out.read_text())
    figures = document["figures"]
    assert set(figures) == {
        "overhead_ratio", "cpu_us_per_call", "cpu_vs_peer_litellm_otel", "peer_litellm_otel_cpu_us_per_call",
        "otlp_export_cpu_us_per_call", "instrumentation_vs_bare", "instrumentation_vs_sdk_same_data",
        "recorder_replay_us_per_call", "recorder_replay_instructions_per_call", "otlp_export_replay_us_per_call",
    }
    for name, value in figures.items():
        assert isinstance(value, (int, float)) and not isinstance(value, bool), name
        if name in harness.NEEDS_VALGRIND:
            assert math.isnan(value) and "valgrind" in document["details"][name]["unavailable"], name
            continue
        # A difference of two CPU measures may come out negative at these sizes on a busy machine.
        assert (not math.isnan(value)) if name in harness.DIFFERENCES else (math.isfinite(value) and value >= 0), name
