"""Resume of a large saved session: loading plus ``restore_session``, timed and measured in a fresh process.

The session is the synthetic one of ``bench_views.synthetic_session`` (many
agents, task/discuss rounds, truncations) saved as ``events.jsonl`` +
``tree.json.gz``, or any saved session directory (a recorded one has a
``spans.jsonl`` journal, from which the tree is rebuilt on load). The child
process loads it exactly as ``otel-agents resume`` does (``saved_session.py:
load_for_resume``: ``persistence.saved.load_saved`` + ``merge_records``), rebuilds every agent with
``otel_agents.restore.restore_session`` and reports its seconds and peak memory
(``VmHWM``, after the imports and after the resume) as one JSON line.

    python benchmarks/bench_resume.py --child SESSION_DIR
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ResumeFigures:
    seconds: float  # median over the repeats: load + restore
    load_seconds: float
    restore_seconds: float
    peak_mb: float  # the child's peak RSS after the resume (whole process)
    peak_delta_mb: float  # ... minus its peak RSS after the imports
    entries: int  # transcript entries restored (truncations applied)
    agents: int


def _maxrss_mb() -> float:
    """Peak resident memory of this process so far.

    VmHWM, not ``ru_maxrss``: Linux keeps ``ru_maxrss`` across exec, so a child
    started by a large parent would report the parent's size.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def child(session_dir: Path) -> dict:
    """Runs in the child: imports first (not timed), then load and restore."""
    from otel_agents.saved_session import load_for_resume
    from otel_agents.restore import restore_session

    before = _maxrss_mb()
    started = time.perf_counter()
    saved, _tree, _meta, _repair = load_for_resume(session_dir, session_dir.name)
    loaded = time.perf_counter()
    session = restore_session(saved)
    restored = time.perf_counter()
    return {
        "load_s": loaded - started,
        "restore_s": restored - loaded,
        "rss_before_mb": before,
        "rss_peak_mb": _maxrss_mb(),
        "entries": sum(len(agent.transcript) for agent in session.agents.values()),
        "agents": len(session.agents),
    }


def measure(session_dir: Path, repeat: int) -> ResumeFigures:
    """``repeat`` fresh child processes; median times, largest peak."""
    from bench_timing import run_process

    results = []
    for _ in range(repeat):
        _, done = run_process([sys.executable, str(Path(__file__).resolve()), "--child", str(session_dir)])
        results.append(json.loads(done.stdout.decode().strip().splitlines()[-1]))
    totals = [r["load_s"] + r["restore_s"] for r in results]
    worst = max(results, key=lambda r: r["rss_peak_mb"])
    return ResumeFigures(
        seconds=statistics.median(totals),
        load_seconds=statistics.median(r["load_s"] for r in results),
        restore_seconds=statistics.median(r["restore_s"] for r in results),
        peak_mb=worst["rss_peak_mb"],
        peak_delta_mb=worst["rss_peak_mb"] - worst["rss_before_mb"],
        entries=results[0]["entries"],
        agents=results[0]["agents"],
    )


def prompt_resume(session_dir: Path, scratch: Path, repeat: int) -> list[float]:
    """Wall seconds of whole ``otel-agents resume SESSION PROMPT`` processes, each on a fresh copy.

    What a user waits for when continuing a large session: imports, loading, one run of
    the session's own scripted model, and the close, which writes the whole tree.
    """
    from bench_timing import run_process

    seconds = []
    for number in range(repeat):
        home = Path(scratch) / f"prompt-resume-{number}"
        sessions = home / "sessions"
        shutil.copytree(session_dir, sessions / session_dir.name)  # copy2 keeps the times the checkpoint mark holds
        wall, _ = run_process([
            sys.executable, "-m", "otel_agents", "resume", session_dir.name, "One more question.",
            "--sessions-dir", str(sessions), "--billing-file", str(home / "billing.jsonl"),
        ])
        seconds.append(wall)
        shutil.rmtree(home)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=Path, required=True, help="a saved session directory")
    args = parser.parse_args(argv)
    print(json.dumps(child(args.child)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
