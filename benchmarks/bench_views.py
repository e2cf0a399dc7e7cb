"""Benchmark of the session views on a large synthetic session (default 100,000 transcript entries).

    python benchmarks/bench_views.py                 # 100k entries: load + every view
    python benchmarks/bench_views.py --entries 20000 --scaling   # also 1/4 and 1/2 size: linear growth
    python benchmarks/bench_views.py --cli           # also time `otel-agents view` end to end

Importable by other harnesses: :func:`synthetic_session` builds the records and a
span tree shaped like a real session (task/discuss among sub-agents, pieces of
text delivered in formatted forms, tool results, reasoning, truncations, one
``chat`` node per assistant entry with its context attributes), and
:func:`write_session_dir` saves it as ``events.jsonl`` + ``tree.json.gz``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import make_record

MODEL = "scripted/synthetic"
BASE_NS = 1_760_000_000_000_000_000


@dataclass
class SyntheticSession:
    session_id: str
    records: list[dict[str, Any]]  # events.jsonl lines: record + ts/trace_id/span_id
    tree: dict[str, Any]  # tree.json.gz document
    entries: int  # transcript entries among the records
    chat_span_ids: dict[str, list[str]] = field(default_factory=dict)  # agent id -> its chat spans, in order


class _Builder:
    def __init__(self, rng: random.Random, trace_id: str):
        self.rng = rng
        self.trace_id = trace_id
        self.records: list[dict[str, Any]] = []
        self.counter = 0
        self.entries = 0
        self.length: dict[str, int] = {}  # agent -> current transcript length
        self.last: dict[str, str] = {}  # agent -> id of its transcript's last entry
        self.stack: dict[str, list[str]] = {}  # agent -> current transcript ids (for truncation)
        self.chats: list[dict[str, Any]] = []
        self.chat_span_ids: dict[str, list[str]] = {}

    def _id(self) -> str:
        self.counter += 1
        return f"msg_{self.counter:06d}"

    def _span(self) -> str:
        return format(self.rng.getrandbits(64) | 1, "016x")

    def add(self, event_type: str, **fields: Any) -> str:
        message_id = self._id()
        record = make_record(event_type, message_id, **fields)
        ts = BASE_NS + self.counter * 1_000_000
        iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts // 10**9)) + f".{ts % 10**9:09d}Z"
        record.update({"ts": iso, "trace_id": self.trace_id, "span_id": self._span()})
        self.records.append(record)
        agent = fields.get("agent_id")
        if event_type == sc.EVENT_TRANSCRIPT_ENTRY:
            self.entries += 1
            self.stack.setdefault(agent, []).append(message_id)
        elif event_type == sc.EVENT_TRANSCRIPT_TRUNCATED:
            del self.stack[agent][fields["keep"]:]
        return message_id

    def chat(self, agent: str) -> None:
        """A chat attempt of ``agent`` now: its context is its current transcript."""
        ids = self.stack.get(agent, [])
        span_id = self._span()
        attrs = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.GEN_AI_REQUEST_MODEL: MODEL,
            sc.CONTEXT_AGENT_ID: agent,
            sc.CONTEXT_MESSAGE_COUNT: len(ids),
            sc.LLM_ATTEMPT: 1,
        }
        if ids:
            attrs[sc.CONTEXT_LAST_MESSAGE_ID] = ids[-1]
        at = BASE_NS + self.counter * 1_000_000 + 500_000  # between the context's last record and the reply
        self.chats.append(_node("llm", span_id, f"chat {MODEL}", at, at + 400_000, attrs, accounting=[]))
        self.chat_span_ids.setdefault(agent, []).append(span_id)

    def assistant(self, agent: str, **fields: Any) -> str:
        self.chat(agent)
        return self.add(sc.EVENT_TRANSCRIPT_ENTRY, agent_id=agent, role="assistant", **fields)


def _zero_totals() -> dict[str, dict[str, int]]:
    return {scope: dict.fromkeys(sc.TOTAL_KEYS, 0) for scope in ("self", "inclusive")}


def _node(kind: str, span_id: str, name: str, started: int, ended: int, attributes: dict[str, Any], **parts: Any) -> dict[str, Any]:
    """A tree node with every key readers rely on (persistence/tree_shape.py checks them at load)."""
    return {"kind": kind, "span_id": span_id, "name": name, "started_ns": started, "ended_ns": ended, "status": "ok",
            "attributes": attributes, "events": [], "logs": [], "ops": [], **parts}


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]


def synthetic_session(entries: int = 100_000, agents: int = 40, seed: int = 0) -> SyntheticSession:
    """A session of at least ``entries`` transcript entries among ``agents`` sub-agents of one root."""
    rng = random.Random(seed)
    trace_id = format(rng.getrandbits(128) | 1, "032x")
    b = _Builder(rng, trace_id)
    root = "agent_001"
    b.add(sc.EVENT_AGENT_CREATED, agent_id=root, name="main", language_model=MODEL)
    b.add(sc.EVENT_TRANSCRIPT_ENTRY, agent_id=root, role="system", content="You orchestrate a large cast.")
    b.add(sc.EVENT_TRANSCRIPT_ENTRY, agent_id=root, role="user", content="Run the town meeting.")
    names: dict[str, str] = {}
    calls = 0
    for number in range(2, agents + 2):
        agent_id, name = f"agent_{number:03d}", f"Agent{number}"
        calls += 1
        call_id = f"call_{calls}"
        call_msg = b.assistant(root, tool_calls=_call(call_id, "task", {"name": name, "system_prompt": f"You are {name}."}))
        b.add(sc.EVENT_AGENT_CREATED, agent_id=agent_id, name=name, cause=call_msg, language_model=MODEL, parent=root)
        b.add(sc.EVENT_TRANSCRIPT_ENTRY, agent_id=agent_id, role="system", content=f"You are {name}.")
        b.add(sc.EVENT_TRANSCRIPT_ENTRY, agent_id=root, role="tool", tool_call_id=call_id, name="task",
              content=f"Created subagent: {name}")
        names[agent_id] = name
    members = list(names)
    round_number = 0
    while b.entries < entries:
        round_number += 1
        group = rng.sample(members, min(len(members), rng.randint(2, 6)))
        speakers = group[: rng.randint(1, len(group))]
        calls += 1
        call_id = f"call_{calls}"
        prompt = f"Round {round_number}: discuss topic {rng.randint(1, 10_000)}."
        call_msg = b.assistant(
            root, tool_calls=_call(call_id, "discuss", {"prompt": prompt, "speakers": [names[s] for s in speakers]}),
            reasoning_content="Time for another round." if round_number % 7 == 0 else None,
        )
        piece = b.add(sc.EVENT_PIECE_OF_TEXT, agent_id=root, content=prompt, cause=call_msg)
        for member in group:
            b.add(sc.EVENT_TRANSCRIPT_ENTRY, agent_id=member, role="user", content=prompt, substance=piece)
        for speaker in speakers:
            text = f"{names[speaker]} says {rng.getrandbits(40):x} about round {round_number}."
            said = b.assistant(speaker, content=text)
            b.add(sc.EVENT_TRANSCRIPT_ENTRY, agent_id=root, role="tool", tool_call_id=call_id, name="discuss", content=text)
            for member in group:
                if member != speaker:
                    b.add(sc.EVENT_TRANSCRIPT_ENTRY, agent_id=member, role="user",
                          content=f"[{names[speaker]}]: {text}", substance=said)
        if round_number % 50 == 0:  # a long-lived agent forgets: keep its system prompt and a few turns
            victim = rng.choice(members)
            b.add(sc.EVENT_TRANSCRIPT_TRUNCATED, agent_id=victim, keep=min(5, len(b.stack[victim])))
    b.chat(root)
    b.add(sc.EVENT_TRANSCRIPT_ENTRY, agent_id=root, role="assistant", content="The meeting is over.")
    session_id = f"bench-{entries}-{seed}"
    ended = BASE_NS + (b.counter + 1) * 1_000_000
    turn = _node("turn", format(rng.getrandbits(64) | 1, "016x"), sc.OP_TURN, BASE_NS, ended, {sc.TURN_INDEX: 1},
                 index=1, totals=_zero_totals())
    turn["ops"] = b.chats
    run = _node("session", format(rng.getrandbits(64) | 1, "016x"), "invoke_agent main", BASE_NS, ended,
                {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.RUN_INDEX: 1},
                trace_id=trace_id, index=1, turns=[turn], totals=_zero_totals())
    tree = {
        "version": 1,
        "session": {"id": session_id, "status": "ok", "runs": [run], "ops": [], "agents": {}, "totals": _zero_totals()},
        "meta": {"synthetic": True},
    }
    return SyntheticSession(session_id, b.records, tree, b.entries, b.chat_span_ids)


def write_session_dir(session: SyntheticSession, sessions_dir: Path) -> Path:
    path = Path(sessions_dir) / session.session_id
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "events.jsonl", "wb") as fh:
        for record in session.records:
            fh.write(orjson.dumps(record) + b"\n")
    with gzip.open(path / "tree.json.gz", "wb", compresslevel=5) as fh:
        fh.write(orjson.dumps(session.tree))
    return path


# --------------------------------------------------------------------------- timing


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def _best(action: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Best wall and best CPU seconds of ``repeat`` runs (CPU time is immune to a busy machine)."""
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        cpu = time.process_time()
        wall, result = _timed(action)
        walls.append(wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), result


