"""OTEL_TRACES_SAMPLER decides what is sent, per trace; the session directory and the ledger keep every span.

Unit checks read the variables and drive ``TraceSampling`` with real SDK spans; the end-to-end
check runs the real CLI twice at once (ratio 0 and ratio 1) against real OTLP receivers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased, StaticSampler, TraceIdRatioBased

from otel_agents.tracing.network_export import NetworkExportProcessor
from otel_agents.tracing.sampling import SamplerConfigError, TraceSampling, sampler_from_env
from otel_agents.tracing.setup import ConfigError, configure_tracing
from support.otlp_receivers import HttpTraceReceiver

PROMPT = "Create Jack and Jill for a cafe discussion"


@pytest.mark.parametrize(
    "name, arg, kind, ratio",
    [
        ("always_on", None, StaticSampler, None),
        ("ALWAYS_OFF", None, StaticSampler, None),
        ("traceidratio", "0.25", TraceIdRatioBased, 0.25),
        ("traceidratio", None, TraceIdRatioBased, 1.0),  # the specification's default
        ("parentbased_traceidratio", "0", ParentBased, 0.0),
        ("parentbased_always_off", None, ParentBased, None),
    ],
)
def test_the_standard_names_build_the_sdk_samplers(monkeypatch, name, arg, kind, ratio):
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", name)
    if arg is None:
        monkeypatch.delenv("OTEL_TRACES_SAMPLER_ARG", raising=False)
    else:
        monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", arg)
    sampler = sampler_from_env()
    assert isinstance(sampler, kind)
    if ratio is not None:
        root = sampler._root if isinstance(sampler, ParentBased) else sampler
        assert root.rate == ratio


def test_unset_means_every_trace_is_sent(monkeypatch):
    monkeypatch.delenv("OTEL_TRACES_SAMPLER", raising=False)
    assert sampler_from_env() is None


@pytest.mark.parametrize(
    "name, arg, message",
    [
        ("jaeger_remote", None, "unsupported OTEL_TRACES_SAMPLER 'jaeger_remote'"),
        ("traceidratio", "half", "OTEL_TRACES_SAMPLER_ARG must be a ratio between 0 and 1 for traceidratio, not 'half'"),
        ("parentbased_traceidratio", "1.5", "not '1.5'"),
        ("traceidratio", "nan", "not 'nan'"),
    ],
)
def test_a_bad_sampler_is_a_clear_configuration_error(monkeypatch, name, arg, message):
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", name)
    if arg is not None:
        monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", arg)
    with pytest.raises(SamplerConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sampler_from_env()
    with pytest.raises(ConfigError):  # what the CLI reports as a usage error, exit 2
        configure_tracing()


class _Ids(IdGenerator):
    """Trace ids drawn by hypothesis, so the ratio sampler meets every part of the id space."""

    def __init__(self, trace_ids):
        self._trace_ids = iter(trace_ids)
        self._span = 0

    def generate_trace_id(self) -> int:
        return next(self._trace_ids)

    def generate_span_id(self) -> int:
        self._span += 1
        return self._span


@settings(max_examples=40, deadline=None)
@given(
    ratio=st.floats(0.0, 1.0),
    trace_ids=st.lists(st.integers(1, 2**128 - 1), min_size=1, max_size=8, unique=True),
    parent_based=st.booleans(),
)
def test_every_trace_is_sent_whole_or_not_at_all_and_the_provider_keeps_all(ratio, trace_ids, parent_based):
    sampler = TraceIdRatioBased(ratio)
    network = InMemorySpanExporter()
    local = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_ON, id_generator=_Ids(trace_ids))
    provider.add_span_processor(SimpleSpanProcessor(local))
    processor = NetworkExportProcessor(
        SimpleSpanProcessor(network), network, TraceSampling(ParentBased(sampler) if parent_based else sampler)
    )
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    for _ in trace_ids:
        with tracer.start_as_current_span("root"):
            for _ in range(2):
                with tracer.start_as_current_span("child"):
                    tracer.start_span("leaf").end()
    provider.shutdown()
    assert len(local.get_finished_spans()) == 5 * len(trace_ids)  # the local copy has everything
    kept = {tid for tid in trace_ids if sampler.should_sample(None, tid, "root").decision.is_sampled()}
    sent = network.get_finished_spans()
    assert {s.context.trace_id for s in sent} == kept  # the decision is the SDK sampler's, per trace id
    assert len(sent) == 5 * len(kept)  # whole traces
    assert processor.offered == len(sent) and processor.sampled_out == 5 * (len(trace_ids) - len(kept))


def _run_cli(tmp: Path, tag: str, env_extra: dict[str, str]) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(env_extra, OTEL_AGENTS_HOME=str(tmp / tag))
    return subprocess.Popen(
        [sys.executable, "-m", "otel_agents", "run", "--otlp-file", str(tmp / f"{tag}.jsonl"), PROMPT],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp,
    )


def _session(home: Path) -> tuple[list[dict], list[dict]]:
    (directory,) = (home / "sessions").iterdir()
    journal = [orjson.loads(line) for line in (directory / "spans.jsonl").read_bytes().splitlines()]
    ledger = [orjson.loads(line) for line in (home / "billing.jsonl").read_bytes().splitlines()]
    return journal, ledger


def _otlp_file_spans(path: Path) -> int:
    return sum(
        len(scope["spans"])
        for line in path.read_bytes().splitlines()
        for resource in orjson.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
    )


def test_ratio_zero_sends_nothing_and_ratio_one_everything_while_the_session_and_ledger_are_complete(tmp_path):
    with HttpTraceReceiver() as none_receiver, HttpTraceReceiver() as all_receiver:
        jobs = {
            "ratio0": {"OTEL_EXPORTER_OTLP_ENDPOINT": none_receiver.endpoint,
                       "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"},
            "ratio1": {"OTEL_EXPORTER_OTLP_ENDPOINT": all_receiver.endpoint,
                       "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1"},
        }
        procs = {tag: _run_cli(tmp_path, tag, env) for tag, env in jobs.items()}
        results = {tag: (proc.communicate(timeout=120), proc.returncode) for tag, proc in procs.items()}
        for tag, ((_, stderr), code) in results.items():
            assert code == 0, (tag, stderr)
            assert "warning: could not send" not in stderr, (tag, stderr)  # a sampled-out span is not a lost one
        assert none_receiver.calls == []  # nothing over the wire
        received = all_receiver.spans()
    journals = {tag: _session(tmp_path / tag) for tag in jobs}
    (j0, ledger0), (j1, ledger1) = journals["ratio0"], journals["ratio1"]
    ended = lambda journal: {line["end"] for line in journal if "end" in line}  # noqa: E731
    assert len(ended(j0)) == len(ended(j1)) == len(received) > 30  # the session has every span either way
    assert {s.span_id for s in received} == ended(j1)
    assert _otlp_file_spans(tmp_path / "ratio0.jsonl") == len(received)  # --otlp-file is local: whole
    assert len(ledger0) == len(ledger1) > 0
    for journal, ledger in ((j0, ledger0), (j1, ledger1)):
        billable = {line["start"] for line in journal
                    if "start" in line and line["name"].startswith(("chat ", "execute_tool "))}
        assert {record["span_id"] for record in ledger} == billable  # every attempt and tool call billed
    usage = lambda ledger: sorted(str(r.get("tokens")) for r in ledger)  # noqa: E731
    assert usage(ledger0) == usage(ledger1)
