"""Re-pricing ledger records: only successful LLM records, the call-time price kept beside the new one."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal

import pytest

from otel_agents.llm.pricing import Price, PriceTable
from otel_agents.persistence.ledger_records import REPRICED, as_recorded, carry_repricing
from otel_agents.repricing import reprice, signed_usd, total, usd


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


def test_a_known_cost_is_kept_when_the_current_prices_have_none_for_its_model():
    record, unpriced = llm(cost=0.5), llm("t:2", cost=None, source="unpriced")
    record["model"] = unpriced["model"] = "acme/gone"
    before = dict(record)
    priced, (change,) = reprice([record, unpriced], PriceTable())
    assert priced == 2 and change.kept and (change.new_cost, change.new_source) == (None, "unpriced")
    assert record == before  # neither nulled nor marked re-priced
    assert unpriced["cost_usd"] is None and REPRICED not in unpriced


def test_a_re_priced_record_the_current_prices_cannot_price_keeps_its_price():
    record = llm(cost=0.5)
    reprice([record], PriceTable({"acme/m": Price(1e-6, 2e-6)}))
    before = dict(record)
    record["model"] = before["model"] = "acme/gone"
    (change,) = reprice([record], PriceTable())[1]
    assert change.kept and record == before


def _orphan_ledger(home, *records):
    """A ledger of records whose session is not saved (kept by a rebuild, and re-priced)."""
    lines = [dict(llm(rid, cost=cost, source=source), session_id="gone-session", model=model, price_id=None)
             for rid, model, cost, source in records]
    home.mkdir(exist_ok=True)
    (home / "billing.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return lines


def test_reprice_without_a_price_for_a_model_keeps_its_records_and_says_so(home, monkeypatch):
    from click.testing import CliRunner

    from otel_agents.cli import cli

    monkeypatch.delenv("OTEL_AGENTS_PRICES", raising=False)
    ledger = _orphan_ledger(home, ("t:1", "acme/tiny", 3.4e-7, "config"), ("t:2", "acme/tiny", 1.2e-6, "config"))
    result = CliRunner().invoke(cli, ["billing", "rebuild", "--reprice"])
    assert result.exit_code == 0, result.stderr
    assert "reprice: kept the recorded price of 2 acme/tiny records: the current prices have none for acme/tiny" \
        in result.stderr and "--prices FILE or OTEL_AGENTS_PRICES" in result.stderr
    assert "-> unpriced" not in result.stdout and "0.0 USD" not in result.stdout
    assert "reprice: 2 LLM records priced, none differently" in result.stdout
    assert "and the current prices" not in result.stdout
    assert [json.loads(x) for x in (home / "billing.jsonl").read_text().splitlines()] == ledger
    summary = CliRunner().invoke(cli, ["billing", "summary", "--json"])
    assert json.loads(summary.stdout)["total"]["cost_usd"] == pytest.approx(1.54e-6)


def test_the_reprice_total_says_unpriced_and_writes_differences_as_costs(home, monkeypatch, tmp_path):
    from click.testing import CliRunner

    from otel_agents.cli import cli

    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"acme/m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}))
    _orphan_ledger(home, ("t:1", "acme/m", 0.0048145, "config"))
    result = CliRunner().invoke(cli, ["billing", "rebuild", "--reprice", "--prices", str(prices), "--dry-run"])
    assert "0.0048145 (config) -> 0.0012 (config) (-0.0036145)" in result.stdout
    assert "their cost 0.0048145 -> 0.0012 USD (-0.0036145)" in result.stdout
    _orphan_ledger(home, ("t:1", "acme/m", None, "unpriced"), ("t:2", "acme/m", 0.001, "config"))
    result = CliRunner().invoke(cli, ["billing", "rebuild", "--reprice", "--prices", str(prices), "--dry-run"])
    assert "their cost 0.001 + 1 unpriced -> 0.0024 USD\n" in result.stdout


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
    assert usd(None) == "unpriced" and usd(0.1) == "0.1" and usd(0.0) == "0" and usd(2.0) == "2" and usd(1.5e-11) == "0.000000000015"
    assert total([0.1, 0.2, None]) == Decimal("0.3")
    assert signed_usd(Decimal("-0.00304450")) == "-0.0030445" and signed_usd(Decimal(0)) == "0"


# --- the session's pricing snapshot (issue 23) ------------------------------------------------


def _scripted_session(home):
    """A jack-and-jill run through the CLI, priced from litellm's map (the demo price)."""
    import os

    from click.testing import CliRunner

    from otel_agents.cli import cli

    os.environ.pop("OTEL_AGENTS_PRICES", None)
    result = CliRunner().invoke(cli, ["run", "--script", "jack-and-jill"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    session_id = next(x for x in result.stderr.splitlines() if x.startswith("session: ")).split(": ", 1)[1]
    ledger = [json.loads(x) for x in (home / "billing.jsonl").read_text().splitlines()]
    return home / "sessions" / session_id, ledger


def test_every_ledger_line_is_re_derived_from_its_session_alone(home, monkeypatch, tmp_path):
    import subprocess
    import sys

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    session_dir, ledger = _scripted_session(home)
    priced = [r for r in ledger if r["type"] == "llm" and r["status"] == "ok"]
    assert priced and all(r["price_id"] for r in priced)
    entries = json.loads((session_dir / "pricing.json").read_text())["entries"]
    assert {r["price_id"] for r in priced} == set(entries)
    (entry,) = entries.values()
    assert entry["model"] == "scripted/jack-and-jill" and entry["price_source"] == "litellm"
    assert entry["table"].startswith("litellm ") and entry["date"] == priced[0]["ts"][:10]
    # A fresh process that never ran the script (so litellm's map has no demo price) and reads
    # nothing but the session directory and the lines gives every line's cost back.
    copy = tmp_path / "copy"
    shutil.copytree(session_dir, copy, ignore=shutil.ignore_patterns("owner.lock"))
    code = (
        "import json, sys\n"
        "from otel_agents.persistence.pricing_file import read_pricing\n"
        "from otel_agents.repricing import snapshot_cost\n"
        "entries = read_pricing(sys.argv[1])\n"
        "print(json.dumps([snapshot_cost(json.loads(line), entries) for line in sys.stdin]))\n"
    )
    lines = "".join(json.dumps(r) + "\n" for r in priced)
    out = subprocess.run([sys.executable, "-c", code, str(copy)], input=lines, capture_output=True, text=True,
                         check=True, timeout=300)
    assert json.loads(out.stdout) == [[r["cost_usd"], r["price_source"]] for r in priced]


def test_reprice_with_another_table_shows_the_exact_difference_of_each_line_against_the_snapshot(home, monkeypatch):
    from click.testing import CliRunner

    from otel_agents.cli import cli

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    session_dir, ledger = _scripted_session(home)
    (price_id,) = json.loads((session_dir / "pricing.json").read_text())["entries"]
    prices = home / "other.json"
    prices.write_text(json.dumps({"scripted/jack-and-jill": {"input_cost_per_token": 2e-6, "output_cost_per_token": 5e-6}}))
    result = CliRunner().invoke(cli, ["billing", "rebuild", "--reprice", "--prices", str(prices), "--dry-run"])
    assert result.exit_code == 0, result.stderr
    shown = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith("$ ")}
    priced = [r for r in ledger if r["type"] == "llm" and r["status"] == "ok"]
    assert set(shown) == {r["record_id"] for r in priced}
    for r in priced:
        new = Decimal(2) * r["tokens"]["input"] / 10**6 + Decimal(5) * r["tokens"]["output"] / 10**6
        old = Decimal(repr(r["cost_usd"]))
        assert f": {usd(r['cost_usd'])} (litellm) -> {usd(float(new))} (config) ({signed_usd(new - old)})" in shown[r["record_id"]]
        assert f"[snapshot {price_id}: litellm " in shown[r["record_id"]] and "the snapshot gives" not in shown[r["record_id"]]
    assert "dry run: the ledger is unchanged" in result.stdout
    assert [json.loads(x) for x in (home / "billing.jsonl").read_text().splitlines()] == ledger


def test_a_line_the_snapshot_does_not_price_as_recorded_is_pointed_out(home, monkeypatch):
    from click.testing import CliRunner

    from otel_agents.cli import cli

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    session_dir, _ = _scripted_session(home)
    snapshot = json.loads((session_dir / "pricing.json").read_text())
    (entry,) = snapshot["entries"].values()
    entry["rates"]["output_cost_per_token"] *= 2  # the snapshot no longer tells the recorded story
    (session_dir / "pricing.json").write_text(json.dumps(snapshot))
    prices = home / "other.json"
    prices.write_text(json.dumps({"scripted/jack-and-jill": {"input_cost_per_token": 2e-6, "output_cost_per_token": 5e-6}}))
    result = CliRunner().invoke(cli, ["billing", "rebuild", "--reprice", "--prices", str(prices), "--dry-run"])
    flagged = [line for line in result.stdout.splitlines() if line.startswith("$ ") and "the snapshot gives" in line]
    assert flagged and len(flagged) == sum(1 for line in result.stdout.splitlines() if line.startswith("$ "))


def test_prices_without_reprice_or_a_bad_prices_file_is_one_line_and_exit_2(home, tmp_path):
    from click.testing import CliRunner

    from otel_agents.cli import cli

    good = tmp_path / "p.json"
    good.write_text("{}")
    alone = CliRunner().invoke(cli, ["billing", "rebuild", "--prices", str(good)])
    assert alone.exit_code == 2 and "--prices is used only with --reprice" in alone.stderr
    missing = CliRunner().invoke(cli, ["billing", "rebuild", "--reprice", "--prices", str(tmp_path / "none.json")])
    assert missing.exit_code == 2 and "cannot read prices" in missing.stderr and "Traceback" not in missing.stderr


def test_a_price_that_overflows_is_one_error_line_naming_model_and_file_and_the_ledger_stays(home, tmp_path):
    """1e308 a token printed "-> Infinity USD", wrote cost_usd null and made every call unpriced."""
    from click.testing import CliRunner

    from otel_agents.cli import cli

    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"acme/m": {"input_cost_per_token": 1e308, "output_cost_per_token": 1e308}}))
    _orphan_ledger(home, ("t:1", "acme/m", 0.0048145, "config"))
    before = (home / "billing.jsonl").read_bytes()
    result = CliRunner().invoke(cli, ["billing", "rebuild", "--reprice", "--prices", str(prices)])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: ") and "'acme/m'" in line and str(prices.resolve()) in line and "not a finite" in line
    assert "Infinity" not in result.stdout and (home / "billing.jsonl").read_bytes() == before


