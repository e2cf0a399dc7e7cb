"""A scripted multi-agent session of an exact number of LLM calls, run in-process as ``otel-agents run`` runs it.

:func:`make_script` writes a script (docs/scripts.md) whose root creates
sub-agents with ``task`` (one of them delegating again, one level deeper), then
holds ``discuss`` rounds among them over several prompts (runs), so the calls
spread over agents, tools and discussions like a real session. Every turn has
``latency_ms`` 0: timings measure this project, not sleeps.

:func:`run_session` follows the command's own path (``cli/run.py``): the
tracing set-up of ``cli.execution.command_tracing`` (``session_recording.configure``), ``make_llm``, ``build_session``,
``start_recording`` and ``attach_console``, then each prompt run on one event loop
(``asyncio.Runner``, as ``cli.execution.execute`` does), the recorder closed and
tracing shut down. ``traced=False`` is the floor: the
same session with a no-op tracer (no spans at all) and no recorder.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator

MAX_TURNS = 100_000  # the root's whole run is one response; the scripted turns decide its length
FILLER = (
    "the budget", "the schedule", "our customers", "the last survey", "the new menu", "the quiet corner",
    "the opening hours", "the supplier", "the rainy season", "the music", "the loyalty card", "the terrace",
)


@dataclass(frozen=True)
class ScriptPlan:
    """What :func:`make_script` built: the script document and the facts to check a run against."""

    document: dict[str, Any]
    prompts: tuple[str, ...]
    llm_calls: int
    agents: int


def _utterance(rng: random.Random, name: str, number: int) -> str:
    topics = rng.sample(FILLER, 3)
    return (f"{name}, point {number}: I think {topics[0]} matters more than {topics[1]}, "
            f"and we should not forget {topics[2]} when we decide. ({rng.getrandbits(32):08x})")


def make_script(llm_calls: int = 500, *, agents: int = 8, speakers: int = 3, runs: int = 5, seed: int = 7) -> ScriptPlan:
    """A script whose session makes exactly ``llm_calls`` LLM calls over ``runs`` prompts."""
    rng = random.Random(seed)
    names = [f"Agent{i}" for i in range(1, agents + 1)]
    helper = "Agent1Helper"
    # Fixed part: each sub-agent is created with a first question (root call + its answer);
    # Agent1 first delegates to a helper (its task call + the helper's answer); one final answer per run.
    fixed = 2 * agents + 2 + runs
    if llm_calls < fixed + 2:
        raise ValueError(f"a session of this shape needs at least {fixed + 2} LLM calls")
    per_round = 1 + speakers
    rounds, rest = divmod(llm_calls - fixed, per_round)
    extra_speakers = rest - 1 if rest >= 2 else 0  # one shorter round takes the rest
    extra_task = rest == 1  # ... or one more sub-agent created without a question

    turns: dict[str, list[Any]] = {n: [] for n in [*names, helper]}
    spoken = dict.fromkeys(turns, 0)

    def say(name: str) -> None:
        spoken[name] += 1
        turns[name].append(_utterance(rng, name, spoken[name]))

    main: list[Any] = []
    for name in names:
        main.append({"tool_calls": [{"name": "task", "arguments": {
            "name": name, "system_prompt": f"You are {name}, a regular at the cafe. Keep answers short.",
            "user_prompt": f"{name}, what do you think the cafe should change first?"}}]})
        if name == names[0]:
            turns[name].append({"tool_calls": [{"name": "task", "arguments": {
                "name": helper, "system_prompt": "You help Agent1 think.", "user_prompt": "What should I say?"}}]})
            say(helper)
        say(name)
    if extra_task:
        main.append({"tool_calls": [{"name": "task", "arguments": {"name": "Observer", "system_prompt": "You only listen."}}]})

    schedule = [speakers] * rounds + ([extra_speakers] if extra_speakers else [])
    per_run = [schedule[i::runs] for i in range(runs)]
    round_number = 0
    for run in range(runs):
        for count in per_run[run]:
            round_number += 1
            start = (round_number * speakers) % agents
            chosen = [names[(start + j) % agents] for j in range(count)]
            listener = names[(start + count) % agents]
            turn: dict[str, Any] = {"tool_calls": [{"name": "discuss", "arguments": {
                "prompt": f"Round {round_number}: {rng.choice(FILLER)}. What do you say?",
                "speakers": chosen, "listeners": [listener] if listener not in chosen else []}}]}
            if round_number % 10 == 0:
                turn["reasoning"] = "Another round keeps the discussion going; I will summarise later."
            main.append(turn)
            for name in chosen:
                say(name)
        main.append(f"Summary of run {run + 1}: {round_number} rounds so far, everyone was heard.")

    total = len(main) + sum(len(t) for t in turns.values())
    if total != llm_calls:  # the plan above is exact; a mismatch is a bug in this generator
        raise AssertionError(f"script makes {total} calls, not {llm_calls}")
    document = {
        "name": f"bench-{llm_calls}",
        "description": "benchmarks/bench_session.py: a long session of task and discuss calls.",
        "root": {"name": "main", "system_prompt": "You run a cafe council. Create members, then let them discuss."},
        "agents": {"main": main, **turns},
        "fallback": "Nothing to add.",
    }
    prompts = tuple(f"Council meeting, part {i + 1}." for i in range(runs))
    return ScriptPlan(document, prompts, llm_calls, agents + 1 + int(extra_task) + 1)


def write_script(plan: ScriptPlan, directory: Path) -> Path:
    Path(directory).mkdir(parents=True, exist_ok=True)
    path = Path(directory) / f"{plan.document['name']}.json"
    path.write_text(json.dumps(plan.document, indent=1))
    return path


@dataclass
class SessionRun:
    seconds: float  # set-up, every prompt, closing the recorder and shutting tracing down
    cpu_seconds: float  # the same span in CPU time of this process (all threads): robust to a busy machine
    child_cpu_seconds: float  # CPU time of the processes it waited for meanwhile: the recorder process
    session_id: str
    llm_calls: int  # assistant entries in every transcript: one per LLM call of this script
    session_dir: Path | None  # None when nothing was saved (tracing disabled)


def run_session(
    script_path: Path, prompts: tuple[str, ...], home: Path, *, traced: bool,
    before_run: Callable[[Any], None] | None = None, recorded: bool = True,
) -> SessionRun:
    """One whole session through the CLI's in-process path; litellm must already be imported (warm-up).

    ``before_run(tracing)`` may add processors and listeners (the instrumentation benchmark's capture).
    ``recorded=False`` with ``traced``: spans, records and the console as traced, but no recorder
    (nothing saved): what the instrumentation costs before any persistence.
    """
    from otel_agents.cli.execution import attach_console, make_llm, start_recording
    from otel_agents.cli.model_options import ModelOptions
    from otel_agents.llm.scripts import load_script
    from otel_agents.persistence.paths import Paths
    from otel_agents.runtime.scenario import build_session
    from otel_agents.runtime.session import RunContext
    from otel_agents.session_recording import configure

    script = load_script(str(script_path))
    paths = Paths(Path(home) / "sessions", Path(home) / "billing.jsonl")
    previous = os.environ.get("OTEL_SDK_DISABLED")
    os.environ["OTEL_SDK_DISABLED"] = "false"  # an inherited "true" would send nothing
    try:
        started, cpu_started, children_started = time.perf_counter(), time.process_time(), _children_cpu()
        tracing = configure(None) if traced else _untraced()
        llm = make_llm(tracing, ModelOptions(None, None, MAX_TURNS, 4, 120.0))
        session = build_session(script, telemetry=tracing.telemetry, llm=llm, max_turns=MAX_TURNS)
        recorder = start_recording(tracing, paths, session.id) if traced and recorded else None
        attach_console(tracing, False, False, False)
        if before_run is not None:
            before_run(tracing)
        context = RunContext(source="cli", script=script.source)
        try:
            with asyncio.Runner() as runner:  # one loop for every prompt, as the command has
                for prompt in prompts:
                    runner.run(session.run(prompt, context=context))
        finally:
            if recorder is not None:
                recorder.close()
            tracing.shutdown()
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
        child_cpu_seconds = _children_cpu() - children_started
    finally:
        if previous is None:
            os.environ.pop("OTEL_SDK_DISABLED", None)
        else:
            os.environ["OTEL_SDK_DISABLED"] = previous
    calls = sum(1 for agent in session.agents.values() for m in agent.transcript if m["role"] == "assistant")
    directory = paths.sessions_dir / session.id if recorder is not None else None
    return SessionRun(seconds, cpu_seconds, child_cpu_seconds, session.id, calls, directory)


def _untraced() -> Any:
    """The floor's tracing: no provider, a no-op tracer (OTEL_SDK_DISABLED still records spans)."""
    from opentelemetry import trace

    from otel_agents.tracing.setup import Tracing, TracingOptions
    from otel_agents.tracing.telemetry import Telemetry

    return Tracing(None, Telemetry(trace.NoOpTracer()), TracingOptions())


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def recorder_mode(mode: str) -> Iterator[None]:
    """Sessions run meanwhile use this OTEL_AGENTS_RECORDER mode (process | inline)."""
    previous = os.environ.get("OTEL_AGENTS_RECORDER")
    os.environ["OTEL_AGENTS_RECORDER"] = mode
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("OTEL_AGENTS_RECORDER", None)
        else:
            os.environ["OTEL_AGENTS_RECORDER"] = previous


def warm_up(directory: Path) -> None:
    """Import litellm and take every first-call path once, so no timed run pays for it."""
    plan = make_script(40, agents=3, runs=2)
    path = write_script(plan, directory)
    for traced in (True, False):
        run_session(path, plan.prompts, Path(directory) / "warm-up", traced=traced)


def persisted_bytes(session_dir: Path, billing_file: Path) -> dict[str, int]:
    """Bytes of every artifact a session leaves (meta.json too; the ledger is this session's only)."""
    sizes = {p.name: p.stat().st_size for p in sorted(Path(session_dir).iterdir()) if p.is_file()}
    sizes["billing.jsonl"] = billing_file.stat().st_size if billing_file.exists() else 0
    return sizes
