"""OpenSessions: each session an intake writes owned while open, closed when idle, billed once whole (through SpanIntake)."""

from __future__ import annotations

import json

from otel_agents.persistence.ownership import owner_of, take
from otel_agents.tracing.spandata import SpanData
from test_span_intake import CALL, LLM, OTHER, ROOT, SESSION, TRACE, intake, span


def test_sessions_are_owned_while_open_and_a_busy_one_is_refused(tmp_path):
    feed = intake(tmp_path, hold_s=3600)
    feed.take([CALL, ROOT])
    assert owner_of(tmp_path / "sessions" / SESSION) is not None  # this process writes it
    feed.close()
    assert owner_of(tmp_path / "sessions" / SESSION) is None
    with take(tmp_path / "sessions" / "s-live", create=True):
        busy = intake(tmp_path, hold_s=3600)
        run = span("00000000000000c1", None, "invoke_agent a", trace=OTHER, **{
            "gen_ai.operation.name": "invoke_agent", "otel_agents.session.id": "s-live"})
        result = busy.take([run])
        assert result.written == 0 and "being written" in result.rejected[0][1]
        assert not (tmp_path / "sessions" / "s-live" / "spans.jsonl").exists()
    assert busy.take([run]).written == 1  # delivered again once the run has ended: written then
    busy.close()


def test_sync_puts_what_was_written_on_disk_and_only_that(tmp_path, monkeypatch):
    import os

    synced: list[str] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd)))

    def sync() -> list[str]:
        synced.clear()  # the tree, meta.json and the ledger are fsynced as they are written
        feed.sync()
        return sorted(synced)

    feed = intake(tmp_path, hold_s=3600)
    feed.take([CALL])
    assert sync() == []  # held: nothing written yet
    feed.take([ROOT])
    directory = tmp_path / "sessions" / SESSION
    assert sync() == [str(directory / "events.jsonl"), str(directory / "spans.jsonl")]
    assert sync() == []
    feed.close()


def test_a_session_saved_without_a_journal_is_left_as_it_is(tmp_path):
    directory = tmp_path / "sessions" / SESSION
    directory.mkdir(parents=True)
    (directory / "tree.json.gz").write_bytes(b"old")
    feed = intake(tmp_path, hold_s=3600)
    result = feed.take([CALL, ROOT])
    feed.close()
    assert result.written == 0 and "without spans.jsonl" in result.rejected[0][1]
    assert sorted(p.name for p in directory.iterdir()) == ["tree.json.gz"]
    assert (directory / "tree.json.gz").read_bytes() == b"old"


def test_a_reopened_session_keeps_the_created_time_it_was_saved_with(tmp_path):
    feed = intake(tmp_path, hold_s=3600)
    feed.take([CALL, ROOT])
    feed.close()
    meta_path = tmp_path / "sessions" / SESSION / "meta.json"
    created = json.loads(meta_path.read_text())["created"]
    # A later batch (a resume's spans, a restarted collect) starts an hour on: it is not when the session began.
    later = SpanData(TRACE, "00000000000000a5", "00000000000000a1", "completion", "INTERNAL", 3_600_000_000_000,
                     3_600_009_000_000, LLM, resource={"service.name": "svc"})
    again = intake(tmp_path, hold_s=3600)
    again.take([later])
    assert again.flush().written >= 1  # its root is in the other intake's session: written when flushed
    again.close()
    assert json.loads(meta_path.read_text())["created"] == created


