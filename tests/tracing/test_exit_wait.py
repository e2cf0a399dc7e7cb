"""The bounded exit: spans and metrics flushed side by side within one bound, what was not confirmed said once."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from otel_agents.tracing import semconv as sc
from otel_agents.tracing import setup
from otel_agents.tracing.setup import configure_tracing


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in list(os.environ):
        if var.startswith("OTEL_"):
            monkeypatch.delenv(var)


@pytest.fixture
def silent_endpoint():
    """An endpoint that takes connections and never answers (a receiver that hangs)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def _traced_run(monkeypatch, endpoint: str, timeout_s: str):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", timeout_s)
    tracing = configure_tracing()
    with tracing.telemetry.tracer.start_as_current_span("invoke_agent a") as span:
        span.set_attribute(sc.GEN_AI_OPERATION_NAME, sc.OP_INVOKE_AGENT)  # a metric point to send
    return tracing


def test_metrics_get_their_own_budget_when_spans_go_to_the_same_dead_endpoint(monkeypatch, silent_endpoint, capsys):
    # Span export used the whole wait, and the metrics export after it was abandoned with its warning.
    tracing = _traced_run(monkeypatch, silent_endpoint, "1")
    started = time.monotonic()
    assert tracing.shutdown(bound_s=1.8) is True
    assert time.monotonic() - started < 1.8
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" to ")[0] for line in lines] == ["warning: could not send metrics",
                                                          "warning: could not send spans"]
    assert f"OTLP endpoint {silent_endpoint}" in lines[0]


def test_what_the_bound_cut_short_is_said_for_metrics_too(monkeypatch, silent_endpoint, capsys):
    tracing = _traced_run(monkeypatch, silent_endpoint, "5")
    started = time.monotonic()
    assert tracing.shutdown(bound_s=0.5) is False
    assert time.monotonic() - started < 1.0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all("no answer within 0.5 s at exit" in line for line in lines)
    assert lines[1].startswith("warning: could not send metrics to OTLP endpoint")
    assert tracing.shutdown() is False  # the first call's answer, nothing said again
    assert capsys.readouterr().err == ""


def test_a_timeout_meant_as_milliseconds_neither_holds_the_exit_nor_goes_unsaid(monkeypatch, silent_endpoint, capsys):
    # OTEL_EXPORTER_OTLP_TIMEOUT=10000 is 10 s to the specification, 10000 s to the installed exporters
    # (seconds): the exit waited for hours.
    monkeypatch.setattr(setup, "MAX_EXIT_WAIT_S", 1.0)
    tracing = _traced_run(monkeypatch, silent_endpoint, "10000")
    (said,) = capsys.readouterr().err.splitlines()
    assert said.startswith("warning: the OTLP export timeout 10000 is read as seconds")
    started = time.monotonic()
    assert tracing.shutdown() is False
    assert time.monotonic() - started < 1.5
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all("no answer within 1 s at exit" in line for line in lines)


def test_the_process_exits_once_the_wait_is_over(tmp_path, silent_endpoint):
    # Nothing left behind (the SDK's at-exit shutdown, reader or exporter threads) holds the interpreter.
    code = (
        "import time\n"
        "from otel_agents.tracing import setup\n"
        "setup.MAX_EXIT_WAIT_S = 1.0\n"
        "t = setup.configure_tracing()\n"
        "with t.telemetry.tracer.start_as_current_span('invoke_agent a') as s:\n"
        "    s.set_attribute('gen_ai.operation.name', 'invoke_agent')\n"
        "t.shutdown()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=silent_endpoint, OTEL_METRICS_EXPORTER="otlp",
               OTEL_EXPORTER_OTLP_TIMEOUT="10000")
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert time.monotonic() - started < 15
    assert out.returncode == 0 and "Traceback" not in out.stderr
    assert out.stderr.count("no answer within 1 s at exit") == 2
