"""What reaches a slow or failing backend, and the one exit warning that counts what did not.

In-process, with the provider ``configure_tracing`` builds from the standard variables and
real HTTP receivers on loopback: a cold backend whose first answer comes after the export
timeout (the MLflow case of issue 19), a receiver that never answers, a healthy one.
"""

from __future__ import annotations

import os
import time

import pytest

from otel_agents.tracing.setup import SHUTDOWN_GRACE_S, configure_tracing, shutdown_bound_s
from support.otlp_receivers import HttpTraceReceiver, flatten_spans


@pytest.fixture
def otel_env(monkeypatch):
    for var in list(os.environ):
        if var.startswith("OTEL_"):
            monkeypatch.delenv(var)
    return monkeypatch


def _spans_over_time(tracing, batches: int, per_batch: int, pause_s: float) -> set[str]:
    ids = set()
    tracer = tracing.telemetry.tracer
    for number in range(batches):
        with tracer.start_as_current_span(f"root{number}") as root:
            ids.add(format(root.get_span_context().span_id, "016x"))
            for child in range(per_batch - 1):
                with tracer.start_as_current_span(f"child{number}.{child}") as span:
                    ids.add(format(span.get_span_context().span_id, "016x"))
        time.sleep(pause_s)
    return ids


def test_a_cold_backend_late_first_answer_loses_nothing_and_says_nothing(otel_env, capsys):
    # The first request waits 2 s, twice the export timeout: the exporter gives up on it, and
    # the batches after it used to be dropped unsent for 15 s. Now they wait and go with the retry.
    with HttpTraceReceiver(first_answer_delay=2.0) as receiver:
        otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        otel_env.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
        otel_env.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
        tracing = configure_tracing()
        ids = _spans_over_time(tracing, batches=8, per_batch=3, pause_s=0.2)
        assert tracing.shutdown() is True
        assert {s.span_id for s in receiver.spans()} == ids  # the retry carried everything held
        calls = receiver.wait_for_calls(2, timeout=5)  # the first request is stored after 2 s
        sizes = sorted(len(flatten_spans([call.request])) for call in calls)
        assert sizes[0] < sizes[-1] == len(ids)  # the first batch, late; then the retry of everything
    (network,) = tracing.network_processors
    assert network.offered == len(ids) == network.exporter.delivered
    assert capsys.readouterr().err == ""


def test_a_first_answer_within_a_long_timeout_is_waited_for_at_exit(otel_env, capsys):
    with HttpTraceReceiver(first_answer_delay=2.5) as receiver:
        otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        otel_env.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "4")  # longer than the default bound of 4 s
        otel_env.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")  # the traces variable wins
        assert shutdown_bound_s() == 4 + SHUTDOWN_GRACE_S
        tracing = configure_tracing()
        ids = _spans_over_time(tracing, batches=2, per_batch=2, pause_s=0)
        started = time.monotonic()
        assert tracing.shutdown() is True  # everything goes at exit, and exit waits the 2.5 s
        assert 2.3 <= time.monotonic() - started < 4 + SHUTDOWN_GRACE_S
        assert {s.span_id for s in receiver.spans()} == ids
    assert capsys.readouterr().err == ""


def test_a_receiver_that_never_answers_costs_the_timeout_once_and_one_counted_warning(otel_env, capsys):
    with HttpTraceReceiver("hang", hang_seconds=30) as receiver:
        otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        otel_env.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
        otel_env.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
        tracing = configure_tracing()
        ids = _spans_over_time(tracing, batches=5, per_batch=2, pause_s=0.3)
        started = time.monotonic()
        answer = tracing.shutdown()
        assert time.monotonic() - started <= 1 + SHUTDOWN_GRACE_S + 0.5
        assert 1 <= len(receiver.calls) <= 3  # one timeout at a time, not one per batch
        # A command's owner shuts down again on its way out: the same answer, no second warning or wait.
        started = time.monotonic()
        assert tracing.shutdown() is answer
        assert time.monotonic() - started < 0.5
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"warning: could not send spans to the OTLP endpoint {receiver.endpoint}")
    assert f"): {len(ids)} of {len(ids)} spans not delivered" in line


def test_a_healthy_receiver_gets_everything_and_no_warning(otel_env, capsys):
    with HttpTraceReceiver() as receiver:
        otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        tracing = configure_tracing()
        ids = _spans_over_time(tracing, batches=3, per_batch=3, pause_s=0)
        assert tracing.shutdown() is True
        assert {s.span_id for s in receiver.spans()} == ids
    (network,) = tracing.network_processors
    assert network.undelivered == 0 and network.exit_report(True, 1.0) is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("value", ["soon", "0", "-3", "nan", "inf"])
def test_a_bad_timeout_is_a_configuration_error(otel_env, value):
    from otel_agents.tracing.setup import ConfigError

    otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    otel_env.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", value)
    with pytest.raises(ConfigError, match=f"OTEL_EXPORTER_OTLP_TIMEOUT must be a positive number of seconds, not '{value}'"):
        configure_tracing()
