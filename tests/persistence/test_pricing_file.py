"""pricing.json: the entries a session's spans were priced with, each once, written atomically."""

from __future__ import annotations

import json

import pytest

from otel_agents.persistence.pricing_file import (
    PRICING_FILE, PricingFileError, PricingSnapshot, entry_of_span, read_pricing,
)
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData


def _span(sid: str, entry: dict | str | None) -> SpanData:
    attrs = {} if entry is None else {sc.LLM_PRICE_ENTRY: entry if isinstance(entry, str) else json.dumps(entry)}
    return SpanData("a" * 32, sid, None, "chat m", "CLIENT", 1, 2, attrs)


def _entry(pid: str, rate: float) -> dict:
    return {"id": pid, "model": "acme/m", "price_source": "config", "table": "price file /p.json",
            "date": "2026-11-25", "rates": {"input_cost_per_token": rate, "output_cost_per_token": rate}}


def test_each_entry_is_written_once_and_the_file_is_rewritten_only_for_a_new_one(tmp_path):
    snapshot = PricingSnapshot(tmp_path)
    assert snapshot.take(_span("1", _entry("price_a", 1e-6))) is True
    assert snapshot.take(_span("2", _entry("price_a", 1e-6))) is False
    assert snapshot.take(_span("3", None)) is False
    assert snapshot.take(_span("4", _entry("price_b", 2e-6))) is True
    entries = read_pricing(tmp_path)
    assert set(entries) == {"price_a", "price_b"} and "id" not in entries["price_a"]
    assert entries["price_b"]["rates"]["input_cost_per_token"] == 2e-6
    assert [p.name for p in tmp_path.iterdir()] == [PRICING_FILE]  # no temporary file left behind


def test_a_resumed_session_keeps_the_entries_of_earlier_runs(tmp_path):
    PricingSnapshot(tmp_path).take(_span("1", _entry("price_a", 1e-6)))
    PricingSnapshot(tmp_path).take(_span("2", _entry("price_b", 2e-6)))  # a later run's sink
    assert set(read_pricing(tmp_path)) == {"price_a", "price_b"}


@pytest.mark.parametrize("bad", ["not json", json.dumps({"id": "x"}), json.dumps([1])])
def test_a_malformed_entry_on_a_span_is_ignored(tmp_path, bad):
    assert entry_of_span(_span("1", bad)) is None
    assert PricingSnapshot(tmp_path).take(_span("1", bad)) is False and not (tmp_path / PRICING_FILE).exists()


def test_a_session_without_a_snapshot_has_no_entries_and_a_damaged_one_is_a_one_line_error(tmp_path):
    assert read_pricing(tmp_path) == {}
    (tmp_path / PRICING_FILE).write_text("{")
    with pytest.raises(PricingFileError, match="pricing.json is not valid JSON"):
        read_pricing(tmp_path)
    (tmp_path / PRICING_FILE).write_text(json.dumps({"entries": {"p": {"model": "m"}}}))
    with pytest.raises(PricingFileError, match="expected"):
        read_pricing(tmp_path)
