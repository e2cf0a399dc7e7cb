"""verify: tree, events.jsonl and ledger agree after a real run; tampering is named."""

from __future__ import annotations

import json

import pytest

from otel_agents.persistence.events_file import read_event_lines
from otel_agents.persistence.ledger_read import read_records
from otel_agents.persistence.verify import check_tree, compare_ledger, compare_records, verify_session


@pytest.fixture
def saved(record):
    recorded = record()
    store = recorded.store
    return store.load_tree(), store.events_path, recorded.billing_file


def _rewrite_lines(path, change):
    lines = path.read_text(encoding="utf-8").splitlines()
    lines = change(lines)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_demo_agrees(saved):
    tree, events, billing = saved
    assert verify_session(tree, read_event_lines(events), read_records(billing)) == []


def test_changed_event_content_is_named(saved):
    tree, events, billing = saved

    def tamper(lines):
        line = json.loads(lines[5])
        line["content"] = "something else entirely"
        lines[5] = json.dumps(line)
        return lines

    _rewrite_lines(events, tamper)
    problems = compare_records(tree, read_event_lines(events))
    assert len(problems) == 1
    assert "msg_000006" in problems[0] and "content" in problems[0] and "something else" in problems[0]


def test_missing_and_extra_event_lines_are_named(saved):
    tree, events, billing = saved

    def drop_and_add(lines):
        extra = json.loads(lines[0])
        extra["message_id"] = "msg_999999"
        return lines[:3] + lines[4:] + [json.dumps(extra)]

    _rewrite_lines(events, drop_and_add)
    problems = compare_records(tree, read_event_lines(events))
    assert any("msg_000004" in p and "not in events.jsonl" in p for p in problems)
    assert any("msg_999999" in p and "not in the tree" in p for p in problems)
    assert len(problems) == 2


def test_event_moved_to_another_span_is_named(saved):
    tree, events, billing = saved

    def move(lines):
        line = json.loads(lines[2])
        line["span_id"] = "0" * 16
        lines[2] = json.dumps(line)
        return lines

    _rewrite_lines(events, move)
    problems = compare_records(tree, read_event_lines(events))
    assert len(problems) == 1 and "msg_000003" in problems[0] and "span" in problems[0]


def test_tampered_ledger_is_named(saved):
    tree, events, billing = saved
    records = read_records(billing)
    assert compare_ledger(tree, records) == []
    changed = [dict(r) for r in records]
    changed[0]["cost_usd"] = 123.0
    problems = compare_ledger(tree, changed)
    assert len(problems) == 1 and changed[0]["record_id"] in problems[0] and "cost_usd" in problems[0]
    # A lost record, a duplicate, and a record the tree cannot explain.
    forged = dict(records[1], record_id=records[1]["trace_id"] + ":" + "f" * 16)
    problems = compare_ledger(tree, records[1:] + [records[2], forged])
    assert any("lacks" in p and records[0]["record_id"] in p for p in problems)
    assert any("written 2 times" in p and records[2]["record_id"] in p for p in problems)
    assert any("no operation" in p and forged["record_id"] in p for p in problems)
    assert len(problems) == 3
    # Other sessions' records are not this session's business.
    other = dict(records[0], session_id="someone-else", record_id="x:y")
    assert compare_ledger(tree, records + [other]) == []


def test_tree_with_a_wrong_label_or_total_is_named(saved):
    tree, events, billing = saved
    run = tree["runs"][0]
    run["turns"][1]["ops"][0]["path"] = "9-9"
    run["totals"]["inclusive"]["llm_calls"] += 1
    problems = check_tree(tree)
    assert any("labelled 9-9 at 2-1" in p for p in problems)
    assert any("inclusive llm_calls" in p for p in problems)


@pytest.mark.parametrize("recorded", [[0.1], "0.1", True])
def test_a_total_on_a_span_that_is_not_a_number_is_named_not_raised(saved, recorded):
    from otel_agents.tracing import semconv as sc

    tree, _, _ = saved
    turn = tree["runs"][0]["turns"][0]
    turn["attributes"][sc.total_attr("self", "cost_usd")] = recorded
    problems = check_tree(tree)
    assert any("self cost_usd" in p and repr(recorded).strip("'") in p for p in problems), problems


SECRET = "sk-ant-api03-" + "Zq7xW2" * 14


def test_the_values_quoted_are_redacted(saved):
    """``key: a vs b`` quoted a disagreeing record's values in clear, a secret in one included."""
    from otel_agents.tracing import semconv as sc

    tree, events, billing = saved

    def tamper(lines):
        line = json.loads(lines[5])
        line["content"] = f"my key is {SECRET}"
        lines[5] = json.dumps(line)
        return lines

    _rewrite_lines(events, tamper)
    tree["runs"][0]["turns"][0]["attributes"][sc.total_attr("self", "cost_usd")] = SECRET
    problems = compare_records(tree, read_event_lines(events)) + check_tree(tree)
    assert any("content:" in p and "[REDACTED]" in p for p in problems), problems
    assert any("self cost_usd" in p and "[REDACTED]" in p for p in problems), problems
    assert not any(SECRET[:20] in p for p in problems)
