"""Reading the billing ledger: a missing file, UTC days, filters by day and session."""

from __future__ import annotations

from datetime import date

import pytest
from ledger_samples import llm, tool

from otel_agents.persistence.ledger_read import CSV_COLUMNS, CSV_NESTED, filter_records, read_records, record_day
from otel_agents.persistence.ledger_summary import Filters, summarize_file


def test_reading_a_missing_ledger_gives_nothing(tmp_path):
    assert read_records(tmp_path / "none.jsonl") == []
    assert summarize_file(tmp_path / "none.jsonl") == []


# --- days and filters ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ts", "day"),
    [
        ("2025-03-04T23:59:59.999999999Z", "2025-03-04"),
        ("2025-03-04T23:30:00-02:00", "2025-03-05"),  # an offset moves it to the next UTC day
        ("2025-03-04T00:30:00+01:00", "2025-03-03"),
        ("2025-03-04", "2025-03-04"),
        (1741132800, "2025-03-05"),  # epoch seconds
        (1741132800123, "2025-03-05"),  # epoch milliseconds
        (1741132800123456789, "2025-03-05"),  # epoch nanoseconds
        ("garbage", ""),
        (None, ""),
    ],
)
def test_record_day_is_the_utc_day(ts, day):
    assert record_day({"ts": ts}) == day


def test_filters_are_inclusive_and_by_session():
    records = [llm(1, ts="2025-03-01T00:00:00Z"), llm(2, ts="2025-03-02T12:00:00Z", session="s2"),
               llm(3, ts="2025-03-03T23:59:59.999999999Z"), tool(4, ts="2025-03-04T00:00:00Z")]
    ids = lambda rs: [int(r["span_id"], 16) for r in rs]  # noqa: E731
    assert ids(filter_records(records, since=date(2025, 3, 2), until=date(2025, 3, 3))) == [2, 3]
    assert ids(filter_records(records, since=date(2025, 3, 3))) == [3, 4]
    assert ids(filter_records(records, until=date(2025, 3, 1))) == [1]
    assert ids(filter_records(records, session="s2")) == [2]
    assert ids(Filters(session="s1", since=date(2025, 3, 3)).apply(records)) == [3, 4]


def test_a_ledger_is_what_its_first_line_says(tmp_path):
    from otel_agents.persistence.ledger import append_records
    from otel_agents.persistence.ledger_read import not_a_ledger

    ledger = tmp_path / "billing.jsonl"
    assert not_a_ledger(ledger) is None  # not there yet: it will be one
    ledger.write_bytes(b"")
    assert not_a_ledger(ledger) is None
    ledger.write_bytes(b'{"record_id":"t:s","ts":"2026-')  # a first write cut short: the next append ends it
    assert not_a_ledger(ledger) is None
    ledger.unlink()
    append_records(ledger, [llm(1)])
    ledger.write_bytes(ledger.read_bytes() + b"garbage\n")  # only the first line is asked
    assert not_a_ledger(ledger) is None
    for text in (b'{\n  "data": []\n}\n', b'{"data": []}\n', b"[1, 2]\n", b'{"record_id": 7}\n', b"x" * (1 << 20)):
        other = tmp_path / "other.json"
        other.write_bytes(text)
        reason = not_a_ledger(other)
        assert reason is not None and reason.startswith(f"{other} is not a billing ledger"), text[:20]


def test_readers_refuse_a_file_that_is_not_a_ledger_and_warn_about_a_damaged_line_in_one(tmp_path):
    """Not one "skipped" warning per line of some other file: the whole file is refused, as writers refuse it."""
    from otel_agents.persistence.ledger import append_records
    from otel_agents.persistence.ledger_read import LedgerError, check_readable_ledger, iter_records

    other = tmp_path / "README.md"
    other.write_text("# A project\n\nSome text.\n")
    message = f"{other} is not a billing ledger (its first line is not a ledger record)"
    warnings: list[str] = []
    for read in (lambda: read_records(other, warnings.append), lambda: check_readable_ledger(other),
                 lambda: summarize_file(other, warn=warnings.append, workers=1),
                 lambda: summarize_file(other, warn=warnings.append, workers=2)):
        with pytest.raises(LedgerError) as refused:
            read()
        assert str(refused.value) == message
    assert warnings == []
    # A slice past the first line does not ask it again (the summary checks the file once, before slicing).
    assert list(iter_records(other, [].append, start=len("# A project\n"))) == []

    ledger = tmp_path / "billing.jsonl"
    append_records(ledger, [llm(1)])
    ledger.write_bytes(ledger.read_bytes() + b"{not json\n")
    append_records(ledger, [llm(2)])
    warnings = []
    assert len(read_records(ledger, warnings.append)) == 2
    assert warnings == [f"{ledger}:2: skipped an unreadable line"]
    check_readable_ledger(ledger)
    check_readable_ledger(tmp_path / "none.jsonl")  # missing: no records yet


