"""SpanIntake: plain span batches held until their trace's root, shaped, fed to one sink per session."""

from __future__ import annotations

import json
from pathlib import Path

from otel_agents.persistence.journal import read_journal, spans_from_journal
from otel_agents.persistence.events_file import read_event_lines
from otel_agents.persistence.ownership import owner_of, take
from otel_agents.persistence.span_intake import SpanIntake
from otel_agents.persistence.store import SessionStore
from otel_agents.tracing.spandata import SpanData

TRACE = "0123456789abcdef0123456789abcdef"
OTHER = "fedcba9876543210fedcba9876543210"


def span(span_id: str, parent: str | None, name: str, trace: str = TRACE, **attributes) -> SpanData:
    return SpanData(trace, span_id, parent, name, "INTERNAL", 1_000 + int(span_id, 16), 9_000_000, attributes,
                    resource={"service.name": "svc"})


LLM = dict(**{"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
              "llm.token_count.prompt": 40, "llm.token_count.completion": 2})
ROOT = span("00000000000000a1", None, "POST /ask")
CALL = span("00000000000000a2", "00000000000000a1", "completion", **LLM)
SESSION = "trace-0123456789abcdef"


def saved_spans(sessions: Path, session_id: str) -> list[SpanData]:
    store = SessionStore(sessions / session_id)
    return spans_from_journal(read_journal(store.journal_path), read_event_lines(store.events_path))


def intake(tmp_path: Path, **kwargs) -> SpanIntake:
    return SpanIntake(tmp_path / "sessions", tmp_path / "billing.jsonl", **kwargs)


def test_a_trace_is_held_until_its_root_comes_then_shaped_and_billed(tmp_path):
    feed = intake(tmp_path, hold_s=3600)
    first = feed.take([CALL])
    assert (first.written, first.held) == (0, 1) and not (tmp_path / "sessions").exists()
    second = feed.take([ROOT])
    assert (second.written, second.held, second.sessions) == (3, 0, {SESSION})  # + the synthetic agent
    names = sorted(s.name for s in saved_spans(tmp_path / "sessions", SESSION))
    assert names == ["POST /ask", "completion", "invoke_agent svc"]
    assert not (tmp_path / "billing.jsonl").exists()  # billed once the session closes (or at flush)
    feed.close()
    ledger = [json.loads(line) for line in (tmp_path / "billing.jsonl").read_text().splitlines()]
    assert [(r["type"], r["tokens"]["input"]) for r in ledger] == [("llm", 40)]


def test_a_ledger_record_gets_the_path_of_the_whole_run_whatever_came_first(tmp_path):
    feed = intake(tmp_path, hold_s=3600)
    earlier = span("00000000000000a0", "00000000000000a1", "completion", **LLM)  # starts first: path 0-1
    feed.take([ROOT, CALL])
    feed.take([earlier])
    feed.flush()
    ledger = [json.loads(line) for line in (tmp_path / "billing.jsonl").read_text().splitlines()]
    assert sorted((r["span_id"], r["path"]) for r in ledger) == [("00000000000000a0", "0-1"), ("00000000000000a2", "0-2")]
    feed.close()


def test_a_quiet_trace_without_its_root_is_written_at_the_next_batch_or_at_flush(tmp_path):
    feed = intake(tmp_path, hold_s=0)  # no wait: quiet at once
    assert feed.take([CALL]).written == 2
    other = intake(tmp_path / "b", hold_s=3600)
    assert other.take([CALL]).held == 1
    assert other.flush().written == 2
    feed.close(), other.close()


def test_traces_without_genai_spans_are_ignored_and_counted_once_final(tmp_path):
    feed = intake(tmp_path, hold_s=3600)
    health = span("00000000000000b1", None, "GET /health", trace=OTHER)
    result = feed.take([health])
    assert (result.ignored, result.held) == (0, 1)  # its GenAI spans may still come
    assert feed.close().ignored == 1
    assert feed.totals.ignored == 1 and not (tmp_path / "sessions" / "trace-fedcba9876543210").exists()


def test_a_late_span_of_a_written_trace_is_added_and_the_same_span_again_is_not(tmp_path):
    feed = intake(tmp_path, hold_s=3600)
    feed.take([CALL, ROOT])
    late = span("00000000000000a3", "00000000000000a1", "completion", **LLM)
    assert feed.take([late]).written == 1
    assert feed.take([late, CALL, ROOT]).written == 0
    feed.close()
    again = intake(tmp_path, hold_s=3600)  # another process: the saved journal knows them
    assert again.take([CALL, ROOT, late]).written == 0
    again.close()
    assert len(saved_spans(tmp_path / "sessions", SESSION)) == 4
    assert len((tmp_path / "billing.jsonl").read_text().splitlines()) == 2


def test_a_span_the_tree_cannot_hold_is_rejected_with_its_reason_and_the_rest_kept(tmp_path):
    feed = intake(tmp_path, hold_s=3600)
    bad = span("00000000000000a4", "00000000000000a1", "chat x", **{"gen_ai.usage.input_tokens": -3})
    result = feed.take([bad, CALL, ROOT])
    assert [reason for _, reason in result.rejected] == [
        "span 00000000000000a4: attributes: gen_ai.usage.input_tokens: expected a non-negative integer below 2**63, got -3"]
    assert result.written == 3
    feed.close()


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


def test_a_trace_whose_genai_span_comes_after_its_root_is_written_not_ignored(tmp_path):
    feed = intake(tmp_path, hold_s=3600)
    root = span("00000000000000b1", None, "POST /ask", trace=OTHER)
    assert feed.take([root]).held == 1
    assert feed.take([root]).held == 1  # looked at again only when something new came
    call = span("00000000000000b2", "00000000000000b1", "completion", trace=OTHER, **LLM)
    assert feed.take([call]).written == 3
    assert feed.close().ignored == 0
    assert (tmp_path / "sessions" / "trace-fedcba9876543210" / "spans.jsonl").exists()


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
