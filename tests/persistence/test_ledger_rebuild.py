"""The ledger the saved sessions imply: the pure comparison, and a rebuild over real recorded sessions."""

from __future__ import annotations

import pytest

from otel_agents.persistence.ledger import append_records
from otel_agents.persistence.ledger_read import read_records
from otel_agents.persistence.ledger_rebuild import derived_records, plan_rebuild, rebuild_ledger


def rec(n: int, session: str = "s1", ts: str | None = None, **extra) -> dict:
    return {"record_id": f"{n:032x}:{n:016x}", "ts": ts or f"2025-03-04T10:00:{n:02d}Z", "session_id": session,
            "type": "llm", "cost_usd": 0.001, **extra}


def test_a_plan_names_what_was_added_changed_removed_and_kept():
    old = [rec(1), rec(1), rec(2, cost_usd=0.5), rec(3), rec(4, session="gone")]
    derived = {"s1": [rec(1), rec(2), rec(5)]}
    plan = plan_rebuild(old, derived)
    assert plan.added == [rec(5)["record_id"]]
    assert plan.changed == [(rec(2)["record_id"], ["cost_usd"])]
    assert plan.removed == [rec(3)["record_id"]]  # its session was derived again without it
    assert (plan.kept, plan.duplicates, plan.derived) == (1, 1, 3)  # session "gone" has no saved tree
    assert [r["record_id"] for r in plan.records] == [rec(n)["record_id"] for n in (1, 2, 4, 5)]  # by time
    assert plan.differs


def test_a_session_not_rebuilt_keeps_the_preferred_copy_of_a_repeated_record_whatever_the_line_order():
    """The first copy was kept: the same lines in another order left another cost on the books."""
    cheap, dear = rec(1, session="gone"), rec(1, session="gone", cost_usd=77.0)
    kept = []
    for old in ([cheap, dear, rec(2, session="gone")], [dear, cheap, rec(2, session="gone")]):
        plan = plan_rebuild(old, {})
        assert (plan.duplicates, plan.disagreeing, plan.kept) == (1, 1, 2)
        kept.append(plan.records)
    assert kept[0] == kept[1] and kept[0][0]["cost_usd"] == 77.0  # the greatest canonical JSON, as billing reads


def test_a_ledger_equal_to_the_sessions_does_not_differ():
    records = [rec(1), rec(2)]
    plan = plan_rebuild(records, {"s1": [dict(r) for r in records]})
    assert not plan.differs and plan.records == records


def test_derived_records_are_the_ledger_a_run_wrote(record):
    recorded = record("jack-and-jill", ["Go"])
    derived = derived_records(recorded.store.directory.parent, warn=[].append)
    assert derived.unreadable == 0 and derived.live == 0
    assert list(derived.by_session) == [recorded.session.id]
    written = read_records(recorded.billing_file)
    assert [r["record_id"] for r in derived.by_session[recorded.session.id]] == [r["record_id"] for r in written]


def test_a_dry_run_without_a_ledger_creates_nothing(record, tmp_path):
    """It created the ledger's directory and an empty ledger: taking the lock opens it for append."""
    recorded = record("jack-and-jill", ["Go"])
    billing = tmp_path / "fresh" / "billing.jsonl"
    dry = rebuild_ledger(billing, recorded.store.directory.parent, warn=[].append, dry_run=True)
    assert dry.written is None and dry.plan.added and not (tmp_path / "fresh").exists()
    empty = tmp_path / "empty"
    dry = rebuild_ledger(empty / "billing.jsonl", empty / "sessions", warn=[].append, dry_run=True)
    assert dry.written is None and not dry.plan.differs and not empty.exists()


