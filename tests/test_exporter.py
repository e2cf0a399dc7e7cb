"""SessionExporter: SDK spans in any batches and order give the sessions and ledger one import of them gives."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from otel_agents.exporter import SessionExporter
from otel_agents.persistence.events_file import read_event_lines
from otel_agents.persistence.journal import read_journal, spans_from_journal
from otel_agents.persistence.store import SessionStore
from otel_agents.tracing.otlp_json import OtlpJsonFileExporter

ROOT = Path(__file__).resolve().parents[1]
OURS = "s-exporter-ours"


def _spans():
    """Three traces made by a real TracerProvider: an OpenInference-style app trace under an HTTP
    server span, an otel-agents run (our shape, priced), and a plain HTTP trace of no GenAI relevance."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "exporter-test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("exporter-test")
    with tracer.start_as_current_span("POST /ask", kind=SpanKind.SERVER, attributes={"http.method": "POST"}):
        with tracer.start_as_current_span("Agent", attributes={"openinference.span.kind": "AGENT"}):
            for turn in range(2):
                with tracer.start_as_current_span("completion", kind=SpanKind.CLIENT, attributes={
                    "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini", "llm.provider": "openai",
                    "llm.token_count.prompt": 100 + turn, "llm.token_count.completion": 7,
                }):
                    with tracer.start_as_current_span("POST api.openai.com", kind=SpanKind.CLIENT):
                        pass
            with tracer.start_as_current_span("lookup", attributes={"openinference.span.kind": "TOOL"}):
                pass
    with tracer.start_as_current_span("invoke_agent main", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "main",
        "gen_ai.conversation.id": OURS, "otel_agents.session.id": OURS,
    }):
        with tracer.start_as_current_span("chat m", kind=SpanKind.CLIENT, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.conversation.id": OURS,
            "gen_ai.usage.input_tokens": 11, "gen_ai.usage.output_tokens": 3,
            "gen_ai.usage.cost": 0.25, "otel_agents.llm.price_source": "config",
        }):
            pass
        with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.conversation.id": OURS,
            "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 1,  # no price: priced as import prices it
        }):
            pass
    with tracer.start_as_current_span("GET /health", kind=SpanKind.SERVER):
        pass
    provider.shutdown()
    return list(memory.get_finished_spans())


SPANS = _spans()
IGNORED = 1  # the GET /health span


def _session(sessions_dir: Path, session_id: str):
    store = SessionStore(sessions_dir / session_id)
    lines = read_event_lines(store.events_path)
    spans = spans_from_journal(read_journal(store.journal_path), lines)
    return {
        "tree": store.load_tree(),
        "spans": sorted(spans, key=lambda s: s.span_id),
        "records": sorted(json.dumps(line.record, sort_keys=True) for line in lines),
    }


def _ledger(billing: Path) -> set[str]:
    if not billing.exists():
        return set()
    return {json.dumps(json.loads(line), sort_keys=True) for line in billing.read_text().splitlines()}


def _imported(tmp: Path):
    """The reference: the spans saved as ``--otlp-file`` saves them, then ``otel-agents import``."""
    otlp = tmp / "spans.otlp.jsonl"
    OtlpJsonFileExporter(otlp).export(SPANS)
    sessions, billing = tmp / "imported", tmp / "imported.jsonl"
    subprocess.run([sys.executable, "-m", "otel_agents", "import", str(otlp), "--sessions-dir", str(sessions),
                    "--billing-file", str(billing)], check=True, capture_output=True, timeout=120)
    return sessions, billing


HEALTH = "trace-" + format(next(s for s in SPANS if s.name == "GET /health").context.trace_id, "032x")[:16]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """(sessions dir, ledger, GenAI session ids) of one import of all the spans; import makes a
    session of every trace, the exporter only of GenAI ones."""
    sessions, billing = _imported(tmp_path_factory.mktemp("reference"))
    return sessions, billing, sorted(p.name for p in sessions.iterdir() if p.name != HEALTH)


