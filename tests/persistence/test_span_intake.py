"""SpanIntake: plain span batches held until their trace's root, shaped, fed to one sink per session."""

from __future__ import annotations

import json
from pathlib import Path

from otel_agents.persistence.journal import read_journal, spans_from_journal
from otel_agents.persistence.events_file import read_event_lines
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


def test_a_trace_whose_genai_span_comes_after_its_root_is_written_not_ignored(tmp_path):
    feed = intake(tmp_path, hold_s=3600)
    root = span("00000000000000b1", None, "POST /ask", trace=OTHER)
    assert feed.take([root]).held == 1
    assert feed.take([root]).held == 1  # looked at again only when something new came
    call = span("00000000000000b2", "00000000000000b1", "completion", trace=OTHER, **LLM)
    assert feed.take([call]).written == 3
    assert feed.close().ignored == 0
    assert (tmp_path / "sessions" / "trace-fedcba9876543210" / "spans.jsonl").exists()
