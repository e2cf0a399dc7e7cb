"""``otel-agents billing summary|export|rebuild`` over a home written by real scripted sessions."""

from __future__ import annotations

import asyncio
import csv
import gzip
import io
import json
import shutil
from decimal import Decimal
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.repricing import signed_usd, usd

PRICE_IN, PRICE_OUT = 1.1e-6, 3.3e-6


async def _no_sleep(seconds):
    return None


def _record_session(home: Path, priced: bool, prompts: list[str]) -> str:
    """One jack-and-jill session through the real runtime, recorder and ledger."""
    from opentelemetry.sdk.trace import TracerProvider

    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.pricing import Price, PriceTable
    from otel_agents.llm.retry import RetryPolicy
    from otel_agents.llm.scripts import load_script
    from otel_agents.persistence.recorder import SessionRecorder
    from otel_agents.persistence.store import SessionStore
    from otel_agents.runtime.scenario import build_session
    from otel_agents.runtime.session import RunContext
    from otel_agents.tracing.setup import TRACER_NAME
    from otel_agents.tracing.telemetry import Telemetry

    provider = TracerProvider()
    telemetry = Telemetry(provider.get_tracer(TRACER_NAME))
    script = load_script("jack-and-jill")
    prices = PriceTable({"scripted/jack-and-jill": Price(PRICE_IN, PRICE_OUT)} if priced else {})
    llm = LLMClient(telemetry, retry=RetryPolicy(max_attempts=4), sleep=_no_sleep, prices=prices)
    session = build_session(script, telemetry=telemetry, llm=llm)
    recorder = SessionRecorder(SessionStore.create(home / "sessions", session.id), billing_file=home / "billing.jsonl")
    provider.add_span_processor(recorder)
    telemetry.listeners.append(recorder)

    async def runs():
        for prompt in prompts:
            await session.run(prompt, context=RunContext(source="cli", script=script.source))

    # The scripted model carries a demo price in litellm's map; without it the model is unpriced.
    from otel_agents.llm.litellm_loader import load_litellm

    from otel_agents.llm.scripted_provider import price_map_changed

    cost_map = load_litellm().model_cost
    if not priced:
        # Register the script now (the client would at its first call, with the demo price),
        # so that its price can be taken away for this run.
        from otel_agents.llm.scripted_provider import register_script

        register_script(script)
        llm.scripts.clear()
    demo_price = cost_map.get(script.model)
    if not priced:
        cost_map.pop(script.model, None)
        price_map_changed()  # litellm caches model info: earlier tests may have priced this model
    try:
        asyncio.run(runs())
    finally:
        if demo_price is not None:
            cost_map[script.model] = demo_price
            price_map_changed()
    provider.shutdown()
    return session.id


@pytest.fixture(scope="module")
def recorded_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("billing") / "home"
    priced = _record_session(home, True, ["Create Jack and Jill for a cafe discussion", "And now?"])
    unpriced = _record_session(home, False, ["Create Jack and Jill for a cafe discussion"])
    return home, priced, unpriced


@pytest.fixture
def home(recorded_home, tmp_path):
    """A private copy of the recorded home (tests change the ledger)."""
    source, priced, unpriced = recorded_home
    copy = tmp_path / "home"
    shutil.copytree(source, copy)
    return copy, priced, unpriced


def invoke(home: Path, *args: str):
    runner = CliRunner()
    return runner.invoke(cli, ["billing", *args], env={"OTEL_AGENTS_HOME": str(home)}, catch_exceptions=False)


def tree_of(home: Path, session_id: str) -> dict:
    payload = orjson.loads(gzip.decompress((home / "sessions" / session_id / "tree.json.gz").read_bytes()))
    return payload["session"]


def ledger_lines(home: Path) -> list[dict]:
    return [json.loads(line) for line in (home / "billing.jsonl").read_text().splitlines()]


# --- summary ------------------------------------------------------------------------------


