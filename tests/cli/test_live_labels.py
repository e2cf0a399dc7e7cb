"""Live path labels must equal the labels of the tree built afterwards from the same spans."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_agents.llm.scripts import load_script
from otel_agents.cli.live_labels import RUN_LABEL, LivePathLabels
from otel_agents.persistence.tree import build_tree
from otel_agents.persistence.tree_paths import position_of
from otel_agents.persistence.tree_walk import iter_nodes
from otel_agents.runtime.scenario import build_session
from otel_agents.tracing.spandata import from_readable
from otel_agents.tracing.telemetry import Telemetry

DEEP = str(Path(__file__).resolve().parents[1] / "data" / "deep-hooks.json")


@pytest.mark.parametrize("script_name", ["jack-and-jill", DEEP])
def test_live_labels_equal_tree_labels(script_name):
    labels = LivePathLabels()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(labels)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    script = load_script(script_name)
    session = build_session(script, telemetry=Telemetry(provider.get_tracer("t")))
    for prompt in script.prompts:
        asyncio.run(session.run(prompt))

    spans = [from_readable(s) for s in exporter.get_finished_spans()]
    tree = build_tree(spans, session.id)
    labelled = [(top["trace_id"], node["span_id"], node["path"]) for top, node in iter_nodes(tree) if node.get("path")]
    assert len(labelled) > 20
    for _, span_id, path in labelled:
        assert labels.label_of(span_id) == path, span_id
        position_of(path)  # a real label, not something shaped like one
    roots = [s.span_id for s in spans if s.parent_span_id is None]
    assert {labels.label_of(r) for r in roots} == {RUN_LABEL}
    per_run = [(trace_id, path) for trace_id, _, path in labelled]
    assert len(set(per_run)) == len(per_run), "a label names one node of its run"
