"""Several ledgers read as one: files and directories named, each record_id once."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_samples import llm, tool
from otel_agents.persistence.ledger import append_records
from otel_agents.persistence.ledger_read import LedgerError, iter_records
from otel_agents.persistence.ledger_shards import LedgerShards, ledger_files, preference
from otel_agents.persistence.ledger_summary import summarize


def _records(n: int) -> list[dict]:
    return [llm(i, session=f"s{i % 3}", cost=i / 1000) if i % 4 else tool(i, session=f"s{i % 3}") for i in range(1, n + 1)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(1, 30),
    placement=st.lists(st.sets(st.integers(0, 2), min_size=1), min_size=30, max_size=30),
    data=st.data(),
)
def test_shards_add_up_to_one_ledger_whatever_the_split_and_overlap(tmp_path_factory, count, placement, data):
    """Each record goes to one or more of three shards (an overlap is a redelivery): read together they
    summarize exactly as the single ledger of all records, and the duplicates are counted."""
    base = tmp_path_factory.mktemp("shards")
    records = _records(count)
    shards = [base / f"shard{i}.jsonl" for i in range(3)]
    for i, shard in enumerate(shards):
        shard.touch()
        # The ledger appender itself drops repeats within one file; across files nothing does.
        append_records(shard, [r for r, where in zip(records, placement) if i in where])
    order = data.draw(st.permutations(shards))
    reader = LedgerShards(ledger_files(order))
    together = summarize(reader, "session")
    assert [r.as_dict() for r in together] == [r.as_dict() for r in summarize(records, "session")]
    assert reader.duplicates == sum(len(where) - 1 for where in placement[:count])


def test_a_directory_is_its_jsonl_files_sorted(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    for name in ("b.jsonl", "a.jsonl", "notes.txt"):
        (shards / name).write_text("")
    (shards / "sub.jsonl").mkdir()  # a directory with the suffix is not a ledger
    assert ledger_files([shards]) == [shards / "a.jsonl", shards / "b.jsonl"]


def test_the_same_file_named_twice_is_read_once(tmp_path):
    ledger = tmp_path / "billing.jsonl"
    append_records(ledger, _records(3))
    assert ledger_files([ledger, tmp_path / "." / "billing.jsonl"]) == [ledger]


def test_one_missing_ledger_is_empty_but_among_several_it_is_an_error(tmp_path):
    missing = tmp_path / "missing.jsonl"
    assert list(LedgerShards(ledger_files([missing]))) == []
    present = tmp_path / "billing.jsonl"
    append_records(present, _records(2))
    with pytest.raises(LedgerError, match="no billing ledger .*missing.jsonl"):
        ledger_files([present, missing])


def test_a_directory_without_ledgers_is_an_error(tmp_path):
    with pytest.raises(LedgerError, match="no \\*.jsonl ledgers"):
        ledger_files([tmp_path])


def test_a_record_repeated_inside_one_ledger_is_read_once_with_a_warning(tmp_path):
    """One ledger was read as written, a repeated line twice; two ledgers dropped the same repeat."""
    ledger = tmp_path / "billing.jsonl"
    append_records(ledger, _records(4))
    with open(ledger, "ab") as fh:  # a line repeated by hand
        fh.write(ledger.read_bytes().splitlines(keepends=True)[0])
    warnings: list[str] = []
    reader = LedgerShards([ledger], warnings.append)
    assert sorted(reader, key=lambda r: r["record_id"]) == sorted(list(iter_records(ledger))[:4], key=lambda r: r["record_id"])
    assert (reader.duplicates, reader.across_ledgers) == (1, 0)
    assert warnings == [f"{ledger}: 1 record written more than once was counted once"
                        " (`otel-agents billing rebuild` drops the repeats)"]
    other = tmp_path / "other.jsonl"
    append_records(other, _records(2))
    warnings.clear()
    reader = LedgerShards([ledger, other], warnings.append)
    assert len(list(reader)) == 4 and (reader.duplicates, reader.across_ledgers) == (3, 2)
    assert len(warnings) == 1 and warnings[0].startswith(f"{ledger}: 1 record ")


def _repriced(record: dict, cost: float) -> dict:
    return {**record, "cost_usd": cost, "price_source": "price file p.json",
            "repriced": {"cost_usd": record["cost_usd"], "price_source": record["price_source"]}}


@pytest.mark.parametrize("held", [False, True], ids=["files", "pipes"])
def test_copies_that_disagree_count_the_same_whatever_the_order(tmp_path, monkeypatch, held):
    """The first ledger named won: a re-priced ledger and its older copy summed differently by order."""
    import otel_agents.persistence.ledger_shards as shards_module

    if held:  # a pipe cannot be read twice: its records are held from the first reading
        monkeypatch.setattr(shards_module, "_rereadable", lambda path: False)
    old = [llm(1, cost=0.5), llm(2, cost=0.25), llm(3, status="interrupted", cost=None), llm(4, cost=0.75), tool(5)]
    new = [_repriced(old[0], 0.125), old[1], llm(3, cost=0.5), llm(4, cost=0.0625), llm(6)]
    a, b = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    append_records(a, old)
    append_records(b, new)
    results = []
    for order in ([a, b], [b, a]):
        warnings: list[str] = []
        reader = LedgerShards(order, warnings.append)
        records = sorted(reader, key=lambda r: r["record_id"])
        results.append((records, [r.as_dict() for r in summarize(records, "session")], warnings))
        assert (reader.duplicates, reader.across_ledgers, reader.disagreeing) == (4, 4, 3)
    assert results[0] == results[1]
    records, _, warnings = results[0]
    assert [r.get("cost_usd") for r in records] == [0.125, 0.25, 0.5, 0.75, None, 0.001]  # re-priced; finished
    assert warnings == ["3 records were found more than once with different contents, 1 of them a "
                        "re-priced copy and an older one; each counted once as its preferred copy "
                        "(re-priced, else finished, else priced)"]


@pytest.mark.parametrize("held", [False, True], ids=["file", "pipe"])
def test_copies_inside_one_ledger_count_as_across_ledgers_whatever_the_line_order(tmp_path, monkeypatch, held):
    """Inside one ledger the first copy counted: the same lines in another order billed differently,
    and nothing said the copies differed."""
    import otel_agents.persistence.ledger_shards as shards_module

    if held:
        monkeypatch.setattr(shards_module, "_rereadable", lambda path: False)
    old = [llm(1, cost=0.5), llm(2, cost=0.25), tool(3)]
    other = {**old[0], "cost_usd": 77.0}
    results = []
    for name, lines in (("after.jsonl", [*old, other]), ("before.jsonl", [other, *old])):
        ledger = tmp_path / name
        ledger.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
        warnings: list[str] = []
        reader = LedgerShards([ledger], warnings.append)
        records = sorted(reader, key=lambda r: r["record_id"])
        assert (reader.duplicates, reader.across_ledgers, reader.disagreeing) == (1, 0, 1)
        assert warnings[-1].startswith("1 record was found more than once with different contents")
        results.append(records)
    assert results[0] == results[1] and results[0][0]["cost_usd"] == max(other, old[0], key=preference)["cost_usd"]
