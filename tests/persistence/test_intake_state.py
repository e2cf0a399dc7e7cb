"""The receiver's span intake (SpanIntake with named_only and its durable state): the real spans of a scripted
run, in any batches, order and number of deliveries, give the local session; held spans survive a restart."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from otel_agents.persistence.ownership import owner_of
from otel_agents.persistence.paths import Paths
from otel_agents.persistence.span_intake import SpanIntake, unchanged
from otel_agents.persistence.store import SessionStore
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