def _export(sessions: Path, billing: Path, batches) -> SessionExporter:
    exporter = SessionExporter(sessions_dir=sessions, billing_file=billing, hold_s=3600)
    for batch in batches:
        exporter.export(batch)
    exporter.shutdown()
    return exporter


def test_the_reference_import_has_the_app_trace_and_the_run_and_the_health_check_apart(reference):
    sessions, _, session_ids = reference
    assert OURS in session_ids and len(session_ids) == 2 and (sessions / HEALTH).is_dir()
    assert not any("health" in json.dumps(_session(sessions, s)["tree"]) for s in session_ids)


def _arrival_order(rng: random.Random) -> list:
    """A random order in which every other software's span comes after its children (as a
    BatchSpanProcessor sends them: at their ends); our run's spans come in any order at all."""
    waiting = list(SPANS)
    out = []
    while waiting:
        sent = {s.context.span_id for s in out}
        free = [s for s in waiting if s.attributes.get("gen_ai.conversation.id") == OURS or all(
            c.context.span_id in sent for c in SPANS if c.parent is not None and c.parent.span_id == s.context.span_id)]
        pick = rng.choice(free)
        waiting.remove(pick)
        out.append(pick)
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), cuts=st.lists(st.integers(1, len(SPANS) - 1), max_size=5, unique=True))
def test_batches_in_any_order_give_the_session_one_import_gives(reference, seed, cuts):
    imported, imported_billing, session_ids = reference
    spans = _arrival_order(random.Random(seed))
    bounds = [0, *sorted(cuts), len(spans)]
    batches = [spans[a:b] for a, b in zip(bounds, bounds[1:])]
    with tempfile.TemporaryDirectory() as tmp:
        sessions, billing = Path(tmp) / "sessions", Path(tmp) / "billing.jsonl"
        exporter = _export(sessions, billing, batches)
        assert sorted(p.name for p in sessions.iterdir()) == session_ids
        for session_id in session_ids:
            assert _session(sessions, session_id) == _session(imported, session_id)
        assert _ledger(billing) == _ledger(imported_billing) and _ledger(billing)
        assert exporter.totals.ignored == IGNORED and not exporter.totals.rejected


def test_the_ledger_has_the_tokens_and_the_foreign_calls_are_priced_or_marked(tmp_path):
    _export(tmp_path / "s", tmp_path / "b.jsonl", [SPANS])
    records = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    calls = [r for r in records if r["type"] == "llm"]
    assert sorted(r["tokens"]["input"] for r in calls) == [5, 11, 100, 101]
    assert [r["tool"] for r in records if r["type"] == "tool"] == ["lookup"]
    ours = next(r for r in calls if r["tokens"]["input"] == 11)
    assert ours["cost_usd"] == 0.25
    # Calls without a price are priced from the local price map, or said to be unpriced.
    assert all(r["price_source"] for r in calls if r["tokens"]["input"] != 11)


def test_exporting_the_same_spans_again_changes_nothing(tmp_path):
    sessions, billing = tmp_path / "sessions", tmp_path / "billing.jsonl"
    _export(sessions, billing, [SPANS])
    before = {p: p.read_bytes() for p in sessions.rglob("*.jsonl")}
    ledger_before = billing.read_bytes()
    session_ids = sorted(p.name for p in sessions.iterdir())
    trees = {s: _session(sessions, s)["tree"] for s in session_ids}
    again = _export(sessions, billing, [SPANS[:3], SPANS[3:]])  # another process, other batches
    assert again.totals.written == 0
    assert {p: p.read_bytes() for p in sessions.rglob("*.jsonl")} == before
    assert billing.read_bytes() == ledger_before
    assert {s: _session(sessions, s)["tree"] for s in session_ids} == trees
    same = SessionExporter(sessions_dir=sessions, billing_file=billing)
    same.export(SPANS)
    same.export(SPANS)  # within one exporter too
    same.shutdown()
    assert billing.read_bytes() == ledger_before


