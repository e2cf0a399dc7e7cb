"""Trace files read from disk for import: every real fixture, and a file that cannot be read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_agents.persistence.importers import read_trace_file
from otel_agents.tracing.decoding import ImportFormatError

from support.shared_fixtures import fixture_files, require_fixtures

ALL_FIXTURES = fixture_files("**/*")


def test_the_fixture_set_is_there():
    require_fixtures()
    names = {p.name for p in ALL_FIXTURES}
    assert {"testTrace.json", "ui_01.json", "otlp2jaeger-out.json", "example_trace.json"} <= names


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_decodes_into_well_formed_spans(path):
    require_fixtures(path)
    spans = read_trace_file(path)
    assert spans
    raw = json.loads(path.read_text())
    assert "resourceSpans" in raw or "data" in raw or "spans" in raw
    keys = set()
    for span in spans:
        assert len(span.trace_id) == 32 and int(span.trace_id, 16)
        assert len(span.span_id) == 16 and int(span.span_id, 16)
        assert span.parent_span_id is None or len(span.parent_span_id) == 16
        assert span.kind in {"INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"}
        assert span.status in {"UNSET", "OK", "ERROR"}
        assert span.end_ns is None or span.end_ns >= span.start_ns > 10**18  # ns since 1970, after 2001
        assert span.resource.get("service.name")
        keys.add((span.trace_id, span.span_id))
    assert len(keys) == len(spans), "span ids are unique after decoding"


def test_a_file_that_cannot_be_read_is_named(tmp_path):
    with pytest.raises(ImportFormatError, match=r"missing\.json:0: cannot read"):
        read_trace_file(tmp_path / "missing.json")

