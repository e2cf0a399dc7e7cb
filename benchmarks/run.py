"""Run every benchmark, print a table of named figures, and optionally write them as JSON.

    python benchmarks/run.py                  # full sizes (a few minutes on 2 cores)
    python benchmarks/run.py --quick          # tiny sizes: a smoke run (< 1 min); figures are not comparable
    python benchmarks/run.py --only cpu       # the recording path's figures only (overhead, CPU, export, peer, recorder and export replays, the replay's instructions)
    python benchmarks/run.py --json out.json  # also write {"figures": {...}, "targets": ..., "details": ..., "machine": ...}

Comparisons run both sides in this one invocation, alternating, and report the
median of the per-pair ratios (machines here are noisy). docs/performance.md
describes every figure and records the latest results.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench_* modules, whatever the working directory
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map

import bench_agents_memory  # noqa: E402
import bench_billing  # noqa: E402
import bench_cli  # noqa: E402
import bench_collect  # noqa: E402
import bench_cpu  # noqa: E402
import bench_export  # noqa: E402
import bench_instructions  # noqa: E402
import bench_instrumentation  # noqa: E402
import bench_recorded  # noqa: E402
import bench_recorder  # noqa: E402
import bench_resume  # noqa: E402
import bench_session  # noqa: E402
import bench_ui  # noqa: E402
import bench_views  # noqa: E402
from bench_machine import machine  # noqa: E402
from bench_timing import alternate, median_of, run_process  # noqa: E402
from figures import (  # noqa: E402,F401 (TARGETS, DIFFERENCES, NEEDS_VALGRIND: read by the harness test)
    DIFFERENCES, FULL, MEMORY_GROWTH_LIMIT, NEEDS_VALGRIND, QUICK, TARGETS, Results, Sizes, met,
)


# --------------------------------------------------------------------------- scripted sessions


def session_benchmarks(sizes: Sizes, tmp: Path, results: Results, measure: bool = True,
                       cpu_only: bool = False) -> tuple[Path | None, Any]:
    """overhead_ratio, instrumentation_vs_bare, bytes_growth (unless ``measure`` is False).

    ``cpu_only``: the overhead pairs, the CPU figures (cpu_us_per_call, the export, the
    litellm peer) and the instrumentation replay, nothing else: what a change to the
    recording path moves.

    Returns the long recorded session's directory and a capture of a session with many
    agents (the seed of the large saved sessions).
    """
    print("scripted sessions (in-process, the CLI's path; litellm warmed up first)", flush=True)
    bench_session.warm_up(tmp / "warm-up")
    homes = iter(range(1_000_000))

    def home() -> Path:
        return tmp / f"home-{next(homes)}"

    many_capture = None
    if not cpu_only:
        many = bench_session.make_script(sizes.overhead_calls, agents=sizes.capture_agents)
        many_capture = bench_instrumentation.capture_session(bench_session.write_script(many, tmp / "many"),
                                                             many.prompts, home())
    if not measure:
        return None, many_capture

    plan = bench_session.make_script(sizes.overhead_calls)
    script = bench_session.write_script(plan, tmp)

    def side(traced: bool, runs: list) -> Callable[[], float]:
        def run() -> float:
            done = bench_session.run_session(script, plan.prompts, home(), traced=traced)
            if done.llm_calls != plan.llm_calls:
                raise AssertionError(f"the session made {done.llm_calls} LLM calls, not {plan.llm_calls}")
            runs.append(done)
            return done.seconds
        return run

    def overhead(name: str) -> tuple[list, list]:
        traced: list = []
        disabled: list = []
        comparison = alternate(side(True, traced), side(False, disabled), sizes.overhead_pairs)
        # CPU seconds beside wall time: what the run's process pays, and what the machine pays
        # (the recorder process included): each pair's ratio, then their median.
        results.add(
            name, comparison.ratio, llm_calls=plan.llm_calls, pairs=sizes.overhead_pairs,
            traced_s=comparison.a, disabled_s=comparison.b, ratios=comparison.ratios,
            traced_ms_per_call=comparison.median_a / plan.llm_calls * 1000,
            disabled_ms_per_call=comparison.median_b / plan.llm_calls * 1000,
            run_cpu_ratio=statistics.median(t.cpu_seconds / d.cpu_seconds for t, d in zip(traced, disabled)),
            total_cpu_ratio=statistics.median(
                (t.cpu_seconds + t.child_cpu_seconds) / (d.cpu_seconds + d.child_cpu_seconds)
                for t, d in zip(traced, disabled)
            ),
            recorder_cpu_s=statistics.median(t.child_cpu_seconds for t in traced),
        )
        return traced, disabled

    traced, disabled = overhead("overhead_ratio")
    if not cpu_only:
        # The same with the recorder in the run's process (OTEL_AGENTS_RECORDER=inline, the only mode off Linux).
        with bench_session.recorder_mode("inline"):
            overhead("overhead_ratio_inline")
    bench_cpu.cpu_figures(plan, script, traced, disabled, home, results.add,
                          export_pairs=sizes.overhead_pairs, peer_pairs=sizes.instrumentation_pairs)

    capture = bench_instrumentation.capture_session(script, plan.prompts, home())
    turns = bench_instrumentation.turns_of(capture)
    instrumented = alternate(
        lambda: bench_instrumentation.replay_instrumented(capture, home()),
        lambda: bench_instrumentation.replay_bare(capture),
        sizes.instrumentation_pairs,
    )
    same_data = median_of(lambda: bench_instrumentation.replay_bare(capture, same_data=True), sizes.instrumentation_pairs)
    unrecorded = median_of(lambda: bench_instrumentation.replay_instrumented(capture, home(), recorded=False),
                           sizes.instrumentation_pairs)
    results.add(  # the target before instrumentation_vs_sdk_same_data: kept as a detail
        "instrumentation_vs_bare", instrumented.ratio, turns=turns, spans=bench_instrumentation.spans_of(capture),
        calls=len(capture.actions), pairs=sizes.instrumentation_pairs,
        instrumented_us_per_turn=instrumented.median_a / turns * 1e6,
        bare_us_per_turn=instrumented.median_b / turns * 1e6,
        sdk_same_data_us_per_turn=same_data / turns * 1e6,
        sdk_same_data_vs_bare=same_data / instrumented.median_b,
    )
    # The floor restated: the same spans with every attribute and event, on the bare provider.
    # The part of it that is not persistence: the same replay without the recorder.
    results.add("instrumentation_vs_sdk_same_data", instrumented.median_a / same_data,
                instrumented_us_per_turn=instrumented.median_a / turns * 1e6,
                sdk_same_data_us_per_turn=same_data / turns * 1e6,
                unrecorded_us_per_turn=unrecorded / turns * 1e6,
                unrecorded_vs_sdk_same_data=unrecorded / same_data)
    frames = bench_recorder.replay_figure(script, plan.prompts, home, results.add, replays=sizes.instrumentation_pairs)
    bench_instructions.instructions_figure(frames, home, results.add)
    bench_export.replay_figure(script, plan.prompts, home, results.add, replays=sizes.instrumentation_pairs)
    if cpu_only:
        return None, None

    sizes_by_length = {}
    directories = {}
    for calls in (sizes.bytes_short_calls, 8 * sizes.bytes_short_calls):
        length_plan = bench_session.make_script(calls)
        path = bench_session.write_script(length_plan, tmp)
        where = home()
        done = bench_session.run_session(path, length_plan.prompts, where, traced=True)
        assert done.session_dir is not None
        sizes_by_length[calls] = bench_session.persisted_bytes(done.session_dir, where / "billing.jsonl")
        directories[calls] = done.session_dir
    short, long = (sizes_by_length[c] for c in sorted(sizes_by_length))
    growth = sum(long.values()) / (8 * sum(short.values()))
    results.add("bytes_growth", growth, short_calls=sizes.bytes_short_calls, short_bytes=short, long_bytes=long,
                per_file_growth={k: long[k] / (8 * short[k]) for k in short if short[k]})
    return directories[8 * sizes.bytes_short_calls], many_capture


# --------------------------------------------------------------------------- large saved sessions


def _view_figures(directory: Path, sizes: Sizes) -> dict[str, tuple[float, list[float], int, str]]:
    """Cold ``otel-agents view`` processes: dialog of the two busiest sub-agents, perspective of the root,
    causality chain of the last message heard. view -> (median s, runs, stdout bytes, command)."""
    from otel_agents.views import SessionViewer

    viewer = SessionViewer.from_session_dir(directory)
    agents = viewer.list_agents()
    busiest = sorted(agents[1:], key=lambda a: -a.entries)[:2]
    last_heard = next(r for r in reversed(viewer.records) if r.get("substance"))
    commands = bench_cli.view_commands(directory, [a.agent_id for a in busiest], agents[0].agent_id,
                                       last_heard["message_id"])
    return _cold_figures(commands, sizes)


def _cold_figures(commands: dict[str, list[str]], sizes: Sizes) -> dict[str, tuple[float, list[float], int, str]]:
    """Each command in ``sizes.process_repeat`` new processes: name -> (median s, runs, stdout bytes, command)."""
    out = {}
    for name, command in commands.items():
        seconds, stdout = bench_cli.timed_command(command, sizes.process_repeat)
        if not stdout.strip():
            raise AssertionError(f"{' '.join(command)} printed nothing")
        out[name] = (statistics.median(seconds), seconds, len(stdout), " ".join(command[1:]))
    return out


def _tree_figures(directory: Path, sizes: Sizes, tmp: Path) -> dict[str, tuple[float, list[float], int, str]]:
    """Cold processes that need spans, not only records: ``view context`` of the last LLM call
    (its span looked up in the journal) and ``sessions show`` (the whole tree rendered)."""
    from otel_agents.views import SessionViewer

    viewer = SessionViewer.from_session_dir(directory)
    answered = next(r for r in reversed(viewer.records) if r.get("role") == "assistant")
    commands = bench_cli.tree_commands(directory, answered["message_id"], tmp / "scratch-billing.jsonl")
    return {f"{name}_s_100k": figure for name, figure in _cold_figures(commands, sizes).items()}


def saved_session_benchmarks(sizes: Sizes, tmp: Path, capture: Any, results: Results) -> None:
    """Resume (1k, 10k, 100k entries), its peak memory, and the views, on sessions in the recorder's format.

    For comparison, the same on ``bench_views.synthetic_session`` saved without a journal
    (events.jsonl + tree.json.gz only: the path of a session whose journal is gone).
    """
    print("large saved sessions (the recorder's format: a recorded session's runs repeated)", flush=True)
    largest = None
    for entries, label in zip(sizes.resume_entries, ("1k", "10k", "100k")):
        recorded = bench_recorded.write_recorded_session(capture, entries, tmp / f"recorded-{label}")
        bench_recorded.settle(recorded.directory)
        figures = bench_resume.measure(recorded.directory, sizes.resume_repeat)
        results.add(f"resume_s_{label}", figures.seconds, records=recorded.records, spans=recorded.spans,
                    runs=recorded.runs, asked_entries=entries,
                    **{k: v for k, v in asdict(figures).items() if k != "seconds"})
        largest = (recorded, figures)
    recorded, figures = largest
    results.add("resume_peak_mb_100k", figures.peak_mb, entries=figures.entries,
                delta_after_imports_mb=figures.peak_delta_mb)
    prompt_runs = bench_resume.prompt_resume(recorded.directory, tmp, sizes.resume_repeat)
    results.add("resume_prompt_s_100k", statistics.median(prompt_runs), runs=prompt_runs, entries=recorded.entries,
                note="a whole `otel-agents resume SESSION PROMPT` process: load, one scripted run, the tree written at close")
    worst = 0.0
    for view, (value, runs, out_bytes, command) in _view_figures(recorded.directory, sizes).items():
        worst = max(worst, value)
        results.add(f"view_{view}_s_100k", value, entries=recorded.entries, runs=runs, stdout_bytes=out_bytes,
                    command=command)
    results.add("view_s_100k", worst, entries=recorded.entries, note="slowest of dialog, perspective, causality")
    for name, (value, runs, out_bytes, command) in _tree_figures(recorded.directory, sizes, tmp).items():
        results.add(name, value, entries=recorded.entries, runs=runs, stdout_bytes=out_bytes, command=command)

    print("  ... the same on bench_views.synthetic_session (no journal: events.jsonl + tree.json.gz)", flush=True)
    synthetic = bench_views.synthetic_session(sizes.resume_entries[-1])
    directory = bench_views.write_session_dir(synthetic, tmp / "synthetic")
    figures = bench_resume.measure(directory, sizes.resume_repeat)
    results.add("resume_s_100k_no_journal", figures.seconds, records=len(synthetic.records),
                **{k: v for k, v in asdict(figures).items() if k != "seconds"})
    views = _view_figures(directory, sizes)
    in_process = bench_views.view_timings(synthetic, directory, repeat=1)
    results.add("view_s_100k_synthetic", max(v[0] for v in views.values()), entries=synthetic.entries,
                views={k: v[0] for k, v in views.items()},
                in_process_cpu_s={name: cpu for name, _, cpu, _ in in_process})


# --------------------------------------------------------------------------- many agents in memory


def memory_benchmark(sizes: Sizes, tmp: Path, results: Results) -> None:
    """rss_mb_1000_agents: peak RSS of the run's process with eviction, bounded by the same session with a
    quarter of the agents (target: at most MEMORY_GROWTH_LIMIT x its peak); without eviction as details."""
    print("many agents (peak RSS of the run's process; eviction keeps 50 agents live)", flush=True)
    small, large = sizes.memory_agents
    scratch = tmp / "many-agents"
    live = bench_agents_memory.MAX_LIVE_AGENTS
    evicting = {n: bench_agents_memory.measure(n, scratch, live) for n in (small, large)}
    keeping = {n: bench_agents_memory.measure(n, scratch, None) for n in (small, large)}
    # Resuming the larger session with the same policy: its peak is set by loading every saved record
    # (all of events.jsonl), before any agent is rebuilt, so the policy does not bound it (yet).
    resumed = bench_agents_memory.measure_resume(large, scratch, live)
    if evicting[large].evicted == 0 or evicting[large].revived == 0 or keeping[large].evicted:
        raise AssertionError(f"the evicting session evicted {evicting[large].evicted} and revived "
                             f"{evicting[large].revived} agents of {large}")
    results.add(
        "rss_mb_1000_agents", evicting[large].peak_mb, target=MEMORY_GROWTH_LIMIT * evicting[small].peak_mb,
        agents=large, max_live_agents=live, evicted=evicting[large].evicted, revived=evicting[large].revived,
        seconds=evicting[large].seconds, delta_after_imports_mb=evicting[large].peak_delta_mb,
        agents_small=small, rss_mb_small=evicting[small].peak_mb,
        rss_mb_without_eviction=keeping[large].peak_mb, rss_mb_small_without_eviction=keeping[small].peak_mb,
        seconds_without_eviction=keeping[large].seconds,
        rss_mb_resume=resumed["rss_peak_mb"], resume_seconds=resumed["seconds"], resume_live_agents=resumed["live"],
        growth_with_eviction=evicting[large].peak_mb / evicting[small].peak_mb,
        growth_without_eviction=keeping[large].peak_mb / keeping[small].peak_mb,
    )


# --------------------------------------------------------------------------- billing and start-up


def billing_benchmark(sizes: Sizes, tmp: Path, results: Results) -> None:
    print("billing ledger", flush=True)
    ledger = bench_billing.write_ledger(tmp / "billing.jsonl", sizes.ledger_records)
    env = {"OTEL_AGENTS_HOME": str(tmp / "billing-home")}
    _, done = run_process(bench_billing.summary_command(ledger, as_json=True), env=env)
    bench_billing.check_summary(ledger, done.stdout)
    seconds, _ = bench_cli.timed_command(bench_billing.summary_command(ledger), sizes.process_repeat, env=env)
    results.add("billing_summary_s_1m", statistics.median(seconds), records=ledger.records,
                ledger_mb=ledger.bytes / 1e6, runs=seconds)
    # After the summaries: these append to the ledger (100 records a run, alternately each way).
    cold, warm = bench_billing.run_end_appends(ledger, sizes.process_repeat)
    results.add("ledger_append_s_1m", statistics.median(warm), records=ledger.records, runs=warm,
                one_call_s=statistics.median(cold), one_call_runs=cold)


def listing_home(recorded: Path | None, sessions_dir: Path, count: int = 200) -> Path:
    """``count`` saved sessions to list: the recorded session's meta.json under as many ids."""
    import orjson

    meta = orjson.loads((recorded / "meta.json").read_bytes()) if recorded is not None else None
    for number in range(count):
        session_id = f"20260101-{number // 60:02d}{number % 60:02d}00-{number:06x}"
        directory = sessions_dir / session_id
        directory.mkdir(parents=True, exist_ok=True)
        if meta is not None:
            (directory / "meta.json").write_bytes(orjson.dumps({**meta, "id": session_id}))
    return sessions_dir