def test_a_trace_waits_for_its_root_then_is_written_at_once(tmp_path):
    sessions = tmp_path / "sessions"
    exporter = SessionExporter(sessions_dir=sessions, billing_file=tmp_path / "b.jsonl", hold_s=3600)
    run = [s for s in SPANS if s.attributes.get("gen_ai.conversation.id") == OURS]
    child = next(s for s in run if s.parent is not None)
    root = next(s for s in run if s.parent is None)
    assert exporter.export([child]).name == "SUCCESS"
    assert not (sessions / OURS).exists()  # held: its run has not ended
    exporter.export([root])
    assert (sessions / OURS / "tree.json.gz").exists()
    assert len(_session(sessions, OURS)["spans"]) == 2
    exporter.shutdown()


def test_defaults_come_from_otel_agents_home_and_a_busy_session_is_not_written(tmp_path, monkeypatch):
    from otel_agents.persistence.ownership import take

    monkeypatch.setenv("OTEL_AGENTS_HOME", str(tmp_path / "home"))
    exporter = SessionExporter()
    assert exporter.sessions_dir == tmp_path / "home" / "sessions"
    assert exporter.billing_file == tmp_path / "home" / "billing.jsonl"
    warnings: list[str] = []
    held = take(exporter.sessions_dir / OURS, create=True)  # a live run writes it
    try:
        busy = SessionExporter(warn=warnings.append)
        run = [s for s in SPANS if s.attributes.get("gen_ai.conversation.id") == OURS]
        busy.export(run[:1])
        busy.export(run[1:])
        busy.export(run)
        busy.shutdown()
    finally:
        held.release()
    assert busy.totals.rejected and len(warnings) == 1 and "being written" in warnings[0]
    assert not (exporter.sessions_dir / OURS / "spans.jsonl").exists()


def test_the_entry_point_names_the_exporter():
    text = (ROOT / "pyproject.toml").read_text()
    assert '[project.entry-points.opentelemetry_traces_exporter]\notel_agents = "otel_agents.exporter:SessionExporter"' in text


def _entry_point_path(tmp: Path) -> str:
    """Where the ``otel_agents`` traces-exporter entry point is found: the installed package's metadata
    once it is reinstalled from this pyproject.toml, else a dist-info declaring just that entry point."""
    from importlib.metadata import entry_points

    if any(ep.value == "otel_agents.exporter:SessionExporter"
           for ep in entry_points(group="opentelemetry_traces_exporter", name="otel_agents")):
        return ""
    info = tmp / "entry" / "otel_agents_exporter_entry-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: otel-agents-exporter-entry\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        '[opentelemetry_traces_exporter]\notel_agents = otel_agents.exporter:SessionExporter\n')
    return str(info.parent)