def test_summary_totals_equal_the_session_trees(home):
    home, priced, unpriced = home
    result = invoke(home, "summary", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    rows = {row["key"]: row for row in doc["rows"]}
    assert set(rows) == {priced, unpriced}
    for session_id in (priced, unpriced):
        totals = tree_of(home, session_id)["totals"]["inclusive"]
        row = rows[session_id]
        assert row["llm_calls"] == totals["llm_calls"] and row["tool_calls"] == totals["tool_calls"]
        assert row["tokens"]["input"] == totals["input_tokens"] and row["tokens"]["output"] == totals["output_tokens"]
        assert row["tokens"]["reasoning"] == totals["reasoning_tokens"]
        assert row["unpriced_calls"] == totals["unpriced_calls"]
    priced_totals = tree_of(home, priced)["totals"]["inclusive"]
    assert priced_totals["cost_usd"] > 0 and rows[priced]["unpriced_calls"] == 0
    assert round(Decimal(str(rows[priced]["cost_usd"])), 2) == round(Decimal(str(priced_totals["cost_usd"])), 2)
    assert abs(rows[priced]["cost_usd"] - priced_totals["cost_usd"]) < 1e-9
    # The unpriced session has no cost at all, never a zero one.
    assert rows[unpriced]["cost_usd"] is None and rows[unpriced]["unpriced_calls"] > 0
    assert doc["total"]["cost_usd"] == rows[priced]["cost_usd"]
    assert doc["total"]["calls"] == len(ledger_lines(home))
    # That total leaves the unpriced calls out: it says it is partial (a field added beside cost_usd).
    assert doc["total"]["complete"] is False and rows[unpriced]["complete"] is False and rows[priced]["complete"]
    assert rows[priced]["failed_calls"] >= 1  # the scripted 429 attempt is billed as failed


def test_summary_table_is_aligned_with_a_total_row(home):
    home, priced, unpriced = home
    result = invoke(home, "summary", "--by", "agent")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["AGENT", "CALLS", "LLM"] and lines[0].split()[-2:] == ["COST_USD", "UNPRICED"]
    names = [line.split()[0] for line in lines[1:]]
    assert names == ["Inner", "Jack", "Jill", "ResourceMonitor", "main", "TOTAL"]
    assert len({len(line) for line in lines}) == 1, "every row has the same width"
    cost_end = lines[0].index("COST_USD") + len("COST_USD")
    for line in lines[1:]:  # numbers are right-aligned under their heading
        assert line[cost_end - 1] in "0123456789-" and line[cost_end] == " "
        cell = line[:cost_end].split()[-1]
        assert cell == "-" or Decimal(cell) >= 0
    total_calls = int(lines[-1].split()[1])
    assert total_calls == len(ledger_lines(home))
    unpriced_calls = int(lines[-1].split()[-1])
    assert unpriced_calls > 0 and result.stderr == (
        f"note: COST_USD leaves out the {unpriced_calls} unpriced calls, so it is a partial sum; give their "
        "models a price (OTEL_AGENTS_PRICES) and run `billing rebuild --reprice`\n")
    whole = invoke(home, "summary", "--session", priced)
    assert whole.exit_code == 0 and whole.stderr == ""  # every call priced: nothing to say


def test_summary_by_model_and_day_and_session_filter(home):
    home, priced, unpriced = home
    by_model = json.loads(invoke(home, "summary", "--by", "model", "--json").stdout)
    assert [r["key"] for r in by_model["rows"]] == ["(tools)", "scripted/jack-and-jill"]
    day = ledger_lines(home)[0]["ts"][:10]
    by_day = json.loads(invoke(home, "summary", "--by", "day", "--json", "--since", day, "--until", day).stdout)
    assert [r["key"] for r in by_day["rows"]] == [day]
    only = json.loads(invoke(home, "summary", "--json", "--session", unpriced).stdout)
    assert [r["key"] for r in only["rows"]] == [unpriced] and only["filters"]["session"] == unpriced
    after = invoke(home, "summary", "--since", "2999-01-01")
    assert after.exit_code == 0 and "no ledger records match" in after.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "2025-13-01"], "'2025-13-01' is not a date in the form YYYY-MM-DD"),
        (["--until", "yesterday"], "'yesterday' is not a date in the form YYYY-MM-DD"),
        (["--since", "2025-03-05", "--until", "2025-03-04"], "--since 2025-03-05 is after --until 2025-03-04"),
        (["--by", "colour"], "Invalid value for '--by'"),
    ],
)
def test_bad_options_exit_2_with_one_clear_line(home, args, message):
    home, _, _ = home
    before = (home / "billing.jsonl").read_bytes()
    result = invoke(home, "summary", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert (home / "billing.jsonl").read_bytes() == before


def test_a_torn_ledger_line_is_a_warning_not_a_failure(home):
    home, priced, _ = home
    with open(home / "billing.jsonl", "ab") as fh:
        fh.write(b'{"record_id":"x:y","ts":"2025')
    result = invoke(home, "summary", "--json")
    assert result.exit_code == 0
    assert "skipped a torn last line" in result.stderr
    assert json.loads(result.stdout)["total"]["calls"] == len((home / "billing.jsonl").read_text().splitlines()) - 1


def test_a_file_that_is_no_ledger_is_refused_by_readers_as_by_writers(home, tmp_path):
    """`billing summary --billing-file README.md` said "no ledger records" with exit 0 after one
    warning per line of the file; `run`, `import` and `billing rebuild` already refused it."""
    home, priced, _ = home
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nnot a ledger\n")
    for args in (["billing", "summary"], ["billing", "export", "--format", "csv"], ["sessions", "verify", priced]):
        result = CliRunner().invoke(cli, [*args, "--billing-file", str(notes)], env={"OTEL_AGENTS_HOME": str(home)})
        assert result.exit_code == 2 and result.stdout == "", (args, result.output)
        assert result.stderr.splitlines() == [
            f"Error: {notes} is not a billing ledger (its first line is not a ledger record)"], (args, result.stderr)
    assert notes.read_text() == "# Notes\n\nnot a ledger\n"
    output = tmp_path / "out.csv"
    exported = invoke(home, "export", "--billing-file", str(notes), "--output", str(output))
    assert exported.exit_code == 2 and not output.exists()  # refused before the output was opened
    missing = invoke(home, "summary", "--billing-file", str(tmp_path / "none.jsonl"))
    assert missing.exit_code == 0  # no ledger yet is no records, as on a fresh machine


# One line, no newline: a note, a settings file, gzip bytes. Each was taken for a torn first record.
ONE_LINE_FILES = (b"my notes, no newline", b'{"hello": 1}', b'{"a":"\xff\xfe"}', gzip.compress(b"no newline in here"))


@pytest.mark.parametrize("text", ONE_LINE_FILES, ids=["notes", "json", "not-utf8", "gzip"])
def test_a_file_of_one_unterminated_line_that_is_no_record_is_refused_and_left_as_it_was(home, tmp_path, text):
    """`billing rebuild` replaced such a file with the ledger (exit 0), `--dry-run` planned to, and
    `billing summary` skipped it as "a torn last line"."""
    home, _, _ = home
    assert b"\n" not in text
    other = tmp_path / "settings.json"
    other.write_bytes(text)
    for args in (["rebuild"], ["rebuild", "--dry-run"], ["summary"], ["export", "--format", "csv"]):
        result = invoke(home, *args, "--billing-file", str(other))
        assert result.exit_code == 2 and result.stdout == "", (args, result.output)
        assert result.stderr.splitlines() == [
            f"Error: {other} is not a billing ledger (its first line is not a ledger record)"], (args, result.stderr)
        assert other.read_bytes() == text, args


def test_a_torn_first_record_is_still_a_ledger_that_rebuild_repairs(home):
    home, _, _ = home
    ledger = home / "billing.jsonl"
    count = len(ledger.read_bytes().splitlines())
    ledger.write_bytes(ledger.read_bytes()[:40])  # the very first write, killed mid-line
    summary = invoke(home, "summary", "--json")
    assert summary.exit_code == 0 and "skipped a torn last line" in summary.stderr
    result = invoke(home, "rebuild")
    assert result.exit_code == 0, result.output
    assert len(ledger_lines(home)) == count and ledger.read_bytes().endswith(b"\n")


def test_a_damaged_line_inside_a_ledger_is_one_warning_and_a_missing_ledger_is_no_records(home, tmp_path):
    home, _, _ = home
    ledger = home / "billing.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    ledger.write_bytes(b"".join(lines[:2]) + b'{"damaged": \n' + b"".join(lines[2:]))
    result = invoke(home, "summary", "--json")
    assert result.exit_code == 0
    assert result.stderr == f"warning: {ledger}:3: skipped an unreadable line\n"
    assert json.loads(result.stdout)["total"]["calls"] == len(lines)
    # A fresh machine has no ledger yet: that is no records, not an error.
    missing = tmp_path / "none.jsonl"
    result = invoke(home, "summary", "--billing-file", str(missing))
    assert result.exit_code == 0 and result.stdout == f"no ledger records ({missing})\n" and result.stderr == ""


def test_a_record_written_twice_in_one_ledger_is_counted_once_with_a_warning(home, tmp_path):
    """A repeated line was counted twice by summary (``duplicates`` 0) and exported twice, silently,
    while two ledgers holding it counted it once: ``cat a b > all.jsonl`` over-billed."""
    home, _, _ = home
    ledger = home / "billing.jsonl"
    before = json.loads(invoke(home, "summary", "--json").stdout)
    lines = ledger.read_bytes().splitlines(keepends=True)
    ledger.write_bytes(b"".join(lines) + lines[1])
    result = invoke(home, "summary", "--json")
    assert result.exit_code == 0, result.output
    after = json.loads(result.stdout)
    assert after["total"] == before["total"] and after["rows"] == before["rows"]
    assert after["duplicates"] == 1 and before["duplicates"] == 0
    warning = f"warning: {ledger}: 1 record written more than once was counted once"
    assert result.stderr.splitlines() == [warning + " (`otel-agents billing rebuild` drops the repeats)"]
    table = invoke(home, "summary")
    assert table.exit_code == 0 and table.stderr.splitlines()[0].startswith(warning)
    exported = tmp_path / "out.jsonl"
    done = invoke(home, "export", "--format", "jsonl", "--output", str(exported))
    assert done.exit_code == 0 and warning in done.stderr
    ids = [json.loads(line)["record_id"] for line in exported.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == len(lines)
    # Read as two ledgers, the repeat inside one is named apart from the overlap between them.
    other = tmp_path / "other.jsonl"
    other.write_bytes(lines[0])
    both = invoke(home, "summary", "--json", "--billing-file", str(ledger), "--billing-file", str(other))
    assert json.loads(both.stdout)["total"] == before["total"] and json.loads(both.stdout)["duplicates"] == 2
    assert warning in both.stderr and "1 record found in more than one ledger was counted once" in both.stderr


def test_summary_with_an_explicit_billing_file(home, tmp_path):
    home, _, _ = home
    other = tmp_path / "elsewhere.jsonl"
    shutil.copy(home / "billing.jsonl", other)
    (home / "billing.jsonl").unlink()
    result = CliRunner().invoke(cli, ["billing", "summary", "--json", "--billing-file", str(other)],
                                env={"OTEL_AGENTS_HOME": str(home)})
    assert result.exit_code == 0 and json.loads(result.stdout)["total"]["calls"] == len(other.read_text().splitlines())


# --- export -------------------------------------------------------------------------------


def test_export_csv_and_jsonl(home, tmp_path):
    home, priced, unpriced = home
    records = ledger_lines(home)
    jsonl = invoke(home, "export", "--format", "jsonl")
    assert jsonl.exit_code == 0 and [json.loads(line) for line in jsonl.stdout.splitlines()] == records
    result = invoke(home, "export", "--format", "csv", "--session", priced)
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    mine = [r for r in records if r["session_id"] == priced]
    assert [r["record_id"] for r in rows] == [r["record_id"] for r in mine]
    assert sum(Decimal(r["cost_usd"]) for r in rows if r["cost_usd"]) == sum(Decimal(str(r["cost_usd"])) for r in mine if r.get("cost_usd") is not None)
    out = tmp_path / "out.csv"
    result = invoke(home, "export", "--format", "csv", "-o", str(out), "--session", unpriced)
    assert result.exit_code == 0 and f"exported {sum(r['session_id'] == unpriced for r in records)} records" in result.stderr
    assert all(r["cost_usd"] == "" for r in csv.DictReader(out.open()) if r["type"] == "llm")
    assert invoke(home, "export").exit_code == 2  # --format is required
    before = (home / "billing.jsonl").read_bytes()
    onto_itself = invoke(home, "export", "--format", "jsonl", "-o", str(home / "billing.jsonl"))
    assert onto_itself.exit_code == 2 and "is the ledger itself" in onto_itself.stderr
    assert (home / "billing.jsonl").read_bytes() == before
    for fmt in ("csv", "jsonl"):  # a directory that is not there: one line, not a traceback
        missing = invoke(home, "export", "--format", fmt, "-o", str(tmp_path / "nodir" / f"x.{fmt}"))
        assert missing.exit_code == 2 and missing.stderr.count("\n") == 1, missing.stderr
        assert "cannot write --output" in missing.stderr and "No such file or directory" in missing.stderr


def test_export_refuses_to_write_into_a_session(home, tmp_path):
    """`billing export -o $HOME/sessions/ID/events.jsonl` replaced the conversation with CSV."""
    home, priced, _ = home
    events = home / "sessions" / priced / "events.jsonl"
    before = events.read_bytes()
    link = tmp_path / "link"
    link.symlink_to(home / "sessions" / priced)
    for target in (events, link / "events.jsonl", home / "sessions" / "new.csv"):
        refused = invoke(home, "export", "--format", "csv", "-o", str(target))
        assert refused.exit_code == 2 and "inside the sessions directory" in refused.stderr, refused.stderr
    assert events.read_bytes() == before and not (home / "sessions" / "new.csv").exists()


# --- rebuild ------------------------------------------------------------------------------


def test_rebuild_restores_the_ledger_and_reports_differences(home):
    home, priced, unpriced = home
    ledger = home / "billing.jsonl"
    original = ledger_lines(home)
    damaged = [dict(r) for r in original]
    missing = damaged.pop(3)
    damaged[0]["cost_usd"] = 99.0
    bogus = dict(damaged[1], record_id=f"{damaged[1]['trace_id']}:ffffffffffffffff", span_id="ffffffffffffffff")
    gone = dict(damaged[2], record_id="0" * 31 + "1:" + "0" * 15 + "1", session_id="20240101-000000-gone00")
    damaged += [bogus, gone, damaged[5]]  # the last one is a duplicate line
    ledger.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in damaged))

    before = ledger.read_bytes()
    dry = invoke(home, "rebuild", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert f"+ {missing['record_id']}" in dry.stdout.splitlines()
    assert f"~ {original[0]['record_id']} (cost_usd)" in dry.stdout.splitlines()
    assert f"- {bogus['record_id']}" in dry.stdout.splitlines()
    assert "1 added, 1 changed, 1 removed, 1 duplicate lines dropped, 1 kept" in dry.stdout
    assert "dry run: the ledger is unchanged" in dry.stdout and ledger.read_bytes() == before

    result = invoke(home, "rebuild")
    assert result.exit_code == 0, result.output
    rebuilt = ledger_lines(home)
    key = lambda r: r["record_id"]  # noqa: E731
    assert sorted(rebuilt, key=key) == sorted(original + [gone], key=key)
    assert [r["ts"] for r in rebuilt] == sorted(r["ts"] for r in rebuilt)
    again = invoke(home, "rebuild")
    assert "the ledger already matches the saved sessions" in again.stdout
    assert "0 added, 0 changed, 0 removed, 0 duplicate lines dropped, 1 kept" in again.stdout


def test_rebuild_shows_a_hand_edited_record_id_with_its_control_characters_escaped(home):
    """A ledger is text a hand may edit: an id holding ESC or U+202E must not drive or reorder the terminal."""
    home, _, _ = home
    ledger = home / "billing.jsonl"
    lines = ledger_lines(home)
    odd = dict(lines[1], record_id=lines[1]["trace_id"] + ":\x1b[2J\u202eff", span_id="ffffffffffffffff")
    ledger.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [*lines, odd]))
    dry = invoke(home, "rebuild", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert f"- {lines[1]['trace_id']}:\\x1b[2J\\u202eff" in dry.stdout.splitlines()
    assert "\x1b" not in dry.stdout and "\u202e" not in dry.stdout


def test_rebuild_keeps_records_of_a_damaged_tree(home):
    home, priced, unpriced = home
    (home / "sessions" / unpriced / "tree.json.gz").write_bytes(b"\x1f\x8b not really gzip")
    journal = home / "sessions" / unpriced / "spans.jsonl"  # else the records come from it, whole
    journal.write_bytes(b'{"damaged": \n' + journal.read_bytes())
    ledger = home / "billing.jsonl"
    (home / "billing.jsonl").unlink()
    result = invoke(home, "rebuild")
    assert result.exit_code == 0, result.output
    assert "tree.json.gz is truncated or corrupt" in result.stderr and "its ledger records are kept" in result.stderr
    assert {r["session_id"] for r in ledger_lines(home)} == {priced}
    assert "(1 unreadable)" in result.stdout and ledger.exists()


def test_rebuild_keeps_records_of_a_journal_cut_short_of_its_checkpoint(home):
    """The half journal was trusted: "0 added, 2 changed, 9 removed", with no warning."""
    home, priced, unpriced = home
    journal = home / "sessions" / priced / "spans.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[: len(lines) // 2]))
    before = (home / "billing.jsonl").read_bytes()
    result = invoke(home, "rebuild")
    assert result.exit_code == 0, result.output
    assert "0 added, 0 changed, 0 removed" in result.stdout and "(1 not whole)" in result.stdout
    assert f"session {priced}: " in result.stderr and f"otel-agents sessions verify {priced}" in result.stderr
    assert (home / "billing.jsonl").read_bytes() == before


# --- rebuild --reprice --------------------------------------------------------------------

# Today's prices for the scripted model: a tier above 200 input tokens, as litellm spells them.
NEW_PRICES = {
    "scripted/jack-and-jill": {
        "input_cost_per_token": 2e-6, "output_cost_per_token": 5e-6,
        "input_cost_per_token_above_200_tokens": 3e-6, "output_cost_per_token_above_200_tokens": 7e-6,
    }
}


def _new_cost(tokens: dict) -> Decimal:
    """By hand: every token of a request above the tier at the tier's rates."""
    rates = NEW_PRICES["scripted/jack-and-jill"]
    tier = "_above_200_tokens" if tokens["input"] > 200 else ""
    cost = (tokens["input"] * rates[f"input_cost_per_token{tier}"]
            + tokens["output"] * rates[f"output_cost_per_token{tier}"])
    return Decimal(repr(round(cost, 12)))


def invoke_priced(home: Path, prices: dict | None, *args: str, group: str = "billing"):
    env = {"OTEL_AGENTS_HOME": str(home)}
    if prices is not None:
        path = home / "prices.json"
        path.write_text(json.dumps(prices))
        env["OTEL_AGENTS_PRICES"] = str(path)
    return CliRunner().invoke(cli, [group, *args], env=env, catch_exceptions=False)


def test_rebuild_keeps_the_costs_recorded_at_call_time(home):
    home, priced, unpriced = home
    before = (home / "billing.jsonl").read_bytes()
    result = invoke_priced(home, NEW_PRICES, "rebuild")
    assert result.exit_code == 0, result.output
    assert "the ledger already matches the saved sessions" in result.stdout and "reprice" not in result.stdout
    assert (home / "billing.jsonl").read_bytes() == before


def test_rebuild_reprice_reports_each_difference_and_the_total(home):
    home, priced, unpriced = home
    ledger = home / "billing.jsonl"
    original = {r["record_id"]: r for r in ledger_lines(home)}
    llm_ok = {rid: r for rid, r in original.items() if r["type"] == "llm" and r["status"] == "ok"}
    inputs = [r["tokens"]["input"] for r in llm_ok.values()]
    assert min(inputs) <= 200 < max(inputs)  # both sides of the tier are exercised
    assert any(r["price_source"] == "unpriced" for r in llm_ok.values())

    before = ledger.read_bytes()
    dry = invoke_priced(home, NEW_PRICES, "rebuild", "--reprice", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert ledger.read_bytes() == before and "dry run: the ledger is unchanged" in dry.stdout
    lines = {line.split()[1]: line for line in dry.stdout.splitlines() if line.startswith("$ ")}
    assert set(lines) == set(llm_ok)
    for rid, record in llm_ok.items():
        old = record["cost_usd"]
        new = _new_cost(record["tokens"])
        assert f"-> {new.normalize():f} (config)" in lines[rid], lines[rid]
        if old is None:
            assert ": unpriced (unpriced) ->" in lines[rid]
        else:
            assert f"({signed_usd(new - Decimal(repr(old)))})" in lines[rid]
    old_total = sum(Decimal(repr(r["cost_usd"])) for r in llm_ok.values() if r["cost_usd"] is not None)
    new_total = sum(_new_cost(r["tokens"]) for r in llm_ok.values())
    summary = next(line for line in dry.stdout.splitlines() if line.startswith("reprice:"))
    assert summary.startswith(f"reprice: {len(llm_ok)} LLM records priced, {len(llm_ok)} differently;")
    # Some records were unpriced: the old side says how many, and no difference is made of a partial sum.
    n_unpriced = sum(1 for r in llm_ok.values() if r["cost_usd"] is None)
    assert summary.endswith(f"their cost {usd(old_total)} + {n_unpriced} unpriced -> {usd(new_total)} USD")

    result = invoke_priced(home, NEW_PRICES, "rebuild", "--reprice")
    assert result.exit_code == 0, result.output
    repriced = {r["record_id"]: r for r in ledger_lines(home)}
    assert set(repriced) == set(original)
    for rid, record in repriced.items():
        if rid not in llm_ok:
            assert record == original[rid]  # tools and failed attempts: nothing billed, nothing re-priced
            continue
        assert Decimal(repr(record["cost_usd"])) == _new_cost(record["tokens"])
        assert record["price_source"] == "config"
        assert record["repriced"] == {"cost_usd": original[rid]["cost_usd"],
                                      "price_source": original[rid]["price_source"]}
    summary = json.loads(invoke_priced(home, None, "summary", "--json").stdout)
    assert Decimal(repr(summary["total"]["cost_usd"])) == new_total and summary["total"]["unpriced_calls"] == 0

    # The ledger still tells the spans' story, and a later rebuild keeps the new prices.
    for session_id in (priced, unpriced):
        verify = invoke_priced(home, None, "verify", session_id, group="sessions")
        assert verify.exit_code == 0, verify.output
    after = ledger.read_bytes()
    again = invoke_priced(home, None, "rebuild")
    assert "the ledger already matches the saved sessions" in again.stdout and ledger.read_bytes() == after
    same = invoke_priced(home, NEW_PRICES, "rebuild", "--reprice")
    assert f"reprice: {len(llm_ok)} LLM records priced, none differently\n" in same.stdout
    assert ledger.read_bytes() == after


def test_reprice_at_the_call_time_prices_changes_nothing_that_was_priced(home):
    home, priced, unpriced = home
    prices = {"scripted/jack-and-jill": {"input_cost_per_token": PRICE_IN, "output_cost_per_token": PRICE_OUT}}
    result = invoke_priced(home, prices, "rebuild", "--reprice", "--dry-run")
    assert result.exit_code == 0, result.output
    changed = {line.split()[1] for line in result.stdout.splitlines() if line.startswith("$ ")}
    by_id = {r["record_id"]: r for r in ledger_lines(home)}
    # Only the session recorded without a price is priced now; the priced one's costs are reproduced.
    assert changed and {by_id[rid]["session_id"] for rid in changed} == {unpriced}


def test_reprice_with_a_bad_price_file_is_one_line_and_changes_nothing(home):
    home, priced, unpriced = home
    before = (home / "billing.jsonl").read_bytes()
    bad = {"scripted/jack-and-jill": {"input_cost_per_token": 1e-6, "output_cost_per_token_above_9k_tokens": 1}}
    result = CliRunner().invoke(cli, ["billing", "rebuild", "--reprice"], env={
        "OTEL_AGENTS_HOME": str(home), "OTEL_AGENTS_PRICES": str(home / "nope.json")})
    assert result.exit_code == 2 and "cannot read prices" in result.output
    assert "Traceback" not in result.output
    result = invoke_priced(home, bad, "rebuild", "--reprice")
    assert result.exit_code == 2 and "needs numeric input_cost_per_token" in result.output
    assert (home / "billing.jsonl").read_bytes() == before


def test_rebuild_help_explains_reprice():
    result = CliRunner().invoke(cli, ["billing", "rebuild", "--help"])
    assert "--reprice" in result.output and "recorded at call time" in " ".join(result.output.split())


def test_reprice_in_a_fresh_process_reproduces_the_offline_models_costs(tmp_path):
    """Real processes: a scripted run bills at the demo price, which a later process re-prices
    without having run anything (the demo price is registered for the offline model's records)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(tmp_path / "home"), OTEL_TRACES_EXPORTER="none")
    run = subprocess.run([sys.executable, "-m", "otel_agents", "run", "Create Jack and Jill for a cafe discussion"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    ledger = tmp_path / "home" / "billing.jsonl"
    before = ledger.read_bytes()
    records = [json.loads(line) for line in before.splitlines()]
    llm_ok = [r for r in records if r["type"] == "llm" and r["status"] == "ok"]
    assert llm_ok and all(r["price_source"] == "litellm" and r["cost_usd"] > 0 for r in llm_ok)
    rebuild = subprocess.run([sys.executable, "-m", "otel_agents", "billing", "rebuild", "--reprice"],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert rebuild.returncode == 0, rebuild.stderr
    assert f"reprice: {len(llm_ok)} LLM records priced, none differently\n" in rebuild.stdout
    assert "the ledger already matches the saved sessions and the current prices" in rebuild.stdout
    assert ledger.read_bytes() == before


def test_summary_shows_a_huge_cost_to_the_micro_dollar(home):
    # Ledgers written before costs were bounded at import (or by hand) may hold any finite cost.
    home, priced, _ = home
    lines = ledger_lines(home)
    big = dict(next(line for line in lines if line.get("type") == "llm"), record_id="f" * 32 + ":" + "e" * 16,
               cost_usd=1e25)
    with open(home / "billing.jsonl", "ab") as handle:
        handle.write(orjson.dumps(big) + b"\n")
    result = invoke(home, "summary", "--session", big["session_id"])
    assert result.exit_code == 0, result.output
    total = result.stdout.splitlines()[-1]
    assert " 10000000000000000000000000.000000 " in total  # shown to the micro-dollar, as every cost is


def test_rebuild_rewrites_what_a_symlinked_ledger_names_and_keeps_the_link(home, tmp_path):
    home, priced, _ = home
    shared = tmp_path / "shared" / "ledger.jsonl"
    shared.parent.mkdir()
    (home / "billing.jsonl").rename(shared)
    (home / "billing.jsonl").symlink_to(shared)
    lines = shared.read_bytes().splitlines(keepends=True)
    shared.write_bytes(b"".join(lines[1:]))  # a record lost: rebuild adds it back
    result = invoke(home, "rebuild")
    assert result.exit_code == 0, result.output
    assert (home / "billing.jsonl").is_symlink()
    assert sorted(shared.read_bytes().splitlines(keepends=True)) == sorted(lines)


def test_a_dry_run_rebuild_on_an_empty_home_writes_nothing(tmp_path):
    """It created the home directory and an empty billing.jsonl."""
    home = tmp_path / "home"
    result = invoke(home, "rebuild", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "0 sessions" in result.stdout and not home.exists()


def test_summary_cells_show_control_characters_as_escapes(home):
    # A ledger is data from imported traces (a model's name as the sender wrote it): an ESC or a
    # RIGHT-TO-LEFT OVERRIDE in a cell drove the terminal and put the table's columns out of line.
    home, _, _ = home
    lines = ledger_lines(home)
    odd = dict(next(line for line in lines if line.get("type") == "llm"), record_id="e" * 32 + ":" + "d" * 16,
               model="evil\x1b[2J\u202eledom\a")
    with open(home / "billing.jsonl", "ab") as handle:
        handle.write(orjson.dumps(odd) + b"\n")
    result = invoke(home, "summary", "--by", "model")
    assert result.exit_code == 0, result.output
    out = result.stdout_bytes.decode()
    (row,) = [line for line in out.splitlines() if line.startswith("evil")]
    assert row.startswith("evil\\x1b[2J\\u202eledom\\x07  ")
    assert not any(c in out for c in "\x1b\u202e\a")
    rows = json.loads(invoke(home, "summary", "--by", "model", "--json").stdout)["rows"]
    assert odd["model"] in [r["key"] for r in rows]  # --json keeps the exact name


def test_an_unreadable_price_file_for_reprice_is_one_error_line_and_exit_2(home, tmp_path):
    home, _, _ = home
    before = (home / "billing.jsonl").read_bytes()
    garbled = tmp_path / "prices.json"
    garbled.write_text("{not json")
    for args, env in ((["--prices", str(garbled)], {}), ([], {"OTEL_AGENTS_PRICES": str(garbled)})):
        result = CliRunner().invoke(cli, ["billing", "rebuild", "--reprice", *args],
                                    env={"OTEL_AGENTS_HOME": str(home), **env}, catch_exceptions=False)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"Error: {garbled}"), result.stderr
        assert len(result.stderr.splitlines()) == 1, result.stderr
    assert (home / "billing.jsonl").read_bytes() == before