def view_timings(session: SyntheticSession, path: Path, repeat: int = 3) -> list[tuple[str, float, float, str]]:
    """(view, wall s, CPU s, what) for loading and every view, each computed and rendered as text."""
    from otel_agents.views import SessionViewer
    from otel_agents.views import render as R

    results = []
    wall, cpu, viewer = _best(lambda: SessionViewer.from_session_dir(path), repeat)
    results.append(("load events.jsonl + index", wall, cpu, f"{len(viewer.records)} records"))
    agents = viewer.list_agents()
    busiest = sorted(agents[1:], key=lambda a: -a.entries)[:2]
    last_heard = next(r for r in reversed(viewer.records) if r.get("substance"))
    piece = next(r for r in reversed(viewer.records) if r["event_type"] == "piece_of_text")
    root_chat = session.chat_span_ids["agent_001"][-1]

    def context_first():
        viewer._tree = viewer._spans = None  # forget the tree: this call reads and indexes it
        return R.render_context(viewer.chat_context(root_chat))

    def context_again():
        return R.render_context(viewer.chat_context(root_chat))

    cases = [
        ("agents", lambda: R.render_agents(viewer.list_agents()), f"{len(agents)} agents"),
        ("transcript main", lambda: R.render_transcript(viewer.transcript("main")), f"{agents[0].entries} entries"),
        ("perspective main", lambda: R.render_perspective(viewer.extract_agent_perspective("main")), "root, all rounds"),
        ("perspective busiest", lambda: R.render_perspective(viewer.extract_agent_perspective(busiest[0].agent_id)),
         f"{busiest[0].entries} entries"),
        ("dialog 2 busiest", lambda: R.render_dialog(viewer.extract_dialog([a.agent_id for a in busiest])), "two agents"),
        ("dialog everyone", lambda: R.render_dialog(viewer.extract_dialog([a.agent_id for a in agents])), "all agents"),
        ("causality index", lambda: len(viewer.build_causality_index()), "every record"),
        ("trace last heard", lambda: R.render_trace(viewer.trace_message_flow(last_heard["message_id"])), "3-step chain"),
        ("heard last piece", lambda: R.render_references(viewer.step(piece["message_id"]),
                                                         viewer.trace_content_references(piece["message_id"])),
         "a broadcast"),
        ("context main (reads tree)", context_first, f"{agents[0].entries} messages, tree.json.gz read"),
        ("context main (tree read)", context_again, f"{agents[0].entries} messages"),
    ]
    for name, action, what in cases:
        wall, cpu, _ = _best(action, repeat)
        results.append((name, wall, cpu, what))
    return results