def cli_benchmark(sizes: Sizes, sessions_dir: Path, results: Results) -> None:
    print("command start-up", flush=True)
    command = bench_cli.sessions_list_command(sessions_dir)
    run_process(command)  # the first run may read files from disk; "cold" means a new process
    seconds, out = bench_cli.timed_command(command, max(3, 2 * sizes.process_repeat))
    sessions = max(0, len(out.decode().splitlines()) - 1)
    results.add("cli_start_s", statistics.median(seconds), sessions_listed=sessions, runs=seconds)
    imported = bench_cli.imports_litellm(["sessions", "list", "--sessions-dir", str(sessions_dir)])
    results.add("cli_start_imports_litellm", int(imported))


def ui_benchmark(sizes: Sizes, tmp: Path, results: Results) -> None:
    print("web UI (Debian's chromium through Playwright, a real `otel-agents ui` process)", flush=True)
    screen = bench_ui.first_screen(sizes.ui_entries, tmp, sizes.ui_repeat)
    results.add("ui_first_screen_s_100k", statistics.median(screen.seconds), runs=screen.seconds,
                after_html_s=screen.after_html_s, cold_server_s=screen.cold_server_s, nodes=screen.nodes,
                entries=sizes.ui_entries,
                note="navigation to the tree's first rows, each in a new browser context; cold_server_s: "
                     "the first navigation after the server started, its first read of the session included")
    lag = bench_ui.live_lag(tmp, sizes.ui_live_runs)
    results.add("ui_live_lag_s", max(lag.lags_s), median_s=statistics.median(lag.lags_s), lags_s=lag.lags_s,
                runs=lag.runs, note="the slowest node: its span's end to its row showing it ended, on the open page")