def test_rebuild_restores_a_lost_ledger_and_a_dry_run_writes_nothing(record, tmp_path):
    recorded = record("jack-and-jill", ["Go"])
    sessions_dir = recorded.store.directory.parent
    expected = read_records(recorded.billing_file)
    billing = tmp_path / "other" / "billing.jsonl"
    append_records(billing, [rec(7, session="elsewhere")])  # a session with no saved tree: kept
    before = billing.read_bytes()

    dry = rebuild_ledger(billing, sessions_dir, warn=[].append, dry_run=True)
    assert dry.written is None and billing.read_bytes() == before
    assert sorted(dry.plan.added) == sorted(r["record_id"] for r in expected)
    assert (dry.sessions, dry.unreadable, dry.plan.kept) == (1, 0, 1)

    done = rebuild_ledger(billing, sessions_dir, warn=[].append)
    assert done.written == len(expected) + 1
    assert {r["record_id"] for r in read_records(billing)} == {r["record_id"] for r in expected} | {rec(7)["record_id"]}
    assert not rebuild_ledger(billing, sessions_dir, warn=[].append).plan.differs


def test_an_unreadable_tree_keeps_its_records_and_the_adjustment_sees_the_plan(record):
    recorded = record("jack-and-jill", ["Go"])
    before = recorded.billing_file.read_bytes()
    recorded.store.tree_path.write_bytes(b"not gzip")
    sessions_dir = recorded.store.directory.parent
    # The journal holds the session still: the records are derived from it, and agree.
    from_journal = rebuild_ledger(recorded.billing_file, sessions_dir, [].append)
    assert (from_journal.sessions, from_journal.unreadable, from_journal.written) == (1, 0, None)
    journal = recorded.store.journal_path
    journal.write_bytes(b'{"damaged": \n' + journal.read_bytes())  # mid-file: not a torn last line
    warnings: list[str] = []
    seen = []
    done = rebuild_ledger(recorded.billing_file, recorded.store.directory.parent, warnings.append, adjust=seen.append)
    assert done.unreadable == 1 and done.sessions == 0 and len(warnings) == 1
    assert seen == [done.plan] and done.plan.kept == len(read_records(recorded.billing_file))
    assert done.written is None and recorded.billing_file.read_bytes() == before


def test_an_incomplete_session_keeps_its_records_and_only_adds_missing_ones():
    """Its partial tree proves no record wrong: none is changed or removed, whatever it implies."""
    old = [rec(1), rec(2), rec(3), rec(4, session="s2")]
    derived = {"s1": [rec(1, status="interrupted", cost_usd=None), rec(5)], "s2": [rec(6, session="s2")]}
    plan = plan_rebuild(old, derived, incomplete={"s1"})
    assert plan.added == [rec(5)["record_id"], rec(6)["record_id"]]
    assert plan.changed == [] and plan.removed == [rec(4)["record_id"]]  # s2 is whole: it proves rec 4 wrong
    assert (plan.kept, plan.held, plan.derived) == (3, 3, 3)
    assert [r for r in plan.records if r["session_id"] == "s1"] == [rec(1), rec(2), rec(3), rec(5)]


def test_a_span_shown_interrupted_does_not_replace_how_it_ended():
    """An interrupted span's end was never saved: the ledger's record of that end stands."""
    old = [rec(1, status="ok"), rec(2, status="interrupted", cost_usd=None)]
    derived = {"s1": [rec(1, status="interrupted", cost_usd=None), rec(2, status="ok")]}
    plan = plan_rebuild(old, derived)
    assert plan.changed == [(rec(2)["record_id"], ["cost_usd", "status"])] and not plan.removed
    assert plan.records == [rec(1, status="ok"), rec(2, status="ok")]