def test_an_instrumented_litellm_app_under_opentelemetry_instrument_gets_sessions_and_a_ledger(tmp_path):
    from tests.support.openai_server import OpenAIServer, Reply

    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    extra = _entry_point_path(tmp_path)
    env.update({
        "OTEL_AGENTS_HOME": str(home), "OTEL_TRACES_EXPORTER": "otel_agents", "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none", "OTEL_SERVICE_NAME": "exporter-app",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no network here
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), extra, env.get("PYTHONPATH", "")) if p),
    })
    with OpenAIServer() as server:
        server.plan(Reply(content="four", prompt_tokens=21, completion_tokens=4),
                    Reply(content="nine", prompt_tokens=33, completion_tokens=5))
        env["APP_API_BASE"] = server.api_base
        app = subprocess.run(
            [str(Path(sys.executable).with_name("opentelemetry-instrument")), sys.executable,
             str(ROOT / "tests" / "data" / "exporter_app.py"), "2+2?", "3*3?"],
            env=env, capture_output=True, text=True, timeout=240,
        )
    assert app.returncode == 0, app.stderr[-2000:]
    assert app.stdout.split() == ["four", "nine"]
    sessions = sorted(p.name for p in (home / "sessions").iterdir())
    assert len(sessions) == 2 and all(s.startswith("trace-") for s in sessions)  # one trace per call
    records = [json.loads(line) for line in (home / "billing.jsonl").read_text().splitlines()]
    calls = sorted((r["tokens"]["input"], r["tokens"]["output"], r["model"]) for r in records if r["type"] == "llm")
    assert calls == [(21, 4, "openai/test-model"), (33, 5, "openai/test-model")]
    shown = []
    for session_id in sessions:
        show = subprocess.run([sys.executable, "-m", "otel_agents", "sessions", "show", session_id],
                              env=env, capture_output=True, text=True, timeout=120)
        assert show.returncode == 0, show.stderr
        shown += re.findall(r"llm openai/test-model\s+in (\d+) out (\d+)", show.stdout)
        assert re.search(r"^run 1 .*exporter-app", show.stdout, re.M)  # the run is the service's agent
    assert sorted(shown) == [("21", "4"), ("33", "5")]
    for session_id in sessions:
        verify = subprocess.run([sys.executable, "-m", "otel_agents", "sessions", "verify", session_id],
                                env=env, capture_output=True, text=True, timeout=120)
        assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_billing_file_that_is_not_a_ledger_is_refused_when_the_exporter_is_made(tmp_path):
    from otel_agents.exporter import SessionExporter

    other = tmp_path / "notes.json"
    other.write_text('{"notes": []}\n')
    with pytest.raises(ValueError, match="is not a billing ledger"):
        SessionExporter(sessions_dir=tmp_path / "sessions", billing_file=other)
    assert other.read_text() == '{"notes": []}\n'


def _live(home: Path):
    """A real provider with the exporter behind a BatchSpanProcessor, as an application sets it up."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    exporter = SessionExporter(home=home, hold_s=1)
    provider = TracerProvider(resource=Resource.create({"service.name": "idle-app"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider, provider.get_tracer("idle-app")


def _eventually(check, seconds: float = 8.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def test_an_app_gone_idle_is_billed_after_hold_s_without_any_call(tmp_path):
    # The SDK's provider.force_flush() never reaches the exporter's force_flush: only quiet may close the session.
    provider, tracer = _live(tmp_path)
    with tracer.start_as_current_span("invoke_agent main", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "main", "gen_ai.conversation.id": "s-idle",
    }):
        with tracer.start_as_current_span("chat m", kind=SpanKind.CLIENT, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.conversation.id": "s-idle",
            "gen_ai.usage.input_tokens": 11, "gen_ai.usage.output_tokens": 3,
        }):
            pass
    assert provider.force_flush()
    assert (tmp_path / "sessions" / "s-idle").is_dir()
    billing = tmp_path / "billing.jsonl"
    try:
        assert _eventually(lambda: billing.exists() and billing.read_text().count("\n") == 1)
    finally:
        provider.shutdown()
    assert billing.read_text().count("\n") == 1  # billed once: shutdown found it billed


def test_a_trace_whose_root_is_in_another_service_is_written_after_hold_s_without_any_call(tmp_path):
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    provider, tracer = _live(tmp_path)
    remote = SpanContext(0x1234, 0x5678, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    with tracer.start_as_current_span("chat m", context=trace.set_span_in_context(NonRecordingSpan(remote)),
                                      kind=SpanKind.CLIENT, attributes={
                                          "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                                          "gen_ai.conversation.id": "s-orphan", "gen_ai.usage.input_tokens": 2,
                                      }):
        pass
    assert provider.force_flush()
    try:
        assert _eventually(lambda: (tmp_path / "sessions" / "s-orphan" / "meta.json").exists())
    finally:
        provider.shutdown()
