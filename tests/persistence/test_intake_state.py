"""The receiver's span intake (SpanIntake with named_only and its durable state): the real spans of a scripted
run, in any batches, order and number of deliveries, give the local session; held spans survive a restart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from otel_agents.persistence.intake_state import HoldPolicy
from otel_agents.persistence.ownership import owner_of
from otel_agents.persistence.paths import Paths
from otel_agents.persistence.span_intake import SpanIntake, unchanged
from otel_agents.persistence.store import SessionStore
from otel_agents.persistence.timestamps import iso_ts
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.otlp_decode import decode_otlp_json
from support.collector import ledger, run_session, session_id_of


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """(home, session id, spans) of one scripted run saved locally and written to an OTLP file."""
    base = tmp_path_factory.mktemp("local")
    otlp = base / "spans.jsonl"
    session_id = session_id_of(run_session(base / "home", None, "http/protobuf", "--otlp-file", str(otlp)))
    spans = [span for line in otlp.read_text().splitlines() for span in decode_otlp_json(line)]
    return base / "home", session_id, spans


@st.composite
def deliveries(draw, n: int):
    """Batches of span indexes: every span at least once, some twice, in any order."""
    order = draw(st.permutations(range(n)))
    again = draw(st.lists(st.integers(0, n - 1), max_size=n // 2))
    everything = list(order) + again
    cuts = sorted(draw(st.sets(st.integers(1, len(everything) - 1), max_size=6)))
    return [everything[a:b] for a, b in zip([0, *cuts], [*cuts, len(everything)])]


def Intake(paths: Paths, warn, settle_s: float = 3600.0) -> SpanIntake:
    """The intake as `otel-agents collect` builds it (collect/service.py)."""
    return SpanIntake(paths.sessions_dir, paths.billing_file, shape=unchanged, named_only=True, warn=warn,
                      state_dir=paths.sessions_dir / ".collect", checkpoint_each_batch=False, hold_s=settle_s, from_wire=True)


def _collect(spans, batches, directory: Path, settle_between: bool) -> Paths:
    paths = Paths(directory / "sessions", directory / "billing.jsonl")
    intake = Intake(paths, warn=pytest.fail, settle_s=0.0 if settle_between else 3600.0)
    for batch in batches:
        intake.take([spans[i] for i in batch])  # settle_s 0: settled (and closed) after each batch, reopened on the next
        intake.sync()
    intake.close(flush=False)
    return paths


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), settle_between=st.booleans())
def test_any_delivery_gives_the_local_session(local_run, data, settle_between):
    home, session_id, spans = local_run
    batches = data.draw(deliveries(len(spans)))
    with tempfile.TemporaryDirectory() as directory:
        paths = _collect(spans, batches, Path(directory), settle_between)
        central, local = SessionStore(paths.sessions_dir / session_id), SessionStore(home / "sessions" / session_id)
        assert central.events_path.read_bytes() == local.events_path.read_bytes()
        assert central.load_tree() == local.load_tree()
        # Settled (and billed) between batches too: a run is billed only once its root's counts of
        # LLM attempts and tool calls are all there, so every record has its final path label.
        assert ledger(Path(directory), session_id) == ledger(home, session_id)
        assert json.loads(central.meta_path.read_text())["billed"]


def test_spans_of_a_trace_without_a_session_wait_and_are_counted(local_run, tmp_path):
    _, session_id, spans = local_run
    # Spans that name no session (another instrumentation's, say): here the run's turn spans
    # with the session id taken off.
    turns = [replace(s, attributes={k: v for k, v in s.attributes.items() if k != sc.GEN_AI_CONVERSATION_ID})
             for s in spans if s.name == "turn"]
    assert turns
    paths = Paths(tmp_path / "sessions", tmp_path / "billing.jsonl")
    intake = Intake(paths, warn=pytest.fail)
    accepted = intake.take(turns)
    intake.sync()
    assert (accepted.written, accepted.sessions) == (0, set()) and accepted.held == len(turns) == intake.held_spans()
    # A restart reloads them from the pending file; the rest of the session adopts them.
    intake = Intake(paths, warn=pytest.fail)
    assert intake.held_spans() == len(turns)
    accepted = intake.take([s for s in spans if s.name != "turn"])  # the session adopts its trace's spans
    assert (accepted.written, accepted.sessions) == (len(spans), {session_id}) and intake.held_spans() == 0
    intake.close(flush=False)


def test_an_earlier_attempt_delivered_after_its_run_looked_whole_still_gets_its_final_path(local_run, tmp_path):
    """A Collector reorders: the run's root and every parent came, one leaf attempt with later
    siblings comes last. The session settles in between; its records must still carry the paths
    of the final tree (billed only once the root's counts of attempts and tool calls are met)."""
    import random

    home, session_id, spans = local_run
    parents = {s.parent_span_id for s in spans}
    late = next(s for s in sorted(spans, key=lambda s: s.start_ns)
                if s.name.startswith("chat") and s.span_id not in parents
                and any(o.parent_span_id == s.parent_span_id and o.start_ns > s.start_ns for o in spans))
    first = [s for s in spans if s.span_id != late.span_id]
    random.Random(20).shuffle(first)
    paths = Paths(tmp_path / "sessions", tmp_path / "billing.jsonl")
    intake = Intake(paths, warn=pytest.fail, settle_s=0.0)  # settles (and may bill) after every batch
    intake.take(first)
    intake.sync()
    intake.take([])  # the receiver's writer looks again when idle: the session is quiet, so it settles
    assert owner_of(paths.sessions_dir / session_id) is None  # settled: closed, its lock given up
    assert ledger(tmp_path, session_id) == set()  # one attempt short of the root's count: not billed yet
    intake.take([late])
    intake.close(flush=False)
    assert ledger(tmp_path, session_id) == ledger(home, session_id)
    central = SessionStore(paths.sessions_dir / session_id)
    assert central.events_path.read_bytes() == SessionStore(home / "sessions" / session_id).events_path.read_bytes()


class Clock:
    """Wall-clock seconds the test moves by hand (SpanIntake's ``clock``)."""

    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def _unnamed(spans, trace_id: str | None = None):
    """Spans naming no session (another service's, say): the session attributes taken off, maybe another trace."""
    names = (sc.GEN_AI_CONVERSATION_ID, sc.SESSION_ID)
    return [replace(s, trace_id=trace_id or s.trace_id, attributes={k: v for k, v in s.attributes.items()
                                                                     if k not in names}) for s in spans]


def _pending_spans(paths: Paths) -> int:
    """The spans in pending.jsonl, and its released lines (one each: the file's size as compaction counts it)."""
    path = paths.sessions_dir / ".collect" / "pending.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sum(1 if "released" in line else len(decode_otlp_json(line)) for line in lines)


def _held_intake(paths: Paths, clock: Clock, bound: float = 60.0, compact_min: int = 0) -> SpanIntake:
    return SpanIntake(paths.sessions_dir, paths.billing_file, shape=unchanged, named_only=True, warn=pytest.fail,
                      state_dir=paths.sessions_dir / ".collect", checkpoint_each_batch=False, hold_s=3600.0,
                      from_wire=True, hold=HoldPolicy(unnamed_hold_seconds=bound, compact_min_spans=compact_min),
                      clock=clock)


def test_a_trace_never_named_is_dropped_after_the_bound_counted_and_leaves_pending(local_run, tmp_path):
    _, _, spans = local_run
    foreign = _unnamed(spans, trace_id="ab" * 16)
    paths = Paths(tmp_path / "sessions", tmp_path / "billing.jsonl")
    clock = Clock()
    intake = _held_intake(paths, clock)
    assert intake.take(foreign).held == len(foreign) == _pending_spans(paths)
    clock.now += 59.9
    assert intake.take([]).ignored == 0 and intake.held_spans() == len(foreign)  # within the bound: still held
    clock.now += 0.1
    dropped = intake.take([])
    assert (dropped.ignored, dropped.held, intake.held_spans()) == (len(foreign), 0, 0)
    assert _pending_spans(paths) == 0  # rewritten without them, durably
    # A span of the dropped trace that comes later is ignored as well, even one naming a session.
    late = intake.take([replace(spans[0], trace_id="ab" * 16, span_id="cd" * 8)])
    assert (late.ignored, late.written, late.sessions) == (1, 0, set())
    intake.close(flush=False)
    assert not any(p.name != ".collect" for p in paths.sessions_dir.iterdir())


def test_a_naming_span_within_the_bound_still_gives_the_whole_session(local_run, tmp_path):
    home, session_id, spans = local_run
    turns = [s for s in spans if s.name == "turn"]
    held = _unnamed(turns)  # the run's turn spans, without the session's name: held
    paths = Paths(tmp_path / "sessions", tmp_path / "billing.jsonl")
    clock = Clock()
    intake = _held_intake(paths, clock)
    intake.take(held)
    clock.now += 59.0
    rest = [s for s in spans if s.name != "turn"]
    accepted = intake.take(rest)
    assert (accepted.written, accepted.ignored, intake.held_spans()) == (len(spans), 0, 0)
    intake.close(flush=False)
    # The same spans in one batch: the session as if no span had waited (turn nodes lack the name they lost).
    at_once = Paths(tmp_path / "at_once" / "sessions", tmp_path / "at_once" / "billing.jsonl")
    reference = _held_intake(at_once, Clock())
    reference.take(held + rest)
    reference.close(flush=False)
    central, expected = SessionStore(paths.sessions_dir / session_id), SessionStore(at_once.sessions_dir / session_id)
    assert central.events_path.read_bytes() == SessionStore(home / "sessions" / session_id).events_path.read_bytes()
    assert central.load_tree() == expected.load_tree()
    assert ledger(tmp_path, session_id) == ledger(tmp_path / "at_once", session_id) != set()
    assert _pending_spans(paths) == 0


def test_a_session_settled_only_after_a_restart_is_dated_by_its_first_span(local_run, tmp_path):
    """Killed before a session's meta.json was written: the restart settles it, created from its journal, not the clock."""
    home, session_id, spans = local_run
    paths = Paths(tmp_path / "sessions", tmp_path / "billing.jsonl")
    program = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from otel_agents.persistence.paths import Paths\n"
        "from otel_agents.tracing.otlp_decode import decode_otlp_json\n"
        "from test_intake_state import Intake\n"
        "paths = Paths(Path(sys.argv[2]), Path(sys.argv[3]))\n"
        "spans = [s for line in open(sys.argv[1]) for s in decode_otlp_json(line)]\n"
        "intake = Intake(paths, warn=print)\n"
        "assert intake.take(spans).written == len(spans)\n"
        "intake.sync()\n"  # acknowledged, as the receiver does; then killed: no close, no meta.json
        "os.kill(os.getpid(), 9)\n"
    )
    tests = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), str(tests.parent)])}
    done = subprocess.run([sys.executable, "-c", program, str(home.parent / "spans.jsonl"), str(paths.sessions_dir),
                           str(paths.billing_file)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr
    meta_path = paths.sessions_dir / session_id / "meta.json"
    assert (paths.sessions_dir / session_id / "spans.jsonl").exists() and not meta_path.exists()
    Intake(paths, warn=pytest.fail).close()  # the restart settles what was written
    meta = json.loads(meta_path.read_text())
    assert meta["created"] == iso_ts(min(s.start_ns for s in spans))


def test_a_restart_keeps_a_held_trace_s_age(local_run, tmp_path):
    """Killed (no close) and started again: held spans not expired are held again, with their first-held
    time from pending.jsonl, so they expire when they would have; ones expired meanwhile are dropped at start."""
    _, _, spans = local_run
    early, late = _unnamed(spans, trace_id="01" * 16), _unnamed(spans, trace_id="02" * 16)
    paths = Paths(tmp_path / "sessions", tmp_path / "billing.jsonl")
    clock = Clock()
    intake = _held_intake(paths, clock)
    intake.take(early)
    clock.now += 30
    intake.take(late)
    intake.sync()  # as the receiver does before acknowledging; then a kill: no close
    clock.now += 20  # early held 50 s, late 20 s
    restarted = _held_intake(paths, clock)
    assert restarted.held_spans() == len(early) + len(late) and restarted.totals.ignored == 0
    clock.now += 10  # early reaches 60 s: dropped; late (30 s) stays
    assert restarted.take([]).ignored == len(early) and restarted.held_spans() == len(late)
    clock.now += 25
    again = _held_intake(paths, clock)  # killed again: late is 55 s old, still held
    assert again.held_spans() == len(late) == _pending_spans(paths)
    clock.now += 5
    assert again.take([]).ignored == len(late)
    clock.now += 1000
    assert _held_intake(paths, clock).held_spans() == 0


def _killed_after_holding_then_writing_and_dropping(spans_file: str, sessions_dir: str, billing_file: str) -> None:
    """Run in a child process (killed -9 at the end): turns held then named and written, a foreign trace
    held then dropped, each acknowledged (synced), with no compaction and no close."""
    spans = [s for line in open(spans_file) for s in decode_otlp_json(line)]
    turns = [s for s in spans if s.name == "turn"]
    held, rest = _unnamed(turns), [s for s in spans if s.name != "turn"]
    foreign = _unnamed(spans, trace_id="ab" * 16)
    clock = Clock()
    intake = _held_intake(Paths(Path(sessions_dir), Path(billing_file)), clock, compact_min=10_000)
    intake.take(held + foreign)
    intake.sync()
    clock.now += 30
    assert intake.take(rest).written == len(spans)  # the turns' trace named: written with them
    intake.sync()
    clock.now += 30
    assert intake.take([]).ignored == len(foreign)
    intake.sync()
    assert _pending_spans(intake.paths) >= len(held) + len(foreign)  # appended to, never compacted
    os.kill(os.getpid(), 9)


def test_a_restart_after_kill_9_does_not_hold_or_count_again_what_was_written_or_dropped(local_run, tmp_path):
    """pending.jsonl is appended to and compacted only now and then: a trace written to its session (or
    dropped) since its spans were held gets a released line there, so the restart skips its spans."""
    home, session_id, spans = local_run
    paths = Paths(tmp_path / "sessions", tmp_path / "billing.jsonl")
    program = ("import sys\nfrom test_intake_state import _killed_after_holding_then_writing_and_dropping as run\n"
               "run(*sys.argv[1:])\n")
    tests = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), str(tests.parent)])}
    done = subprocess.run([sys.executable, "-c", program, str(home.parent / "spans.jsonl"), str(paths.sessions_dir),
                           str(paths.billing_file)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr
    clock = Clock(1_000_000.0 + 61)  # their first hold 61 s ago: taken again, they would be counted ignored
    restarted = _held_intake(paths, clock)
    assert (restarted.held_spans(), restarted.totals.ignored) == (0, 0)
    clock.now += 120
    assert restarted.take([]).ignored == 0
    restarted.close(flush=False)
    assert _pending_spans(paths) == 0
    journal = SessionStore(paths.sessions_dir / session_id).journal_path.read_text()
    assert all(s.span_id in journal for s in spans)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.floats(0, 40), st.integers(0, 3)), min_size=1, max_size=12),
       compact_min=st.sampled_from([0, 10, 100]))