def test_a_session_closed_with_a_trace_not_whole_verifies_as_not_billed_yet_until_the_rest_comes(tmp_path):
    """As an import of part of a trace: collect closing a session whose run's root counts two model calls
    when one came leaves its ledger records unwritten on purpose, and `sessions verify` must not call them lost."""
    from otel_agents.persistence.session_check import verify_directory

    ours = {"otel_agents.session.id": "s-part"}  # an otel-agents run's trace: taken span by span, not shaped
    root = span("00000000000000a1", None, "invoke_agent a", **ours, **{
        "gen_ai.operation.name": "invoke_agent", "otel_agents.totals.inclusive.llm_calls": 2})
    usage = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 40,
             "gen_ai.usage.output_tokens": 2}
    call, late_call = (span(i, "00000000000000a1", "chat m", **ours, **usage) for i in ("00000000000000a2", "00000000000000a3"))
    directory, billing = tmp_path / "sessions" / "s-part", tmp_path / "billing.jsonl"

    def verify():
        return verify_directory(directory, billing, warn=lambda message: None)

    feed = intake(tmp_path, hold_s=3600, named_only=True)
    assert feed.take([root, call]).written == 2
    feed.close(flush=False)  # as collect stops: a session not whole is not billed
    assert not billing.exists() or billing.read_text() == ""
    first = verify()
    # The missing call shows in the tree's totals; its run's records are not billed yet, not lost.
    assert first.problems == ["tree: invoke_agent a (00000000000000a1) inclusive llm_calls is 1 from its operations "
                              "but 2 on its span"], first
    assert any(n.startswith("not billed yet") for n in first.notes), first
    again = intake(tmp_path, hold_s=3600, named_only=True)
    again.take([late_call])  # the rest of the trace: whole now, billed when it closes
    again.close(flush=False)
    assert [json.loads(line)["span_id"] for line in billing.read_text().splitlines()] == ["00000000000000a2", "00000000000000a3"]
    assert "awaiting_trace" not in json.loads((directory / "meta.json").read_text())
    second = verify()
    assert second.problems == [] and not any(n.startswith("not billed yet") for n in second.notes), second


def test_a_run_of_a_copy_carried_on_elsewhere_is_refused_whole_and_the_saved_session_stays_one_history(tmp_path):
    """Resumed on two machines from the same point: the second run to arrive reuses the first's message ids."""
    import shutil
    import subprocess
    import sys

    from otel_agents.persistence.paths import Paths
    from otel_agents.tracing.otlp_decode import decode_otlp_json
    from support.collector import base_env, session_id_in
    from test_intake_state import Intake

    def cli(home, *args, otlp=None):
        extra = ["--otlp-file", str(otlp)] if otlp else []
        done = subprocess.run([sys.executable, "-m", "otel_agents", *args, *extra], env={
            **base_env(home), "OTEL_TRACES_EXPORTER": "none"}, capture_output=True, text=True, timeout=300)
        return done

    def spans_of(path):
        return [s for line in path.read_text().splitlines() for s in decode_otlp_json(line)]

    here, there = tmp_path / "here", tmp_path / "there"
    first = cli(here, "run", "Create Jack and Jill for a cafe discussion", otlp=tmp_path / "run1.jsonl")
    assert first.returncode == 0, first.stderr
    session_id = session_id_in(first.stderr)
    shutil.copytree(here, there)
    for home, prompt, name in ((here, "Go on here", "here2"), (there, "Go on there", "there2")):
        resumed = cli(home, "resume", session_id, prompt, otlp=tmp_path / f"{name}.jsonl")
        assert resumed.returncode == 0, resumed.stderr

    paths = Paths(tmp_path / "central" / "sessions", tmp_path / "central" / "billing.jsonl")
    warnings: list[str] = []
    intake = Intake(paths, warn=warnings.append)
    assert not intake.take(spans_of(tmp_path / "run1.jsonl")).rejected
    assert not intake.take(spans_of(tmp_path / "here2.jsonl")).rejected
    intake.close()  # the copy's run comes after a restart: the saved session's ids are read back
    again = Intake(paths, warn=warnings.append)
    theirs = spans_of(tmp_path / "there2.jsonl")
    result = again.take(theirs)
    again.close()
    assert result.written == 0 and len(result.rejected) == len(theirs)
    assert all("diverges from the saved session" in reason for _, reason in result.rejected)
    assert len(warnings) == 1 and session_id in warnings[0]  # once per trace, on collect's stderr

    central = tmp_path / "central"
    saved = paths.sessions_dir / session_id / "events.jsonl"
    assert saved.read_bytes() == (here / "sessions" / session_id / "events.jsonl").read_bytes()
    assert cli(central, "sessions", "verify", session_id).returncode == 0
    carried = cli(central, "resume", session_id, "And on")
    assert carried.returncode == 0, carried.stderr
