"""Metrics set-up from OTEL_*: nothing built unless asked, where --otlp-file puts the metrics, one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from otel_agents.tracing.metrics_setup import metrics_file_for

PROMPT = "Create Jack and Jill for a cafe discussion"


def test_metrics_file_sits_beside_the_span_file():
    assert metrics_file_for(Path("/x/run.jsonl")) == Path("/x/run.metrics.jsonl")
    assert metrics_file_for(Path("/x/spans.json")) == Path("/x/spans.metrics.json")
    assert metrics_file_for(Path("/x/out")) == Path("/x/out.metrics.jsonl")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(extra)
    return env


def test_nothing_configured_builds_no_meter_provider_and_imports_no_metrics_sdk():
    code = (
        "import sys\n"
        "from otel_agents.tracing.setup import configure_tracing\n"
        "from otel_agents.tracing.metrics import GenAiMetricsProcessor\n"
        "t = configure_tracing()\n"
        "procs = t.provider._active_span_processor._span_processors\n"
        "print(any(isinstance(getattr(p, 'inner', p), GenAiMetricsProcessor) for p in procs), 'opentelemetry.sdk.metrics' in sys.modules)\n"
    )
    def run(**env):
        out = subprocess.run([sys.executable, "-c", code], env=clean_env(**env), capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()
    assert run() == ["False", "False"]
    # The same probe sees them once something asks for metrics (so the check above can fail).
    assert run(OTEL_METRICS_EXPORTER="console") == ["True", "True"]
    assert run(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_METRICS_EXPORTER="none",
               OTEL_TRACES_EXPORTER="none") == ["False", "False"]


@pytest.mark.parametrize(
    "variables, message",
    [
        ({"OTEL_METRICS_EXPORTER": "prometheus"}, "unsupported OTEL_METRICS_EXPORTER 'prometheus'"),
        ({"OTEL_METRICS_EXPORTER": "console", "OTEL_METRIC_EXPORT_INTERVAL": "soon"},
         "OTEL_METRIC_EXPORT_INTERVAL must be a positive number of milliseconds, not 'soon'"),
        ({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:9/v1/metrics",
          "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "carrier-pigeon"}, "unsupported OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"),
    ],
)
def test_bad_metrics_configuration_is_a_one_line_usage_error(tmp_path, variables, message):
    env = clean_env(OTEL_AGENTS_HOME=str(tmp_path / "home"), **variables)
    out = subprocess.run([sys.executable, "-m", "otel_agents", "run", PROMPT], env=env, capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "home" / "billing.jsonl").exists()  # refused before anything was run


def test_sdk_disabled_still_writes_the_metrics_file_beside_an_asked_for_otlp_file(tmp_path):
    # README: "an --otlp-file asked for is still written"; its run.metrics.jsonl is part of it.
    env = clean_env(OTEL_AGENTS_HOME=str(tmp_path / "home"), OTEL_SDK_DISABLED="true", OTEL_METRICS_EXPORTER="none")
    out = subprocess.run([sys.executable, "-m", "otel_agents", "run", "--otlp-file", str(tmp_path / "x.jsonl"), PROMPT],
                         env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "x.jsonl").read_text().strip()
    assert '"resourceMetrics"' in (tmp_path / "x.metrics.jsonl").read_text()
