"""Shared fixtures: real tracing into memory, the scripted model, isolated homes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Timing belongs to the benchmarks: with test files running in parallel, a slow example or a slow
# draw says how busy the machine is, not that a property fails. Tests that set these keep theirs.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

# litellm must never fetch its price map from the network, in tests either.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
# Make tests/support importable as `support` whatever pytest's import mode.
sys.path.insert(0, str(Path(__file__).parent))

@pytest.fixture
def memory_tracing():
    """A real TracerProvider with an in-memory exporter and a recording listener."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_agents.tracing.setup import TRACER_NAME
    from otel_agents.tracing.telemetry import Telemetry

    class Recorder:
        def __init__(self):
            self.records = []
            self.logs = []

        def on_record(self, span, record, ts_ns):
            self.records.append(dict(record))

        def on_log(self, span, level, message, ts_ns):
            self.logs.append((level, message))

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    recorder = Recorder()
    telemetry = Telemetry(provider.get_tracer(TRACER_NAME), [recorder])

    class MemoryTracing:
        pass

    mt = MemoryTracing()
    mt.provider, mt.exporter, mt.recorder, mt.telemetry = provider, exporter, recorder, telemetry
    mt.spans = exporter.get_finished_spans
    yield mt
    provider.shutdown()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An isolated OTEL_AGENTS_HOME; nothing may land in the working directory."""
    path = tmp_path / "home"
    monkeypatch.setenv("OTEL_AGENTS_HOME", str(path))
    for var in list(os.environ):
        if var.startswith("OTEL_EXPORTER_OTLP") or var in {"OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"}:
            monkeypatch.delenv(var, raising=False)
    return path


@pytest.fixture
def no_sleep():
    """A sleep that records delays instead of waiting (retry tests)."""
    delays = []

    async def sleep(seconds):
        delays.append(seconds)

    sleep.delays = delays
    return sleep
