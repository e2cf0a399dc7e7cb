"""``billing summary|export`` over several ledgers (a fleet's shards), written by real scripted runs."""

from __future__ import annotations

import json
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from support.in_process import run_in_process

PROMPT = "Create Jack and Jill for a cafe discussion"


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    return run_in_process(*args, home=home, env={"OTEL_TRACES_EXPORTER": "none"}, cwd=home.parent)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Two workers' ledgers, each written by a scripted `run`."""
    base = tmp_path_factory.mktemp("fleet")
    home = base / "home"
    shards = base / "shards"
    shards.mkdir()
    for name in ("a", "b"):
        proc = _cli(home, "run", PROMPT, "--sessions-dir", str(base / f"sessions-{name}"),
                    "--billing-file", str(shards / f"{name}.jsonl"))
        assert proc.returncode == 0, proc.stderr
    return home, shards


def _summary(home: Path, *args: str) -> dict:
    proc = _cli(home, "billing", "summary", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _ids(path: Path) -> list[str]:
    return [json.loads(line)["record_id"] for line in path.read_text().splitlines()]


def test_summary_over_two_ledgers_is_their_sum(fleet):
    home, shards = fleet
    a, b = shards / "a.jsonl", shards / "b.jsonl"
    one, two = _summary(home, "--billing-file", str(a)), _summary(home, "--billing-file", str(b))
    both = _summary(home, "--billing-file", str(a), "--billing-file", str(b))
    assert one["rows"] and two["rows"] and one["rows"][0]["key"] != two["rows"][0]["key"]
    assert sorted(both["rows"], key=lambda r: r["key"]) == sorted(one["rows"] + two["rows"], key=lambda r: r["key"])
    for field in ("calls", "llm_calls", "tool_calls"):
        assert both["total"][field] == one["total"][field] + two["total"][field] > 0
    assert both["total"]["tokens"]["total"] == one["total"]["tokens"]["total"] + two["total"]["tokens"]["total"]
    assert Decimal(str(both["total"]["cost_usd"])) == Decimal(str(one["total"]["cost_usd"])) + Decimal(
        str(two["total"]["cost_usd"]))
    assert both["ledgers"] == [str(a), str(b)] and both["duplicates"] == 0
    # A directory is its *.jsonl files: the same answer.
    assert _summary(home, "--billing-file", str(shards))["total"] == both["total"]


def test_a_record_in_two_shards_counts_once(fleet, tmp_path):
    home, shards = fleet
    copy = tmp_path / "shards"
    shutil.copytree(shards, copy)
    redelivered = (copy / "a.jsonl").read_text().splitlines(keepends=True)[:2]
    with open(copy / "b.jsonl", "a") as fh:
        fh.writelines(redelivered)
    before = _summary(home, "--billing-file", str(shards))
    after = _summary(home, "--billing-file", str(copy))
    assert after["total"] == before["total"] and after["duplicates"] == 2
    table = _cli(home, "billing", "summary", "--billing-file", str(copy))
    assert table.returncode == 0 and "2 records found in more than one ledger were counted once" in table.stderr
    exported = tmp_path / "all.jsonl"
    proc = _cli(home, "billing", "export", "--format", "jsonl", "--billing-file", str(copy), "-o", str(exported))
    assert proc.returncode == 0, proc.stderr
    ids = _ids(exported)
    assert len(ids) == len(set(ids)) and set(ids) == set(_ids(shards / "a.jsonl")) | set(_ids(shards / "b.jsonl"))


@pytest.mark.parametrize("args, message", [
    (["billing", "summary", "--billing-file", "{a}", "--billing-file", "{missing}"], "no billing ledger"),
    (["billing", "export", "--format", "csv", "--billing-file", "{empty}"], "no *.jsonl ledgers"),
    (["billing", "export", "--format", "csv", "--billing-file", "{shards}", "-o", "{a}"], "is the ledger itself"),
    (["billing", "rebuild", "--billing-file", "{a}", "--billing-file", "{b}"], "given 2 times"),
    (["billing", "rebuild", "--billing-file", "{shards}"], "is a directory"),
    (["run", PROMPT, "--billing-file", "{a}", "--billing-file", "{b}"], "given 2 times"),
    # A shard that is not a ledger refuses the whole read: skipping it would under-count the fleet,
    # and it is found before the first shard's records or the CSV header are written.
    (["billing", "export", "--format", "csv", "--billing-file", "{a}", "--billing-file", "{notes}"],
     "notes.jsonl is not a billing ledger (its first line is not a ledger record)"),
    (["billing", "summary", "--billing-file", "{mixed}"], "notes.jsonl is not a billing ledger"),
    (["ui", "--port", "0", "--billing-file", "{empty}"], "no *.jsonl ledgers"),
    # A directory named with its separator and mistyped: read as "no records yet", it totalled zero.
    (["billing", "summary", "--billing-file", "{shards}-typo/"], "no directory of ledgers"),
    (["billing", "export", "--format", "csv", "--billing-file", "{shards}-typo/"], "no directory of ledgers"),
])
def test_bad_ledger_sources_are_one_line_exit_2_and_change_nothing(fleet, tmp_path, args, message):
    home, shards = fleet
    (tmp_path / "empty").mkdir()
    (tmp_path / "mixed").mkdir()
    shutil.copy(shards / "a.jsonl", tmp_path / "mixed" / "a.jsonl")
    for notes in (tmp_path / "notes.jsonl", tmp_path / "mixed" / "notes.jsonl"):
        notes.write_text('{"note": "not a ledger record"}\n' * 3)
    names = {"a": shards / "a.jsonl", "b": shards / "b.jsonl", "shards": shards,
             "missing": tmp_path / "missing.jsonl", "empty": tmp_path / "empty",
             "notes": tmp_path / "notes.jsonl", "mixed": tmp_path / "mixed"}
    before = {p.name: p.read_bytes() for p in shards.iterdir()}
    proc = _cli(home, *[arg.format(**names) for arg in args])
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert "warning" not in proc.stderr  # not a warning per line of a file that is no ledger
    assert proc.stdout == ""
    assert {p.name: p.read_bytes() for p in shards.iterdir()} == before


def test_a_repriced_ledger_and_its_older_copy_total_the_same_in_either_order(fleet, tmp_path):
    """The first ledger named won: the total depended on the order of --billing-file."""
    home, shards = fleet
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    shutil.copy(shards / "a.jsonl", old)
    shutil.copy(shards / "a.jsonl", new)
    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"scripted/jack-and-jill": {"input_cost_per_token": 3e-7,
                                                             "output_cost_per_token": 1e-6}}))
    repriced = _cli(home, "billing", "rebuild", "--reprice", "--prices", str(prices),
                    "--sessions-dir", str(shards.parent / "sessions-a"), "--billing-file", str(new))
    assert repriced.returncode == 0, repriced.stderr
    totals, said = [], []
    for order in ((new, old), (old, new)):
        proc = _cli(home, "billing", "summary", "--json", *[arg for p in order for arg in ("--billing-file", str(p))])
        assert proc.returncode == 0, proc.stderr
        totals.append(json.loads(proc.stdout)["total"])
        said.append([line for line in proc.stderr.splitlines() if "different contents" in line])
    assert totals[0] == totals[1] and totals[0] == _summary(home, "--billing-file", str(new))["total"]
    assert said[0] == said[1] and len(said[0]) == 1 and "a re-priced copy and an older one" in said[0][0]
