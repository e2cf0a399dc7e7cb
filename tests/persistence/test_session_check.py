"""``sessions verify`` of one directory (verify_directory): the ledger read here, warnings first, nothing written."""

from __future__ import annotations

import pytest

from otel_agents.persistence.session_check import verify_directory


@pytest.fixture
def saved(record):
    recorded = record(prompts=["Create Jack and Jill for a cafe discussion"])
    return recorded.store, recorded.billing_file


def files(directory):
    return {p.name: p.read_bytes() for p in directory.iterdir()}


def test_a_closed_session_agrees_with_its_ledger(saved):
    store, billing = saved
    before = files(store.directory)
    check = verify_directory(store.directory, billing, pytest.fail)
    assert check.problems == [] and check.records > 0 and check.ledger_records > 0
    assert files(store.directory) == before


def test_the_ledger_s_warnings_come_first_and_a_missing_record_is_a_problem(saved):
    store, billing = saved
    lines = billing.read_bytes().splitlines(keepends=True)
    billing.write_bytes(b"".join(lines[1:]) + b'{"torn')  # one record gone, a torn last line
    said: list[str] = []
    check = verify_directory(store.directory, billing, said.append)
    assert said and "billing.jsonl" in said[0]
    assert check.ledger_records == len(lines) - 1
    assert len(check.problems) == 1 and "\n" not in check.problems[0]


def test_without_a_ledger_every_record_is_missing(saved, tmp_path):
    store, billing = saved
    expected = len(billing.read_bytes().splitlines())
    check = verify_directory(store.directory, tmp_path / "none.jsonl", pytest.fail)
    assert check.ledger_records == 0 and check.problems
    assert not (tmp_path / "none.jsonl").exists()
    assert expected > 0


def test_a_damaged_line_in_events_jsonl_is_one_problem_not_every_record_missing(saved):
    """A line that is not JSON in the middle of events.jsonl made verify also call each of the
    tree's records missing from the file: dozens of lines for one fault."""
    store, billing = saved
    lines = store.events_path.read_bytes().splitlines(keepends=True)
    store.events_path.write_bytes(b"".join(lines[:3]) + b"not json\n" + b"".join(lines[3:]))
    check = verify_directory(store.directory, billing, lambda message: None)
    assert len(check.problems) == 1 and "events.jsonl" in check.problems[0], check.problems


def test_a_journal_shorter_than_its_checkpoint_is_a_problem_not_recoverable(saved):
    """spans.jsonl cut short: verify said the files agreed and recommended a repair (which recorded the spans
    the checkpoint shows ended as interrupted). It names the spans the journal lacks and recommends none."""
    store, billing = saved
    lines = store.journal_path.read_bytes().splitlines(keepends=True)
    store.journal_path.write_bytes(b"".join(lines[: len(lines) // 2]))
    check = verify_directory(store.directory, billing, lambda message: None)
    (problem,) = check.problems
    assert "the journal lacks spans the checkpoint holds" in problem and "spans;" in problem
    assert not any("recoverable" in note for note in check.notes)
