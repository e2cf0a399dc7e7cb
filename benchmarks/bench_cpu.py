"""CPU per LLM call: ours (all our processes), what an OTLP/HTTP export adds, and litellm's own OpenTelemetry callback.

Every figure is CPU time, not wall time: the run's process (all threads) plus the
processes it waited for (the recorder process). docs/performance.md describes each.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Callable

import bench_export
import bench_peer
import bench_session
from bench_timing import alternate


def _total_cpu(run: Any) -> float:
    return run.cpu_seconds + run.child_cpu_seconds


def cpu_figures(plan: Any, script: Path, traced: list, disabled: list, home: Callable[[], Path],
                add: Callable[..., None], *, export_pairs: int, peer_pairs: int) -> None:
    """cpu_us_per_call (from the overhead pairs ``traced``/``disabled``; its details say what the same
    session costs without its recorder), otlp_export_cpu_us_per_call, the litellm peer and the ratio
    to it, each given to ``add(name, value, target=None, **details)``."""
    per_call = [(_total_cpu(t) - _total_cpu(d)) / plan.llm_calls * 1e6 for t, d in zip(traced, disabled)]
    ours = statistics.median(per_call)

    # The same traced session without its recorder (nothing saved), against the disabled one: the
    # spans, records and console alone, the part of cpu_us_per_call that is not persistence.
    unrecorded: list = []
    floor: list = []

    def session(runs: list, *, traced: bool, recorded: bool) -> Callable[[], float]:
        def run() -> float:
            done = bench_session.run_session(script, plan.prompts, home(), traced=traced, recorded=recorded)
            runs.append(done)
            return done.seconds
        return run

    alternate(session(unrecorded, traced=True, recorded=False), session(floor, traced=False, recorded=False),
              export_pairs)
    if any(run.session_dir is not None or run.child_cpu_seconds for run in unrecorded):
        raise AssertionError("a session run without its recorder saved something or had a recorder process")
    unrecorded_per_call = [(_total_cpu(u) - _total_cpu(d)) / plan.llm_calls * 1e6 for u, d in zip(unrecorded, floor)]

    # The same traced session with and without an OTLP/HTTP exporter to a loopback receiver (its own process).
    with bench_export.receiver() as receiver:
        plain: list = []
        exported: list = []
        received: list[int] = []

        def side(export: bool, runs: list) -> Callable[[], float]:
            def run() -> float:
                before = receiver.spans_received() if export else 0
                if export:
                    with bench_export.exporting(receiver.url):
                        done = bench_session.run_session(script, plan.prompts, home(), traced=True)
                    received.append(receiver.spans_received() - before)
                else:
                    done = bench_session.run_session(script, plan.prompts, home(), traced=True)
                runs.append(done)
                return done.seconds
            return run

        alternate(side(True, exported), side(False, plain), export_pairs)
    if not all(received):
        raise AssertionError(f"the loopback receiver got no spans in some runs: {received}")
    export_per_call = [(_total_cpu(e) - _total_cpu(p)) / plan.llm_calls * 1e6 for e, p in zip(exported, plain)]
    add("otlp_export_cpu_us_per_call", statistics.median(export_per_call), runs_us=export_per_call,
                pairs=export_pairs, spans_received_per_run=received, llm_calls=plan.llm_calls,
                exporting_process_cpu_s=[e.cpu_seconds for e in exported], plain_process_cpu_s=[p.cpu_seconds for p in plain])

    # The peer: the same litellm requests replayed with litellm's own OpenTelemetry callback, and without.
    requests = bench_peer.capture_requests(script, plan.prompts, home())
    with_callback: list = []
    without: list = []

    def replay(callback: bool, runs: list) -> Callable[[], float]:
        def run() -> float:
            done = bench_peer.replay(requests, callback=callback)
            runs.append(done)
            return done.cpu_seconds
        return run

    alternate(replay(True, with_callback), replay(False, without), peer_pairs)
    peer_per_call = [(w.cpu_seconds - b.cpu_seconds) / w.calls * 1e6 for w, b in zip(with_callback, without)]
    peer = statistics.median(peer_per_call)
    add("peer_litellm_otel_cpu_us_per_call", peer, runs_us=peer_per_call, calls=len(requests),
                pairs=peer_pairs,
                total_cpu_us_per_call=statistics.median(w.cpu_seconds / w.calls * 1e6 for w in with_callback),
                bare_litellm_cpu_us_per_call=statistics.median(b.cpu_seconds / b.calls * 1e6 for b in without),
                spans_per_call=with_callback[0].spans / len(requests),
                attribute_bytes_per_call=with_callback[0].span_bytes / len(requests))
    add("cpu_us_per_call", ours, target=0.35 * peer, runs_us=per_call, llm_calls=plan.llm_calls,
                recorder_cpu_us_per_call=statistics.median(t.child_cpu_seconds for t in traced) / plan.llm_calls * 1e6,
                unrecorded_cpu_us_per_call=statistics.median(unrecorded_per_call), unrecorded_runs_us=unrecorded_per_call,
                unrecorded_vs_peer=statistics.median(unrecorded_per_call) / peer if peer > 0 else float("inf"),
                note="traced session (process + recorder process) minus disabled session, total CPU, per LLM call")
    add("cpu_vs_peer_litellm_otel", ours / peer if peer > 0 else float("inf"))