def cli_timings(path: Path) -> list[tuple[str, float, float, str]]:
    """Whole ``otel-agents view`` processes: interpreter start, load, view, output (CPU: children)."""
    results = []
    for args in (["agents"], ["perspective", "main"], ["dialog", "Agent2", "Agent3", "--json"]):
        command = [sys.executable, "-m", "otel_agents", "view", str(path), *args]
        before = os.times()
        wall, done = _timed(lambda: subprocess.run(command, capture_output=True, check=True))
        after = os.times()
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        results.append(("cli " + " ".join(args), wall, cpu, f"{len(done.stdout)} bytes out"))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--agents", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scaling", action="store_true", help="also run at 1/4 and 1/2 of --entries")
    parser.add_argument("--cli", action="store_true", help="also time otel-agents view processes")
    parser.add_argument("--repeat", type=int, default=3, help="runs per view; the best is shown")
    args = parser.parse_args(argv)
    sizes = [args.entries // 4, args.entries // 2, args.entries] if args.scaling else [args.entries]
    slowest = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            seconds, session = _timed(lambda: synthetic_session(size, args.agents, args.seed))
            path = write_session_dir(session, Path(tmp))
            print(f"\n{session.entries} transcript entries, {len(session.records)} records, "
                  f"{len(session.tree['session']['runs'][0]['turns'][0]['ops'])} chat spans "
                  f"(generated in {seconds:.2f} s; events.jsonl {(path / 'events.jsonl').stat().st_size / 1e6:.1f} MB)")
            rows = view_timings(session, path, args.repeat)
            rows += cli_timings(path) if args.cli and size == sizes[-1] else []
            print(f"  {'':<34} {'wall':>9}    {'CPU':>9}")
            for name, wall, cpu, what in rows:
                print(f"  {name:<34} {wall * 1000:9.1f} ms {cpu * 1000:9.1f} ms   {what}")
                if not name.startswith(("load", "cli")):
                    slowest = max(slowest, cpu)
    print(f"\nslowest view (CPU, load excluded): {slowest * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
