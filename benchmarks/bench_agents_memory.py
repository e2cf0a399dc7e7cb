"""Peak memory of a recorded session with many agents, with and without evicting idle ones (seed 001, issue 23).

:func:`make_script` writes a script whose root, one prompt per group, creates a group
of sub-agents with ``task`` and holds one ``discuss`` round among them: every
sub-agent speaks once and hears each other member of its group, so its transcript
holds ``group - 1`` utterances of the script's long fallback answer, while the root
hears each utterance once. Memory held by sub-agents grows with the number of
agents; with eviction only the active ones stay. A last prompt has the first group
talk again: its agents, evicted long before, are revived from the saved records.

The child process runs it as a program would (``otel_agents.recording`` + ``Session``,
the recorder in its own process as by default) and reports its own peak RSS
(``VmHWM``: the run's process, not the recorder's) after the imports and at the end,
as one JSON line.

    python benchmarks/bench_agents_memory.py --child SCRIPT HOME [--max-live-agents N] [--resume]

``--resume``: the child resumes the session ``SCRIPT`` left in ``HOME`` instead (every agent
rebuilt, the policy applied) and reports the peak RSS of that alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench_resume import _maxrss_mb

GROUP = 20  # agents per discussion: each hears GROUP - 1 utterances, the root one per agent
UTTERANCE_CHARS = 5_000
MAX_LIVE_AGENTS = 50


@dataclass(frozen=True)
class MemoryFigures:
    peak_mb: float  # the run's process, whole
    peak_delta_mb: float  # ... minus its peak after the imports
    seconds: float
    agents: int
    evicted: int
    revived: int


def make_script(agents: int) -> tuple[dict, list[str]]:
    """The script document and its prompts: ``agents`` sub-agents in groups of ``GROUP``."""
    turns: list = []
    prompts = []
    for first in range(0, agents, GROUP):
        names = [f"Agent{n}" for n in range(first + 1, min(first + GROUP, agents) + 1)]
        turns.append({"tool_calls": [{"name": "task", "arguments": {"name": name}} for name in names]})
        turns.append({"tool_calls": [{"name": "discuss", "arguments": {"speakers": names,
                                                                        "prompt": f"Group {first // GROUP}: go."}}]})
        turns.append(f"group {first // GROUP} done")
        prompts.append(f"Make group {first // GROUP} talk.")
    # Last, the first group talks again: its agents, long evicted, are revived.
    first_group = [f"Agent{n}" for n in range(1, min(GROUP, agents) + 1)]
    turns.append({"tool_calls": [{"name": "discuss", "arguments": {"speakers": first_group, "prompt": "Again."}}]})
    turns.append("first group done again")
    prompts.append("Make the first group talk again.")
    words = "we should weigh the budget against the schedule and the customers' wishes " * (UTTERANCE_CHARS // 74 + 1)
    document = {"name": "many-agents", "root": {"name": "main", "system_prompt": "You coordinate groups."},
                "agents": {"main": turns}, "fallback": words[:UTTERANCE_CHARS]}
    return document, prompts


def child(script: Path, home: Path, max_live_agents: int | None) -> dict:
    """Runs in the child: imports first (not timed), then the whole recorded session."""
    import otel_agents
    import otel_agents.llm.client  # noqa: F401  (litellm: in the baseline, as any session pays it)

    prompts = json.loads(script.read_text())["prompts"]
    before = _maxrss_mb()
    started = time.perf_counter()
    policy = otel_agents.EvictionPolicy(max_live_agents=max_live_agents) if max_live_agents is not None else None
    with otel_agents.recording(home=home):
        with otel_agents.Session(otel_agents.Agent("main"), script=script, eviction=policy,
                                 max_turns=10_000) as session:
            for prompt in prompts:
                session.run_sync(prompt)
            runtime = session.runtime
            evictor = runtime.evictor
            agents = len(runtime.agents) - 1
    return {"seconds": time.perf_counter() - started, "rss_before_mb": before, "rss_peak_mb": _maxrss_mb(),
            "agents": agents, "evicted": evictor.evictions if evictor else 0,
            "revived": evictor.revivals if evictor else 0}


def child_resume(home: Path, max_live_agents: int | None) -> dict:
    """Runs in the child: resume the session a ``child`` run left in ``home``; nothing is run."""
    import otel_agents
    import otel_agents.llm.client  # noqa: F401  (as above)

    (session_id,) = [p.name for p in (home / "sessions").iterdir() if p.is_dir()]
    before = _maxrss_mb()
    started = time.perf_counter()
    policy = otel_agents.EvictionPolicy(max_live_agents=max_live_agents) if max_live_agents is not None else None
    with otel_agents.recording(home=home):
        with otel_agents.resume(session_id, eviction=policy, max_turns=10_000) as session:
            runtime = session.runtime
            live = sum(1 for a in runtime.agents.values() if not a.evicted)
            agents = len(runtime.agents) - 1
    return {"seconds": time.perf_counter() - started, "rss_before_mb": before, "rss_peak_mb": _maxrss_mb(),
            "agents": agents, "live": live}


def measure_resume(agents: int, scratch: Path, max_live_agents: int | None) -> dict:
    """Peak RSS of a fresh process resuming, with ``max_live_agents``, the session that
    ``measure(agents, scratch, MAX_LIVE_AGENTS)`` left (run it first)."""
    from bench_timing import run_process

    home = scratch / f"memory-{agents}-{MAX_LIVE_AGENTS}-0"
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(write_script(agents, scratch)),
               str(home), "--resume"]
    if max_live_agents is not None:
        command += ["--max-live-agents", str(max_live_agents)]
    _, done = run_process(command)
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


def write_script(agents: int, directory: Path) -> Path:
    document, prompts = make_script(agents)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"many-agents-{agents}.json"
    path.write_text(json.dumps({**document, "prompts": prompts}))
    return path


def measure(agents: int, scratch: Path, max_live_agents: int | None, repeat: int = 1) -> MemoryFigures:
    """``repeat`` fresh child processes running ``agents`` sub-agents; the largest peak, the median time."""
    import statistics

    from bench_timing import run_process

    script = write_script(agents, scratch)
    results = []
    for number in range(repeat):
        home = scratch / f"memory-{agents}-{max_live_agents}-{number}"
        command = [sys.executable, str(Path(__file__).resolve()), "--child", str(script), str(home)]
        if max_live_agents is not None:
            command += ["--max-live-agents", str(max_live_agents)]
        _, done = run_process(command)
        results.append(json.loads(done.stdout.decode().strip().splitlines()[-1]))
    worst = max(results, key=lambda r: r["rss_peak_mb"])
    if worst["agents"] != agents:
        raise AssertionError(f"the session created {worst['agents']} agents, not {agents}")
    return MemoryFigures(worst["rss_peak_mb"], worst["rss_peak_mb"] - worst["rss_before_mb"],
                         statistics.median(r["seconds"] for r in results), agents, worst["evicted"], worst["revived"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, type=Path, metavar=("SCRIPT", "HOME"), required=True)
    parser.add_argument("--max-live-agents", type=int)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)
    if args.resume:
        print(json.dumps(child_resume(args.child[1], args.max_live_agents)))
    else:
        print(json.dumps(child(args.child[0], args.child[1], args.max_live_agents)))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
