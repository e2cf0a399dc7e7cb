"""Ledger export: JSON lines as recorded, CSV with every field flattened and costs in plain decimals."""

from __future__ import annotations

import csv
import io
import json

from ledger_samples import llm, sample

from otel_agents.persistence.ledger_export import export_csv, export_jsonl
from otel_agents.persistence.ledger_read import CSV_COLUMNS


def _csv_rows(records):
    text = io.StringIO()
    assert export_csv(records, text) == len(records)
    return list(csv.DictReader(io.StringIO(text.getvalue(), newline="")))


def test_export_jsonl_and_csv():
    records = sample()
    out = io.BytesIO()
    assert export_jsonl(records, out) == 6
    assert [json.loads(line) for line in out.getvalue().splitlines()] == records
    rows = _csv_rows(records)
    assert list(rows[0]) == list(CSV_COLUMNS)
    assert rows[0]["tokens_input"] == "100" and rows[0]["cost_usd"] == "0.1" and rows[0]["tool"] == ""
    assert rows[2]["cost_usd"] == ""  # unpriced: empty, not 0
    assert rows[4]["tool"] == "task" and rows[4]["tokens_input"] == "" and rows[4]["status"] == "failed"
    assert rows[3]["error"] == "RateLimitError: slow down"
    assert rows[0]["repriced_cost_usd"] == rows[0]["repriced_price_source"] == ""  # never re-priced


def test_a_re_priced_record_exports_its_call_time_price_in_columns():
    record = dict(llm(1, cost=0.0012), repriced={"cost_usd": 3.4e-7, "price_source": "config"})
    (row,) = _csv_rows([record])
    assert (row["cost_usd"], row["repriced_cost_usd"], row["repriced_price_source"]) == ("0.0012", "0.00000034", "config")
    unpriced_then = dict(llm(2, cost=0.5), repriced={"cost_usd": None, "price_source": "unpriced"})
    assert _csv_rows([unpriced_then])[0]["repriced_cost_usd"] == ""


def test_costs_are_plain_decimals_without_exponent_or_float_noise():
    record = dict(llm(1, cost=3.4e-07), upstream_cost_usd=1.5e-11, upstream_inference_cost_usd=0.1 + 0.2)
    (row,) = _csv_rows([record])
    assert row["cost_usd"] == "0.00000034" and row["upstream_cost_usd"] == "0.000000000015"
    assert row["upstream_inference_cost_usd"] == "0.3"  # 12 decimals, as every cost is rounded
    assert _csv_rows([llm(2, cost=2e-05)])[0]["cost_usd"] == "0.00002"
    assert _csv_rows([llm(3, cost=1.0)])[0]["cost_usd"] == "1.0"
    assert _csv_rows([llm(4, cost=0)])[0]["cost_usd"] == "0.0" and _csv_rows([llm(5, cost=12)])[0]["cost_usd"] == "12.0"


def test_text_cells_that_a_spreadsheet_would_run_as_formulas_are_written_as_text():
    """An agent named =HYPERLINK(...) (any trace sender names agents) came out as a formula."""
    names = ['=HYPERLINK("http://evil","click")', "+1+1", "-2+3", "@SUM(A1)", "\tx", "plain", "a=b"]
    records = [dict(llm(n, cost=-0.5 if n == 1 else 0.25), agent_name=name, error=name)
               for n, name in enumerate(names, 1)]
    rows = _csv_rows(records)
    want = ["'" + name if name[0] in "=+-@\t\r" else name for name in names]
    assert [row["agent_name"] for row in rows] == want and [row["error"] for row in rows] == want
    assert rows[0]["cost_usd"] == "-0.5" and rows[0]["tokens_input"].isdigit()  # numbers as they are
    text = io.StringIO()
    export_csv([dict(llm(1), agent_name="\r=1+1")], text)
    assert ',"\'\r=1+1",' in text.getvalue()  # quoted, its CR kept (below)


def test_a_cell_holding_a_lone_cr_is_quoted_so_its_row_stays_one_row():
    """csv quotes a cell holding a character of the line end, and a lone CR is none of "\n"'s: a reader split
    the row at an error text's CR, shifting every later column."""
    records = [dict(llm(1), error="upstream said\rretry later"), dict(llm(2), agent_name="a\r\nb"), llm(3)]
    text = io.StringIO()
    assert export_csv(records, text) == 3
    rows = list(csv.DictReader(io.StringIO(text.getvalue(), newline="")))
    assert [row["error"] for row in rows][0] == "upstream said\rretry later"
    assert [row["agent_name"] for row in rows][1] == "a\r\nb"
    assert [row["record_id"] for row in rows] == [r["record_id"] for r in records]
    assert text.getvalue().endswith("\n") and "\r\n" not in text.getvalue().replace('a\r\nb', "")
