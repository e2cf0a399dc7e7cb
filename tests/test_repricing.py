"""Re-pricing ledger records: only successful LLM records, the call-time price kept beside the new one."""

from __future__ import annotations

from decimal import Decimal

import pytest

from otel_agents.llm.pricing import Price, PriceTable
from otel_agents.persistence.ledger_records import REPRICED, as_recorded, carry_repricing
from otel_agents.repricing import reprice, total, usd


def llm(rid="t:1", cost=0.001, source="config", status="ok", tokens=(1000, 100, 0, 0, 0), ts="2025-03-02T10:00:00Z"):
    keys = ("input", "output", "cache_read", "cache_write", "reasoning")
    counts = dict(zip(keys, tokens))
    counts["total"] = counts["input"] + counts["output"]
    return {"record_id": rid, "ts": ts, "type": "llm", "status": status, "model": "acme/m",
            "tokens": counts, "cost_usd": cost, "price_source": source}


def test_reprice_prices_successful_llm_records_and_remembers_the_call_time_price():
    table = PriceTable({"acme/m": Price(1e-6, 2e-6, cache_read_per_token=1e-7)})
    records = [
        llm("t:1", cost=0.5),
        llm("t:2", cost=None, source="unpriced", tokens=(1000, 100, 400, 0, 0)),
        llm("t:3", cost=None, source=None, status="failed", tokens=(0, 0, 0, 0, 0)),
        {"record_id": "t:4", "type": "tool", "status": "ok", "tool": "task"},
        llm("t:5", cost=0.0012),  # already at today's price
    ]
    priced, changes = reprice(records, table)
    assert priced == 3 and [c.record_id for c in changes] == ["t:1", "t:2"]
    assert records[0]["cost_usd"] == pytest.approx(0.0012) and records[0][REPRICED] == {
        "cost_usd": 0.5, "price_source": "config"}
    assert records[1]["cost_usd"] == pytest.approx(600e-6 + 400e-7 + 200e-6)
    assert records[1][REPRICED] == {"cost_usd": None, "price_source": "unpriced"}
    assert records[2]["cost_usd"] is None and REPRICED not in records[2]
    assert REPRICED not in records[4]
    assert as_recorded(records[0])["cost_usd"] == 0.5 and REPRICED not in as_recorded(records[0])


def test_repricing_back_to_the_call_time_price_forgets_the_marker():
    record = llm(cost=0.5)
    reprice([record], PriceTable({"acme/m": Price(1e-6, 2e-6)}))
    assert record[REPRICED]["cost_usd"] == 0.5
    priced, changes = reprice([record], PriceTable({"acme/m": Price(4.9e-4, 1e-4)}))
    assert changes[0].new_cost == pytest.approx(0.5) and record["cost_usd"] == pytest.approx(0.5)
    assert REPRICED not in record


def test_an_unknown_model_reprices_to_unpriced_not_zero():
    record = llm(cost=0.5)
    record["model"] = "acme/gone"
    _, (change,) = reprice([record], PriceTable())
    assert (change.new_cost, change.new_source) == (None, "unpriced") and record["cost_usd"] is None


def test_a_rebuild_keeps_a_reprice_only_of_the_same_recording():
    derived = llm(cost=0.5)
    repriced = dict(derived, cost_usd=0.9, price_source="config", **{REPRICED: {"cost_usd": 0.5, "price_source": "config"}})
    assert carry_repricing(repriced, derived) == repriced
    assert carry_repricing(None, derived) == derived
    changed_span = dict(derived, cost_usd=0.7)  # the tree now says something else: it wins
    assert carry_repricing(repriced, changed_span) == changed_span


def test_time_of_day_prices_use_the_records_own_time():
    entry = {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6,
             "off_peak_pricing": {"hours_utc": "16:30-00:30", "input_cost_per_token": 5e-7,
                                  "output_cost_per_token": 5e-7}}
    table = PriceTable({"acme/m": entry})
    day, night = llm("t:day", ts="2025-03-02T10:00:00Z"), llm("t:night", ts="2025-03-02T20:00:00.5Z")
    reprice([day, night], table)
    assert day["cost_usd"] == pytest.approx(1100e-6) and night["cost_usd"] == pytest.approx(550e-6)


def test_usd_and_total_are_exact():
    assert usd(None) == "unpriced" and usd(0.1) == "0.1" and usd(0.0) == "0.0" and usd(1.5e-11) == "0.000000000015"
    assert total([0.1, 0.2, None]) == Decimal("0.3")