# --------------------------------------------------------------------------- machine and main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the harness, not the targets")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON here")
    skip = parser.add_argument("--skip", action="append", default=[],
                               choices=["sessions", "saved", "memory", "billing", "cli", "collect", "ui"],
                               help="leave out a group of benchmarks (repeatable)")
    parser.add_argument("--only", choices=["cpu"],
                        help="cpu: only overhead_ratio, the CPU figures (cpu_us_per_call, the export, the peer), "
                             "instrumentation_vs_sdk_same_data, the recorder and export replays and the recorder "
                             "replay's instructions (valgrind)")
    args = parser.parse_args(argv)
    if args.only == "cpu":
        args.skip = [group for group in skip.choices if group != "sessions"]  # every other group, new ones too
    sizes = QUICK if args.quick else FULL
    results = Results()
    started = time.perf_counter()
    print(f"otel-agents benchmarks ({'quick' if args.quick else 'full'} sizes)")
    with tempfile.TemporaryDirectory(prefix="otel-agents-bench-") as name:
        tmp = Path(name)
        # Nothing may reach a real home, whatever a benchmark forgets to pass.
        os.environ["OTEL_AGENTS_HOME"] = str(tmp / "home")
        for variable in [v for v in os.environ if v.startswith("OTEL_EXPORTER_OTLP") or v == "OTEL_TRACES_EXPORTER"]:
            del os.environ[variable]
        recorded = capture = None
        if "sessions" not in args.skip or "saved" not in args.skip:
            recorded, capture = session_benchmarks(sizes, tmp, results, measure="sessions" not in args.skip,
                                                   cpu_only=args.only == "cpu")
        if "saved" not in args.skip:
            saved_session_benchmarks(sizes, tmp, capture, results)
        if "memory" not in args.skip:
            memory_benchmark(sizes, tmp, results)
        if "billing" not in args.skip:
            billing_benchmark(sizes, tmp, results)
        if "cli" not in args.skip:
            cli_benchmark(sizes, listing_home(recorded, tmp / "listing" / "sessions"), results)
        if "collect" not in args.skip:
            print("central ingest (otel-agents collect over HTTP/protobuf on one core, against import)", flush=True)
            bench_collect.report(sizes.collect_spans, tmp / "collect", results.add)
        if "ui" not in args.skip:
            ui_benchmark(sizes, tmp, results)
    elapsed = time.perf_counter() - started
    missed = [n for n, v in results.figures.items() if n in results.targets and not met(n, v, results.targets[n])]
    print(f"done in {elapsed:.0f} s; " + (f"missed: {', '.join(missed)}" if missed else "every target met"))
    if args.json is not None:
        document = {
            "quick": args.quick,
            "sizes": asdict(sizes),
            "figures": results.figures,
            "targets": results.targets,
            "missed": missed,
            "details": results.details,
            "machine": machine(),
            "seconds": elapsed,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