def test_a_record_whose_cost_stays_and_only_its_price_source_changes_is_not_priced_differently(home, tmp_path):
    """It was listed and counted as priced differently: `0.0012 (litellm) -> 0.0012 (config) (+0.0)`."""
    from click.testing import CliRunner

    from otel_agents.cli import cli

    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"acme/m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}))
    _orphan_ledger(home, ("t:1", "acme/m", 0.0012, "litellm"), ("t:2", "acme/m", 0.0048145, "config"))
    result = CliRunner().invoke(cli, ["billing", "rebuild", "--reprice", "--prices", str(prices)])
    assert result.exit_code == 0, result.output
    assert [line.split()[1] for line in result.stdout.splitlines() if line.startswith("$ ")] == ["t:2"]
    assert ("reprice: 2 LLM records priced, 1 differently; their cost 0.0048145 -> 0.0012 USD (-0.0036145); "
            "1 record kept its cost and only changed price source\n") in result.stdout
    assert "0.0 " not in result.stdout and "+0.0" not in result.stdout
    written = {r["record_id"]: r for r in map(json.loads, (home / "billing.jsonl").read_text().splitlines())}
    assert written["t:1"]["price_source"] == "config" and written["t:1"]["cost_usd"] == 0.0012  # its true source
    _orphan_ledger(home, ("t:1", "acme/m", 0.0012, "litellm"))
    alone = CliRunner().invoke(cli, ["billing", "rebuild", "--reprice", "--prices", str(prices), "--dry-run"])
    assert "$ " not in alone.stdout and ("reprice: 1 LLM records priced, none differently; 1 record kept its cost "
                                         "and only changed price source\n") in alone.stdout
