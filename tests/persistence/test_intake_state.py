"""The receiver's span intake (SpanIntake with named_only and its durable state): the real spans of a scripted
run, in any batches, order and number of deliveries, give the local session; held spans survive a restart."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

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
        central_ledger, local_ledger = ledger(Path(directory), session_id), ledger(home, session_id)
        if not settle_between:
            assert central_ledger == local_ledger
        else:
            # Known limit (docs/collect.md): a session settled while a leaf span of a whole-looking
            # trace is still missing is billed then, and a record's path depends on its siblings;
            # still every call is billed exactly once.
            ids = [json.loads(r)["record_id"] for r in central_ledger]
            assert sorted(ids) == sorted(json.loads(r)["record_id"] for r in local_ledger)
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