def test_held_spans_and_the_pending_file_stay_within_the_bound(local_run, steps, compact_min):
    """Any arrivals of unnamed traces over time: held are exactly those first held within the bound, every
    other span counted ignored once, and pending.jsonl never holds over twice the held spans plus compact_min."""
    spans = local_run[2][:10]  # a trace's size does not matter here, only how many arrive when: ten spans each
    bound = 60.0
    with tempfile.TemporaryDirectory() as directory:
        paths = Paths(Path(directory) / "sessions", Path(directory) / "billing.jsonl")
        clock = Clock()
        intake = _held_intake(paths, clock, bound, compact_min)
        first_held: dict[str, float] = {}
        for number, (advance, traces) in enumerate(steps):
            clock.now += advance
            batch = []
            for k in range(traces):
                trace_id = f"{number + 1:016x}{k + 1:016x}"  # never all zero (an invalid id)
                first_held[trace_id] = clock.now
                batch += _unnamed(spans, trace_id)
            intake.take(batch)
            intake.sync()
            alive = sum(1 for t in first_held.values() if clock.now - t < bound)
            assert intake.held_spans() == alive * len(spans)
            assert intake.totals.ignored == (len(first_held) - alive) * len(spans)
            assert _pending_spans(paths) <= 2 * intake.held_spans() + compact_min