def _half_journal(store) -> None:
    lines = store.journal_path.read_bytes().splitlines(keepends=True)
    store.journal_path.write_bytes(b"".join(lines[: len(lines) // 2]))


def _torn_journal(store) -> None:
    store.journal_path.write_bytes(store.journal_path.read_bytes()[:-40])


def _half_journal_damaged_tree(store) -> None:
    _half_journal(store)
    store.tree_path.write_bytes(b"not gzip")


def _both_streams_short(store) -> None:
    """No event names a missing span: only the checkpoint shows the journal is cut short."""
    _half_journal(store)
    lines = store.events_path.read_bytes().splitlines(keepends=True)
    store.events_path.write_bytes(b"".join(lines[: len(lines) // 3]))


@pytest.mark.parametrize("damage", [_half_journal, _torn_journal, _half_journal_damaged_tree, _both_streams_short])
def test_a_session_whose_saved_state_is_not_whole_keeps_its_billed_records(record, damage):
    """A journal shorter than its checkpoint was trusted: successful priced calls were rewritten
    as interrupted with no cost, and the records of the spans it lacked were removed."""
    recorded = record("jack-and-jill", ["a", "b"])
    before = recorded.billing_file.read_bytes()
    damage(recorded.store)
    warnings: list[str] = []
    done = rebuild_ledger(recorded.billing_file, recorded.store.directory.parent, warnings.append)
    assert (done.plan.added, done.plan.changed, done.plan.removed) == ([], [], [])
    assert done.incomplete == 1 and done.plan.held == len(read_records(recorded.billing_file))
    assert done.written is None and recorded.billing_file.read_bytes() == before
    (said,) = [w for w in warnings if "not whole" in w]
    assert said.startswith(f"session {recorded.session.id}: ") and "sessions verify" in said


def test_a_whole_session_recovered_from_its_journal_is_still_rebuilt(record):
    """A checkpoint merely behind its journal (a writer killed after it) is no reason to hold back."""
    stores, stale = [], []
    recorded = record("jack-and-jill", ["a", "b"], prepare=stores.append,
                      between=lambda _: stale.append(stores[0].tree_path.read_bytes()))
    recorded.store.tree_path.write_bytes(stale[0])  # the checkpoint of the first run only
    warnings: list[str] = []
    done = rebuild_ledger(recorded.billing_file, recorded.store.directory.parent, warnings.append, dry_run=True)
    assert done.incomplete == 0 and not done.plan.differs, warnings


def _live_resume(home, tmp_path, prompts: int):
    """A saved session and a real `resume` process billing ``prompts`` slow runs of it; returns
    (session id, the process, the ledger's records before it)."""
    import json
    import os
    import subprocess
    import sys

    from click.testing import CliRunner

    from otel_agents.cli import cli

    script = tmp_path / "slow.json"
    turns = ["a1", "a2"] + [{"text": f"s{n}", "latency_ms": 300} for n in range(prompts)]
    script.write_text(json.dumps({"name": "slow", "agents": {"main": turns}}))
    first = CliRunner().invoke(cli, ["run", "--script", str(script), "p1", "p2"])
    assert first.exit_code == 0, first.output
    (session_id,) = [line.split(": ", 1)[1] for line in first.stderr.splitlines() if line.startswith("session: ")]
    before = read_records(home / "billing.jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env.update(OTEL_AGENTS_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "resume", session_id,
                             *[f"q{n}" for n in range(prompts)]],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return session_id, proc, before


def test_a_rebuild_during_a_live_run_keeps_what_the_run_billed(home, tmp_path):
    """The tree on disk lags a live run's appends: taking it as the session's whole ledger removed
    records the run never appends again. A session a process holds is left to it."""
    import time

    from click.testing import CliRunner

    from otel_agents.cli import cli

    session_id, proc, before = _live_resume(home, tmp_path, prompts=12)
    try:
        deadline = time.monotonic() + 60
        while len(read_records(home / "billing.jsonl")) < len(before) + 3:  # the resume is billing its runs
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr and proc.stderr.read()
            time.sleep(0.05)
        rebuilt = CliRunner().invoke(cli, ["billing", "rebuild"])
        assert rebuilt.exit_code == 0, rebuilt.output
        assert "kept from sessions not rebuilt (1 being written)" in rebuilt.stdout, rebuilt.stdout
    finally:
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    verified = CliRunner().invoke(cli, ["sessions", "verify", session_id])
    assert verified.exit_code == 0, verified.output  # every billed run is still in the ledger
