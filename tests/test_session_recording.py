"""session_recording: the provider adopted or built, the recorder attached and detached, set-up errors in one line."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_agents.persistence.paths import Paths
from otel_agents.session_recording import (
    AdoptedTracing,
    RecordingConfigError,
    SessionBusyError,
    StorageUnwritable,
    configure,
    own_session,
    start_recording,
)
from otel_agents.tracing import semconv as sc

SESSION = "20260101-000000-abcdef"


@pytest.fixture(autouse=True)
def inline_recorder(monkeypatch):
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)


def app_provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def run_span(tracing, session_id: str = SESSION) -> None:
    attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.SESSION_ID: session_id, sc.GEN_AI_AGENT_NAME: "main"}
    with tracing.telemetry.tracer.start_as_current_span("invoke_agent main", attributes=attrs):
        pass


def test_an_adopted_provider_keeps_its_exporter_and_is_not_shut_down(tmp_path):
    provider, exporter = app_provider()
    tracing = configure(adopt=provider)
    assert isinstance(tracing, AdoptedTracing) and tracing.provider is provider
    recording = start_recording(tracing, Paths(tmp_path / "sessions", tmp_path / "billing.jsonl"), SESSION)
    run_span(tracing)
    assert recording.close()
    tracing.shutdown()
    with provider.get_tracer("app").start_as_current_span("after"):
        pass  # the application's provider still works after our shutdown
    assert [s.name for s in exporter.get_finished_spans()] == ["invoke_agent main", "after"]
    assert (tmp_path / "sessions" / SESSION / "tree.json.gz").is_file()


def test_a_closed_recording_hears_no_later_span_and_no_later_record(tmp_path):
    tracing = configure(adopt=app_provider()[0])
    recording = start_recording(tracing, Paths(tmp_path / "sessions", tmp_path / "billing.jsonl"), SESSION)
    assert recording.recorder in tracing.telemetry.listeners
    recording.close()
    assert recording.recorder not in tracing.telemetry.listeners
    directory = tmp_path / "sessions" / SESSION
    before = {p.name: p.stat().st_size for p in directory.iterdir()}
    run_span(tracing)  # the same session's id: a recorder still attached would journal it
    tracing.telemetry.record({"event_type": "piece_of_text", "message_id": "msg_000001", "agent_id": "agent_001",
                              "content": "late", "cause": "msg_000000"})
    assert {p.name: p.stat().st_size for p in directory.iterdir()} == before


def test_without_an_application_provider_one_is_built_from_the_environment(monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "nonsense")
    with pytest.raises(RecordingConfigError, match="OTEL_TRACES_EXPORTER"):
        configure()
    monkeypatch.delenv("OTEL_TRACES_EXPORTER")
    tracing = configure(batch=False)
    assert not isinstance(tracing, AdoptedTracing) and tracing.provider is not None
    tracing.shutdown()


def test_an_unwritable_ledger_is_refused_before_the_session_exists(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    tracing = configure(adopt=app_provider()[0])
    with pytest.raises(StorageUnwritable) as caught:
        start_recording(tracing, Paths(tmp_path / "sessions", blocker / "billing.jsonl"), SESSION)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "sessions" / SESSION).exists()


def test_a_session_owned_elsewhere_is_busy_and_left_as_it_was(tmp_path):
    paths = Paths(tmp_path / "sessions", tmp_path / "billing.jsonl")
    tracing = configure(adopt=app_provider()[0])
    first = start_recording(tracing, paths, SESSION)
    try:
        with pytest.raises(SessionBusyError):
            own_session(paths.session_dir(SESSION))
    finally:
        first.close()
    own_session(paths.session_dir(SESSION)).release()  # free again once closed


def test_an_adopted_provider_gets_our_metrics_and_our_shutdown_writes_them(tmp_path, monkeypatch):
    monkeypatch.delenv("OTEL_METRICS_EXPORTER", raising=False)
    provider, _ = app_provider()
    tracing = configure(tmp_path / "run.jsonl", adopt=provider)
    run_span(tracing)
    metrics_file = tmp_path / "run.metrics.jsonl"
    assert not metrics_file.exists()  # nothing exported before the recording ends
    tracing.shutdown()
    written = metrics_file.read_text()
    assert "gen_ai.invoke_agent.duration" in written
    run_span(tracing)  # the application goes on; our detached metrics hear nothing more
    provider.force_flush()
    assert metrics_file.read_text() == written


def test_a_bad_metrics_setting_refuses_an_adopted_provider_in_one_line(monkeypatch):
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "statsd")
    with pytest.raises(RecordingConfigError, match="^unsupported OTEL_METRICS_EXPORTER 'statsd'"):
        configure(adopt=app_provider()[0])


def test_a_malformed_header_list_refuses_an_adopted_provider_without_echoing_it(monkeypatch):
    """Our meter provider would have the SDK parse (and log) the list, as a built tracer provider would."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "Authorization: Bearer sk-live-SECRET123")
    with pytest.raises(RecordingConfigError, match="^OTEL_EXPORTER_OTLP_METRICS_HEADERS must be") as caught:
        configure(adopt=app_provider()[0])
    assert "SECRET" not in str(caught.value)


def test_a_run_whose_recorder_process_dies_makes_no_further_model_call(tmp_path):
    """The ledger is the recorder process's to write: a run that went on after it died spent money
    no ledger would ever hold. At most the call under way when it died goes unbilled."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    from click.testing import CliRunner

    from otel_agents.cli import cli
    from otel_agents.persistence.ledger_read import read_records
    from otel_agents.persistence.ownership import owner_of

    home = tmp_path / "home"
    prompts = 30
    script = tmp_path / "slow.json"
    script.write_text(json.dumps({"name": "slow", "agents": {
        "main": [{"text": f"answer {n}", "latency_ms": 200} for n in range(prompts)]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "--script", str(script),
                             *[f"p{n}" for n in range(prompts)]],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while len(read_records(home / "billing.jsonl")) < 3:  # a few runs billed by the recorder process
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        (directory,) = (home / "sessions").iterdir()
        recorder = owner_of(directory)["recorder"]
        os.kill(recorder, signal.SIGKILL)
    finally:
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "no further model call is made" in err and "error: session" in err
    answered = [line for line in out.splitlines() if line.startswith("answer ")]
    assert len(answered) < prompts  # the run stopped
    repaired = CliRunner().invoke(cli, ["sessions", "repair", directory.name], env={"OTEL_AGENTS_HOME": str(home)})
    assert repaired.exit_code == 0, repaired.output
    billed = [r for r in read_records(home / "billing.jsonl") if r.get("type") == "llm" and r.get("cost_usd") is not None]
    assert len(answered) - len(billed) <= 1, (len(answered), len(billed))
