"""The price entry a chat span was priced with: its id on every priced span, the entry once per trace."""

from __future__ import annotations

import json

from hypothesis import given, strategies as st

from otel_agents.llm.price_snapshot import PriceEntries, cost_from_entry, price_entry, price_id
from otel_agents.llm.pricing import Price, PriceTable, Usage
from otel_agents.tracing import semconv as sc


def test_a_price_file_entry_names_the_file_and_its_rates(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"acme/m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}))
    entry = price_entry(PriceTable.from_file(path), "acme/m")
    assert entry["price_source"] == "config" and entry["table"] == f"price file {path.resolve()}"
    assert entry["rates"]["input_cost_per_token"] == 1e-6 and entry["rates"]["output_cost_per_token"] == 2e-6


def test_a_litellm_entry_names_litellm_and_its_version():
    from importlib.metadata import version

    entry = price_entry(PriceTable(), "openai/gpt-4o")
    assert entry["price_source"] == "litellm" and entry["table"] == f"litellm {version('litellm')} model_cost"
    assert entry["rates"]["input_cost_per_token"] > 0 and "max_tokens" not in entry["rates"]  # prices only


def test_an_unknown_model_has_no_entry():
    assert price_entry(PriceTable(), "acme/never-heard-of-it") is None
    assert PriceEntries().attributes(PriceTable(), "acme/never-heard-of-it", 1) == {}


def test_the_entry_goes_once_per_trace_and_the_id_on_every_span():
    table, entries = PriceTable({"acme/m": Price(1e-6, 2e-6)}), PriceEntries()
    first, second = (entries.attributes(table, "acme/m", 7) for _ in range(2))
    other_trace = entries.attributes(table, "acme/m", 8)
    assert first[sc.LLM_PRICE_ID] == second[sc.LLM_PRICE_ID] == other_trace[sc.LLM_PRICE_ID]
    assert sc.LLM_PRICE_ENTRY in first and sc.LLM_PRICE_ENTRY not in second and sc.LLM_PRICE_ENTRY in other_trace
    entry = json.loads(first[sc.LLM_PRICE_ENTRY])
    assert entry["id"] == first[sc.LLM_PRICE_ID] and entry["model"] == "acme/m" and entry["date"]


@given(a=st.floats(1e-9, 1e-3), b=st.floats(1e-9, 1e-3))
def test_the_id_changes_with_the_rates_and_only_with_them(a, b):
    def entry(rate):
        return {"model": "acme/m", "price_source": "config", "table": "t", "rates": {"input_cost_per_token": rate}}

    assert (price_id(entry(a)) == price_id(entry(b))) == (a == b)
    assert price_id({**entry(a), "date": "2020-01-01"}) == price_id(entry(a))


@given(inp=st.integers(0, 10**6), out=st.integers(0, 10**6))
def test_a_config_entry_prices_again_exactly_as_its_table_did(inp, out):
    table = PriceTable({"acme/m": Price(1.1e-6, 3.3e-6)})
    usage = Usage(input_tokens=inp, output_tokens=out)
    assert cost_from_entry(price_entry(table, "acme/m"), usage) == table.cost("acme/m", usage)