def test_a_pipe_is_read_as_a_ledger_and_its_first_line_checked_as_it_is_streamed(tmp_path):
    import os

    from otel_agents.persistence.ledger import append_records
    from otel_agents.persistence.ledger_read import LedgerError, check_readable_ledger

    ledger = tmp_path / "billing.jsonl"
    append_records(ledger, [llm(1), llm(2)])
    for content, records in ((ledger.read_bytes(), 2), (b"# notes\nmore\n", None)):
        r, w = os.pipe()
        os.write(w, content)  # small: fits the pipe's buffer
        os.close(w)
        try:
            path = tmp_path / f"/dev/fd/{r}"
            check_readable_ledger(path)  # leaves a pipe alone: its first line can be read only once
            if records is None:
                with pytest.raises(LedgerError, match="is not a billing ledger"):
                    read_records(path)
            else:
                assert len(read_records(path)) == records
        finally:
            os.close(r)


# --- CSV columns --------------------------------------------------------------------------


def test_every_field_the_record_writer_gives_has_a_csv_column(record):
    """The writer's records (a real run's), with every optional field it can add: each field, an
    object's keys flattened, has its column and its value there, so a new field cannot be forgotten."""
    import csv
    import io

    from otel_agents.llm.pricing import Price, PriceTable
    from otel_agents.persistence.ledger_export import export_csv
    from otel_agents.persistence.ledger_records import PRICED_FIELDS, REPRICED, ledger_records
    from otel_agents.persistence.tree_span_fields import REPORTED_KEYS
    from otel_agents.repricing import reprice

    records = ledger_records(record().recorder.tree())
    optional = {key: 1.5e-7 if key.endswith("cost_usd") else "x" for key in REPORTED_KEYS}
    for r in records:
        r.update(optional)
    reprice(records, PriceTable({r["model"]: Price(9e-6, 9e-6) for r in records if r["type"] == "llm"}))
    assert any(REPRICED in r for r in records)  # the re-price's own field, as it writes it
    flat = {f"{REPRICED}_{k}" for k in PRICED_FIELDS} | set(optional)
    for r in records:
        flat |= {f"{k}_{sub}" if k in CSV_NESTED else k for k, v in r.items() for sub in (v if k in CSV_NESTED else [k])}
    assert flat <= set(CSV_COLUMNS), sorted(flat - set(CSV_COLUMNS))
    assert not {k for r in records for k, v in r.items() if isinstance(v, dict)} - set(CSV_NESTED)
    text = io.StringIO()
    export_csv(records, text)
    rows = list(csv.DictReader(io.StringIO(text.getvalue())))
    for r, row in zip(records, rows):
        for key, value in r.items():
            if value is None or isinstance(value, dict) or key == "error":
                continue
            assert row[key] != "", key
        if REPRICED in r:
            assert row["repriced_price_source"] == r[REPRICED]["price_source"]


# One line, no newline: what a notes file, a settings file or a compressed file often is.
NOT_LEDGERS_OF_ONE_LINE = (b"my notes, no newline", b'{"hello": 1}', b'{"a":"\xff\xfe"}', b"\x1f\x8b\x08\x00hello",
                           b' {"record_id":"t:s"}', b'{"record_id":"t:\xff')


def test_a_lone_unterminated_line_is_a_ledger_only_as_our_writer_begins_one(tmp_path):
    """A first line with no newline was taken for a torn first record whatever its bytes: an
    append then cut the whole file and a rebuild replaced it, and readers skipped it as torn."""
    from otel_agents.persistence.ledger import append_records
    from otel_agents.persistence.ledger_read import LedgerError, check_readable_ledger, iter_records, not_a_ledger

    other = tmp_path / "notes.txt"
    for text in NOT_LEDGERS_OF_ONE_LINE:
        other.write_bytes(text)
        message = f"{other} is not a billing ledger (its first line is not a ledger record)"
        assert not_a_ledger(other) == message, text
        for read in (lambda: check_readable_ledger(other), lambda: list(iter_records(other, [].append))):
            with pytest.raises(LedgerError) as refused:
                read()
            assert str(refused.value) == message, text
        with pytest.raises(LedgerError, match="is not a billing ledger"):
            append_records(other, [llm(1)])
        assert other.read_bytes() == text
    # A writer killed anywhere in its first line, even inside a character's bytes, left a ledger.
    ledger = tmp_path / "billing.jsonl"
    append_records(ledger, [llm(1, agent="Jösé"), llm(2)])
    first = ledger.read_bytes().split(b"\n")[0]
    assert first.startswith(b'{"record_id":"') and b"\xc3\xb6" in first
    for cut in range(len(first) + 1):
        ledger.write_bytes(first[:cut])
        assert not_a_ledger(ledger) is None, first[:cut]
    ledger.write_bytes(first[: first.index(b"\xc3\xb6") + 1])
    append_records(ledger, [llm(3)])  # the torn line is cut, the new record appended
    assert [r["span_id"] for r in read_records(ledger)] == [llm(3)["span_id"]]
