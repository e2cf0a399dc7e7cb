"""``otel-agents import``: trace files into session directories exactly as a live run writes them."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from otel_agents.cli import cli
from otel_agents.persistence.saved import load_saved
from otel_agents.persistence.events_file import read_event_lines
from otel_agents.persistence.span_placement import session_id_for
from otel_agents.persistence.journal import read_journal, spans_from_journal
from otel_agents.persistence.ledger_read import read_records
from otel_agents.persistence.store import SessionStore
from otel_agents.persistence.tree_walk import iter_ops

from support.shared_fixtures import FIXTURES, require_fixtures, shared_fixture

ALL_FIXTURES = sorted(str(p) for p in FIXTURES.rglob("*.json"))
PROMPTS = ["Create Jack and Jill for a cafe discussion", "And then?"]


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def storage(home: Path) -> list[str]:
    return ["--sessions-dir", str(home / "sessions"), "--billing-file", str(home / "billing.jsonl")]


def snapshot(home: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under a home with its bytes and mtime: "nothing written" means this is unchanged."""
    if not home.exists():
        return {}
    return {str(p.relative_to(home)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(home.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A two-run demo session recorded live, with its spans exported through --otlp-file."""
    root = tmp_path_factory.mktemp("live")
    mp = pytest.MonkeyPatch()
    mp.setenv("OTEL_TRACES_EXPORTER", "none")
    mp.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    try:
        home, otlp = root / "home", root / "export.jsonl"
        result = invoke("run", *PROMPTS, "--otlp-file", otlp, *storage(home))
        assert result.exit_code == 0, result.stderr
    finally:
        mp.undo()
    (directory,) = (home / "sessions").iterdir()
    return home, SessionStore(directory), otlp


@pytest.fixture
def env(home, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    return home


def test_an_exported_session_imports_as_the_live_one(live, env):
    live_home, live_store, otlp = live
    result = invoke("import", otlp, *storage(env))
    assert result.exit_code == 0, result.stderr
    sid = live_store.session_id
    # issue 23: 43 records, the demo's 41 and its two host notices (the 429 retry, the denial)
    assert result.stdout.strip() == f"session {sid}: created: 45 span(s), 43 record(s), 2 run(s); 21 ledger record(s) added"
    store = SessionStore(env / "sessions" / sid)
    # issue 23: the pricing snapshot too, the same as the live session's (its entries travel on the spans)
    assert sorted(p.name for p in store.directory.iterdir()) == ["events.jsonl", "meta.json", "owner.lock", "pricing.json", "spans.jsonl", "tree.json.gz"]
    assert (store.directory / "pricing.json").read_bytes() == (live_store.directory / "pricing.json").read_bytes()
    # Same event stream, byte for byte; same tree; same ledger records.
    assert store.events_path.read_bytes() == live_store.events_path.read_bytes()
    assert store.load_tree() == live_store.load_tree()
    assert read_records(env / "billing.jsonl") == read_records(live_home / "billing.jsonl")
    # meta.json differs only in when its files were written, and in their sizes (the journals differ, below).
    ignore = {"created", "updated", "checkpoint"}
    mine, theirs = store.read_meta(), live_store.read_meta()
    assert mine["checkpoint"]["files"]["events.jsonl"][0] == theirs["checkpoint"]["files"]["events.jsonl"][0]
    assert mine["billed"] and theirs["billed"]
    assert {k: v for k, v in mine.items() if k not in ignore} == {k: v for k, v in theirs.items() if k not in ignore}
    # The journal gives back the same spans (its lines differ: live, starts and ends interleave and an
    # end line holds the attributes set after the start; an import knows only the final attributes).
    def spans(s):
        rebuilt = spans_from_journal(read_journal(s.journal_path, pytest.fail), read_event_lines(s.events_path))
        return sorted(rebuilt, key=lambda span: span.span_id)
    assert spans(store) == spans(live_store)
    assert load_saved(store.directory, pytest.fail).tree == store.load_tree()
    assert invoke("sessions", "verify", sid, *storage(env)).exit_code == 0


def test_importing_the_same_spans_again_writes_nothing(live, env):
    live_home, live_store, otlp = live
    assert invoke("import", otlp, *storage(env)).exit_code == 0
    for home in (env, live_home):  # again into the import, and into the home that recorded it live
        before = snapshot(home)
        result = invoke("import", otlp, *storage(home))
        assert result.exit_code == 0, result.stderr
        assert result.stdout.strip() == f"session {live_store.session_id}: unchanged; 0 ledger record(s) added"
        assert snapshot(home) == before


def test_new_runs_merge_into_an_existing_session(live, env, tmp_path):
    live_home, live_store, otlp = live
    first_trace = live_store.load_tree()["runs"][0]["trace_id"]
    run1, rest = tmp_path / "run1.jsonl", tmp_path / "rest.jsonl"
    lines = otlp.read_bytes().splitlines(keepends=True)

    def in_run1(line: bytes) -> bool:
        doc = orjson.loads(line)
        return {s["traceId"] for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]} == {first_trace}

    run1.write_bytes(b"".join(l for l in lines if in_run1(l)))
    rest.write_bytes(b"".join(l for l in lines if not in_run1(l)))
    assert invoke("import", run1, *storage(env)).exit_code == 0
    store = SessionStore(env / "sessions" / live_store.session_id)
    assert [r["index"] for r in store.load_tree()["runs"]] == [1]
    created = store.read_meta()["created"]
    merged = invoke("import", rest, otlp, "--json", *storage(env))
    assert merged.exit_code == 0, merged.stderr
    (summary,) = json.loads(merged.stdout)
    assert summary["created"] is False and summary["runs"] == 2 and summary["spans_added"] == 3
    assert summary["ledger_records_added"] == 1
    # The same session as recorded live, in the same files.
    assert store.load_tree() == live_store.load_tree()
    assert store.events_path.read_bytes() == live_store.events_path.read_bytes()
    assert store.read_meta()["created"] == created
    assert invoke("sessions", "verify", live_store.session_id, *storage(env)).exit_code == 0


def test_records_that_contradict_the_saved_session_are_refused(live, tmp_path):
    live_home, live_store, otlp = live
    text = otlp.read_text()
    assert text.count("Hi, I'm Jack. *extends hand*") >= 1
    forged = tmp_path / "forged.jsonl"
    forged.write_text(text.replace("Hi, I'm Jack. *extends hand*", "Something Jack never said."))
    before = snapshot(live_home)
    result = invoke("import", forged, *storage(live_home))
    assert result.exit_code == 2
    assert f"{forged}: session {live_store.session_id}: record msg_" in result.stderr
    assert "contradicts the one already saved (it differs in content)" in result.stderr
    assert "Something Jack never said" not in result.stderr and "*extends hand*" not in result.stderr  # no values
    assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot(live_home) == before


SECRET = "sk-ant-api03-ABCDEFGHIJ1234567890"


@pytest.fixture(scope="module")
def secret_live(tmp_path_factory):
    """A session whose prompt holds a key-shaped secret: saved verbatim, [REDACTED] in its --otlp-file."""
    root = tmp_path_factory.mktemp("secret")
    mp = pytest.MonkeyPatch()
    mp.setenv("OTEL_TRACES_EXPORTER", "none")
    mp.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    try:
        home, otlp = root / "home", root / "export.jsonl"
        result = invoke("run", f"{SECRET} hello", "--otlp-file", otlp, *storage(home))
        assert result.exit_code == 0, result.stderr
    finally:
        mp.undo()
    assert SECRET not in otlp.read_text() and "[REDACTED] hello" in otlp.read_text()
    (directory,) = (home / "sessions").iterdir()
    assert SECRET in SessionStore(directory).events_path.read_text()
    return home, SessionStore(directory), otlp


def test_a_session_s_own_redacted_export_imported_back_changes_nothing(secret_live):
    """The file is the saved session with its secrets replaced: nothing in it is new, so it is a re-import."""
    home, store, otlp = secret_live
    before = snapshot(home)
    result = invoke("import", otlp, *storage(home))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == f"session {store.session_id}: unchanged; 0 ledger record(s) added"
    assert snapshot(home) == before


def test_a_contradiction_never_shows_the_saved_secret(secret_live, tmp_path):
    home, store, otlp = secret_live
    forged = tmp_path / "forged.jsonl"
    forged.write_text(otlp.read_text().replace("[REDACTED] hello", "[REDACTED] goodbye"))
    before = snapshot(home)
    result = invoke("import", forged, *storage(home))
    assert result.exit_code == 2
    assert "contradicts the one already saved (it differs in content)" in result.stderr, result.stderr
    assert SECRET not in result.stderr and "goodbye" not in result.stderr and "hello" not in result.stderr
    assert snapshot(home) == before


def test_every_fixture_imports_and_is_listed(env):
    require_fixtures()
    result = invoke("import", *ALL_FIXTURES, "--json", *storage(env))
    assert result.exit_code == 0, result.stderr
    summaries = json.loads(result.stdout)
    # Other software's traces carry no session id: one session per trace, named after it.
    sessions = {s["session_id"] for s in summaries}
    assert sessions == {"trace-83a9efd15c1c98a9", "trace-71274d9041e0213e", "trace-0000000000000001",
                        "trace-0000000000000011", "trace-5b8efff798038103"}
    listed = json.loads(invoke("sessions", "list", "--json", *storage(env)).stdout)
    assert {s["id"] for s in listed} == sessions
    assert all(s["runs"] == 0 and s["status"] == "ok" for s in listed)
    # No agent, model or tool span in any: nothing to bill, so none waits for the rest of a trace.
    assert all(s["billed"] for s in summaries), [s["session_id"] for s in summaries if not s["billed"]]
    for sid in sessions:
        assert invoke("sessions", "verify", sid, *storage(env)).exit_code == 0
        assert invoke("sessions", "show", sid, *storage(env)).exit_code == 0
    # The same span in OTLP/JSON and in Jaeger JSON (otlp2jaeger-in/-out) is one span.
    tree = SessionStore(env / "sessions" / "trace-83a9efd15c1c98a9").load_tree()
    assert [op["name"] for op in tree["ops"]] == ["okey-dokey-0"]
    # Different spans that share an id (ui_01.json and span_tags_trace.json) are both kept.
    shared = SessionStore(env / "sessions" / "trace-0000000000000001").load_tree()
    names = sorted(ref.op["name"] for ref in iter_ops(shared))
    assert names.count("some-operation") == 3 and "test-general-conversion" in names
    renamed = [ref.op for ref in iter_ops(shared) if "otel_agents.import.original_span_id" in ref.op["attributes"]]
    assert any(op["attributes"]["otel_agents.import.original_span_id"] == "0000000000000002" for op in renamed)
    # Each file on its own, again: nothing new.
    before = snapshot(env)
    for path in ALL_FIXTURES:
        again = invoke("import", path, *storage(env))
        assert again.exit_code == 0 and "unchanged" in again.stdout, (path, again.stdout)
    assert snapshot(env) == before


def _otlp(spans: list[dict]) -> str:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "other-agent-framework"}}]},
        "scopeSpans": [{"scope": {"name": "other"}, "spans": spans}]}]})


def _attr(key, value):
    kind = "intValue" if isinstance(value, int) else "doubleValue" if isinstance(value, float) else "stringValue"
    return {"key": key, "value": {kind: str(value) if isinstance(value, int) else value}}


def test_other_software_s_genai_trace_becomes_a_session_with_accounting(env, tmp_path):
    trace = "5" * 32
    conversation = "conv/42:weird id"
    spans = [
        {"traceId": trace, "spanId": "a" * 16, "name": "invoke_agent planner", "kind": 1,
         "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000005000000000",
         "attributes": [_attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", "planner"),
                        _attr("gen_ai.conversation.id", conversation)]},
        {"traceId": trace, "spanId": "b" * 16, "parentSpanId": "a" * 16, "name": "chat gpt-4o", "kind": 3,
         "startTimeUnixNano": "1700000001000000000", "endTimeUnixNano": "1700000002000000000",
         "attributes": [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.request.model", "gpt-4o"),
                        _attr("gen_ai.provider.name", "openai"), _attr("gen_ai.usage.input_tokens", 120),
                        _attr("gen_ai.usage.output_tokens", 30), _attr("gen_ai.usage.cost", 0.00042)]},
        {"traceId": trace, "spanId": "c" * 16, "parentSpanId": "a" * 16, "name": "execute_tool search", "kind": 1,
         "startTimeUnixNano": "1700000003000000000", "endTimeUnixNano": "1700000004000000000",
         "attributes": [_attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", "search")],
         "status": {"code": 2, "message": "search backend down"}},
    ]
    path = tmp_path / "other.json"
    path.write_text(_otlp(spans))
    result = invoke("import", path, "--json", *storage(env))
    assert result.exit_code == 0, result.stderr
    (summary,) = json.loads(result.stdout)
    sid = summary["session_id"]
    assert sid == session_id_for(conversation, trace) and sid.startswith("conv-")  # not usable as a directory name
    assert summary["runs"] == 1 and summary["ledger_records_added"] == 2
    tree = SessionStore(env / "sessions" / sid).load_tree()
    run = tree["runs"][0]
    assert run["agent_name"] == "planner" and run["status"] == "ok"
    assert [ref.op["status"] for ref in iter_ops(tree)] == ["ok", "error"]
    assert run["totals"]["inclusive"]["input_tokens"] == 120 and run["totals"]["inclusive"]["cost_usd"] == 0.00042
    ledger = {r["type"]: r for r in read_records(env / "billing.jsonl")}
    assert ledger["llm"]["tokens"]["total"] == 150 and ledger["llm"]["model"] == "gpt-4o"
    assert ledger["tool"]["status"] == "failed" and ledger["tool"]["error"] == "search backend down"
    assert invoke("sessions", "verify", sid, *storage(env)).exit_code == 0


@pytest.mark.parametrize("order", ["early spans first", "root first"])
def test_a_trace_imported_in_parts_is_billed_once_it_is_whole(live, env, tmp_path, order):
    # A Collector's rotated files split a trace anywhere: a record's path depends on every span of
    # it, and a ledger record is never rewritten, so nothing is billed while a part is missing.
    live_home, live_store, otlp = live
    lines = otlp.read_bytes().splitlines(keepends=True)
    early, late = tmp_path / "early.jsonl", tmp_path / "late.jsonl"
    early.write_bytes(b"".join(lines[: len(lines) // 2]))
    late.write_bytes(b"".join(lines[len(lines) // 2:]))
    first, second = (early, late) if order == "early spans first" else (late, early)
    partial = invoke("import", first, *storage(env))
    assert partial.exit_code == 0, partial.stderr
    assert "not billed yet: a trace is not whole" in partial.stdout
    assert not (env / "billing.jsonl").exists()
    # Listed as what it is: the spans that came need not show how the run ended.
    listed = invoke("sessions", "list", "--json", *storage(env))
    assert [s["status"] for s in json.loads(listed.stdout)] == ["incomplete"]
    whole = invoke("import", second, "--json", *storage(env))
    assert whole.exit_code == 0, whole.stderr
    assert [s["billed"] for s in json.loads(whole.stdout)] == [True]
    listed = invoke("sessions", "list", "--json", *storage(env))
    assert [s["status"] for s in json.loads(listed.stdout)] == ["ok"]
    store = SessionStore(env / "sessions" / live_store.session_id)
    assert read_records(env / "billing.jsonl") == read_records(live_home / "billing.jsonl")
    assert store.events_path.read_bytes() == live_store.events_path.read_bytes()  # in message order again
    assert store.load_tree() == live_store.load_tree()
    assert invoke("sessions", "verify", live_store.session_id, *storage(env)).exit_code == 0


def test_an_unfinished_span_is_completed_by_a_later_import(env, tmp_path):
    trace = "6" * 32
    root = {"traceId": trace, "spanId": "d" * 16, "name": "job", "kind": 1, "startTimeUnixNano": "1700000000000000000",
            "attributes": [_attr("step", "started")]}
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(_otlp([root]))
    second.write_text(_otlp([{**root, "endTimeUnixNano": "1700000001000000000",
                              "attributes": [_attr("step", "done")]}]))
    assert invoke("import", first, *storage(env)).exit_code == 0
    store = SessionStore(env / "sessions" / "trace-6666666666666666")
    assert store.load_tree()["ops"][0]["status"] == "in_progress"
    result = invoke("import", second, *storage(env))
    assert "0 new span(s), 1 completed" in result.stdout
    (op,) = store.load_tree()["ops"]
    assert op["status"] == "ok" and op["attributes"] == {"step": "done"}
    assert [sorted(line) for line in read_journal(store.journal_path, pytest.fail)][-1][0] == "attrs"
    # And the other way round, an unfinished copy of a span already known whole changes nothing.
    before = snapshot(env)
    assert "unchanged" in invoke("import", first, *storage(env)).stdout
    assert snapshot(env) == before


@pytest.mark.parametrize("content, where", [
    ('{"resourceSpans": [', "bad.json:1: invalid JSON"),
    ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz", "spanId": "' + "1" * 16 + '"}]}]}]}',
     "bad.json:1: resourceSpans[0].scopeSpans[0].spans[0].traceId: invalid id 'xyz'"),
    ('{"resourceSpans": []}\n{"resourceSpans": [{"scopeSpans": "nope"}]}\n',
     "bad.json:2: resourceSpans[0].scopeSpans: expected a list"),
    ('{"hello": "world"}', "bad.json:1: not a trace document"),
    ("", "bad.json:1: no spans in the file"),
])
def test_malformed_files_are_refused_naming_file_and_position_and_nothing_is_written(env, tmp_path, content, where):
    good = tmp_path / "good.json"
    good.write_text(shared_fixture("otlp", "example_trace.json").read_text())
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    result = invoke("import", good, bad, *storage(env))
    assert result.exit_code == 2
    assert where in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot(env) == {}  # not even the good file's session


def test_a_span_the_journal_cannot_hold_is_refused(env, tmp_path):
    path = tmp_path / "far.json"
    path.write_text(_otlp([{"traceId": "7" * 32, "spanId": "e" * 16, "name": "far", "kind": 1,
                            "startTimeUnixNano": str(2**70)}]))
    result = invoke("import", path, *storage(env))
    assert result.exit_code == 2 and f"{path}: span {'e' * 16}" in result.stderr and "cannot be stored" in result.stderr
    assert snapshot(env) == {}


def test_a_missing_file_is_refused(env, tmp_path):
    result = invoke("import", tmp_path / "nowhere.json", *storage(env))
    assert result.exit_code == 2 and "nowhere.json:0: cannot read" in result.stderr
    nul = invoke("import", "bad\x00name", *storage(env))  # no file can have this name
    assert nul.exit_code == 2 and ":0: cannot read" in nul.stderr
    assert snapshot(env) == {}


def test_a_session_being_written_is_not_merged_into(live, env):
    live_home, live_store, otlp = live
    assert invoke("import", otlp, *storage(env)).exit_code == 0
    from otel_agents.persistence.ownership import take

    store = SessionStore(env / "sessions" / live_store.session_id)
    with take(store.directory):  # a writer holds the session (its own open file description)
        before = snapshot(env)
        result = invoke("import", otlp, *storage(env))
        assert result.exit_code == 2, result.stderr
        assert f"session {store.session_id} is being written by this process (pid {__import__('os').getpid()})" in result.stderr
        assert snapshot(env) == before


# --- invalid values, deep nesting: exit 2, one line, nothing written ----------------------

GENAI_SPANS = [
    {"traceId": "8" * 32, "spanId": "a" * 16, "name": "invoke_agent planner", "kind": 1,
     "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000005000000000",
     "attributes": [_attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", "planner"),
                    _attr("gen_ai.conversation.id", "conv-prop"), _attr("otel_agents.run.index", 1)],
     "events": [{"timeUnixNano": "1700000000100000000", "name": "transcript_entry", "attributes": [
         _attr("otel_agents.event.message_id", "msg_000001"), _attr("otel_agents.event.agent_id", "agent_001"),
         _attr("otel_agents.event.role", "user"), _attr("otel_agents.event.content", "hello")]}]},
    {"traceId": "8" * 32, "spanId": "b" * 16, "parentSpanId": "a" * 16, "name": "chat gpt-4o", "kind": 3,
     "startTimeUnixNano": "1700000001000000000", "endTimeUnixNano": "1700000002000000000",
     "attributes": [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.request.model", "gpt-4o"),
                    _attr("gen_ai.usage.input_tokens", 120), _attr("gen_ai.usage.output_tokens", 30),
                    _attr("gen_ai.usage.cost", 0.00042), _attr("otel_agents.response.message_id", "msg_000002")]},
    {"traceId": "8" * 32, "spanId": "c" * 16, "parentSpanId": "a" * 16, "name": "execute_tool search", "kind": 1,
     "startTimeUnixNano": "1700000003000000000", "endTimeUnixNano": "1700000004000000000",
     "attributes": [_attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", "search"),
                    _attr("otel_agents.tool.chars_in", 12)]},
]


def _with_attribute(span_index: int, key: str, kind: str, value) -> str:
    spans = json.loads(json.dumps(GENAI_SPANS))
    spans[span_index]["attributes"].append({"key": key, "value": {kind: value}})
    return json.dumps(json.loads(_otlp(spans)), indent=2)


@pytest.fixture
def populated(env, tmp_path):
    """A home that already holds a session and ledger records (of the fixtures' traces)."""
    assert invoke("import", shared_fixture("otlp", "example_trace.json"), *storage(env)).exit_code == 0
    valid = tmp_path / "valid.json"
    valid.write_text(_otlp(GENAI_SPANS))
    result = invoke("import", valid, *storage(env))
    assert result.exit_code == 0 and "1 run(s); 2 ledger record(s) added" in result.stdout, result.output
    return env


@pytest.mark.parametrize("content, where", [
    (_with_attribute(1, "gen_ai.usage.input_tokens", "intValue", "-5"),
     "spans[1].attributes[6]: gen_ai.usage.input_tokens: expected a non-negative integer below 2**63, got -5"),
    (_with_attribute(1, "gen_ai.usage.output_tokens", "doubleValue", 1.5),
     "spans[1].attributes[6]: gen_ai.usage.output_tokens: expected a non-negative integer below 2**63, got 1.5"),
    (_with_attribute(1, "gen_ai.usage.cost", "doubleValue", "Infinity"),
     "spans[1].attributes[6]: gen_ai.usage.cost: expected a finite non-negative number below 1e15, got inf"),
    (_with_attribute(2, "otel_agents.tool.call_message_id", "stringValue", "call-7"),
     "spans[2].attributes[3]: otel_agents.tool.call_message_id: expected a message id msg_<digits>"),
    (_with_attribute(0, "otel_agents.agent.tools", "intValue", "3"),
     "spans[0].attributes[4]: otel_agents.agent.tools: expected a list of strings, got 3"),
    # Another convention's token count is the count billed (tracing/foreign.py maps it): the same rule.
    (_with_attribute(2, "llm.token_count.prompt", "intValue", "-5"),
     "spans[2].attributes[3]: llm.token_count.prompt: expected a non-negative integer below 2**63, got -5"),
    (_with_attribute(2, "llm.token_count.completion", "intValue", "99999999999999999999999"),
     "spans[2].attributes[3]: llm.token_count.completion: expected a non-negative integer below 2**63, got 9999"),
    (_with_attribute(2, "gen_ai.usage.prompt_tokens", "intValue", "-5"),
     "spans[2].attributes[3]: gen_ai.usage.prompt_tokens: expected a non-negative integer below 2**63, got -5"),
    (_otlp(GENAI_SPANS).replace('"msg_000001"', '"first"'),
     "spans[0].events[0]: record: message_id 'first' is not of the form msg_<digits>"),
    (_otlp(GENAI_SPANS).replace('"spanId": "' + "c" * 16, '"spanId": "' + "c" * 15),
     "spans[2].spanId: invalid id"),
    ('{"resourceSpans": ' + "[" * 200 + "]" * 200 + "}", "nesting deeper than 64"),
    ("[" * 5000, "nesting deeper than 64"),  # never closed: the parser recursed to a RecursionError
    ('[{"a":' * 3000, "nesting deeper than 64"),
], ids=["negative-tokens", "fractional-tokens", "infinite-cost", "message-id", "list-attribute",
        "openinference-negative-tokens", "openinference-huge-tokens", "openllmetry-negative-tokens", "record",
        "span-id", "nesting", "nesting-never-closed", "nesting-objects-never-closed"])
def test_invalid_values_are_refused_and_nothing_is_written(populated, tmp_path, content, where):
    before = snapshot(populated)
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    good = tmp_path / "good.json"
    good.write_text(_otlp([{**GENAI_SPANS[0], "traceId": "9" * 32, "attributes": []}]))
    result = invoke("import", good, bad, *storage(populated))
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {bad}:") and f": resourceSpans[0].scopeSpans[0].{where}" in line \
        or where.startswith("nesting") and line.endswith(where), line
    number = int(line.split(f"{bad}:", 1)[1].split(":")[0])
    if "nesting" not in where:  # the line holding the offending value's object (pretty-printed files)
        assert 1 <= number <= content.count("\n") + 1
    assert snapshot(populated) == before  # other sessions and the ledger byte for byte, not even the good file


def test_the_line_is_the_value_s_own_in_a_pretty_printed_file(env, tmp_path):
    content = _with_attribute(1, "gen_ai.usage.input_tokens", "intValue", "-5")
    bad = tmp_path / "pretty.json"
    bad.write_text(content)
    result = invoke("import", bad, *storage(env))
    number = int(result.stderr.split(f"{bad}:", 1)[1].split(":")[0])
    lines = content.splitlines()
    assert lines[number - 1].strip() == "{" and lines[number].strip() == '"key": "gen_ai.usage.input_tokens",'
    assert snapshot(env) == {}


def test_a_chain_continued_across_imports_merges_at_any_depth(env, tmp_path):
    """Nesting is not limited: a 200-deep chain imported in two halves is one session that verifies."""
    def span(i):
        return {"traceId": "4" * 32, "spanId": f"{i:016x}", "name": "op", "startTimeUnixNano": str(i),
                "endTimeUnixNano": str(10**9), **({"parentSpanId": f"{i - 1:016x}"} if i > 1 else {})}

    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(_otlp([span(i) for i in range(1, 100)]))
    second.write_text(_otlp([span(i) for i in range(100, 201)]))
    assert invoke("import", first, *storage(env)).exit_code == 0
    result = invoke("import", second, *storage(env))
    assert result.exit_code == 0 and "merged: 101 new span(s)" in result.stdout, result.stderr
    (session,) = (env / "sessions").iterdir()
    assert invoke("sessions", "verify", session.name, *storage(env)).exit_code == 0


def test_a_real_process_refuses_deep_nesting_with_one_line(tmp_path):
    """The RecursionError traceback this replaces came from a real process: check one."""
    import subprocess
    import sys

    bad = tmp_path / "deep.jsonl"
    bad.write_text(_otlp(GENAI_SPANS) + "\n" + '{"resourceSpans": ' + "[" * 5000 + "]" * 5000 + "}\n")
    home = tmp_path / "home"
    done = subprocess.run([sys.executable, "-m", "otel_agents", "import", str(bad), *storage(home)],
                          capture_output=True, text=True, env={**__import__("os").environ, "OTEL_TRACES_EXPORTER": "none"})
    assert done.returncode == 2
    assert done.stderr == f"Error: {bad}:2: nesting deeper than 64\n"
    assert not home.exists()


# --- property: mutated documents never give a traceback nor a partial write ---------------

_WRONG_VALUES = st.sampled_from([None, -1, -2.5, 0, 3.5, "x", "-7", "NaN", "Infinity", True, [], {}, [1, "a"],
                                 {"stringValue": 5}, {"intValue": "-3"}, {"doubleValue": "NaN"}, 2**70, "msg_x"])


def _places(value, steps=()):
    """Every place in a JSON value: (steps to it, whether it is a container)."""
    yield steps, isinstance(value, (dict, list))
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for step, child in children:
        yield from _places(child, steps + (step,))


def _mutate(doc, data):
    places = [p for p, _ in _places(doc) if p]
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        if not places:
            break
        steps = data.draw(st.sampled_from(places), label="place")
        parent = doc
        try:
            for step in steps[:-1]:
                parent = parent[step]
            last = steps[-1]
            parent[last]  # still there after earlier mutations?
        except (KeyError, IndexError, TypeError):
            continue
        if not isinstance(parent, (dict, list)):  # a string replaced what held it
            continue
        action = data.draw(st.sampled_from(["replace", "delete", "nest"]), label="action")
        if action == "delete":
            del parent[last]
        elif action == "nest":
            depth = data.draw(st.sampled_from([3, 60, 70, 400]), label="depth")
            value = parent[last]
            for _ in range(depth):
                value = [value]
            parent[last] = value
        else:
            parent[last] = data.draw(_WRONG_VALUES, label="value")
    return doc


def _spans_of(doc: dict) -> list[dict]:
    return doc["resourceSpans"][0]["scopeSpans"][0]["spans"]


@pytest.mark.parametrize(("cut", "then"), [("root without its end", "import the rest"),
                                           ("root without its end", "repair"),
                                           ("a call whose parent is missing", "repair")])
def test_a_trace_not_whole_verifies_as_not_billed_yet_until_the_rest_or_repair_bills_it(tmp_path, cut, then):
    """Found by the mutation property below: import said "not billed yet" and verify called the
    ledger records it had not written lost. Now verify says so too, and still checks what is billed."""
    part = json.loads(_otlp(GENAI_SPANS))
    if cut == "root without its end":
        del _spans_of(part)[0]["endTimeUnixNano"]
    else:
        _spans_of(part)[1]["parentSpanId"] = "d" * 16
    (tmp_path / "part.json").write_text(json.dumps(part))
    (tmp_path / "whole.json").write_text(_otlp(GENAI_SPANS))
    home = tmp_path / "home"
    imported = invoke("import", tmp_path / "part.json", *storage(home))
    assert imported.exit_code == 0 and "not billed yet" in imported.output
    verified = invoke("sessions", "verify", "conv-prop", *storage(home))
    assert verified.exit_code == 0 and "not billed yet: a trace of it was not whole when it was saved" in verified.output
    assert not (home / "billing.jsonl").exists() or read_records(home / "billing.jsonl") == []
    if then == "repair":
        assert invoke("sessions", "repair", "conv-prop", *storage(home)).exit_code == 0
    else:
        assert invoke("import", tmp_path / "whole.json", *storage(home)).exit_code == 0
    assert read_records(home / "billing.jsonl")
    assert SessionStore(home / "sessions" / "conv-prop").read_meta().get("awaiting_trace") is None
    verified = invoke("sessions", "verify", "conv-prop", *storage(home))
    assert verified.exit_code == 0 and "not billed yet" not in verified.output, verified.output
    # Billed now: a record lost from the ledger is a disagreement again.
    (home / "billing.jsonl").write_bytes(b"".join((home / "billing.jsonl").read_bytes().splitlines(True)[1:]))
    assert invoke("sessions", "verify", "conv-prop", *storage(home)).exit_code == 1


@pytest.fixture(scope="module")
def template_home(tmp_path_factory):
    """A home holding two imported sessions and ledger records, copied for each example."""
    home = tmp_path_factory.mktemp("template") / "home"
    saved = home.parent / "saved.json"
    saved.write_text(_otlp(GENAI_SPANS).replace("8" * 32, "7" * 32).replace("conv-prop", "conv-saved"))
    assert invoke("import", shared_fixture("otlp", "example_trace.json"), saved, *storage(home)).exit_code == 0
    assert (home / "billing.jsonl").stat().st_size > 0
    return home


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), pretty=st.booleans())
def test_mutated_documents_import_whole_or_not_at_all(template_home, tmp_path, data, pretty):
    import shutil
    import tempfile

    doc = _mutate(json.loads(_otlp(GENAI_SPANS)), data)
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    home = work / "home"
    shutil.copytree(template_home, home)
    before = snapshot(home)
    path = work / "mutated.json"
    path.write_text(json.dumps(doc, indent=2 if pretty else None))
    result = CliRunner().invoke(cli, ["import", str(path), *storage(home)], catch_exceptions=False)
    assert result.exit_code in (0, 2), result.output
    event(f"exit {result.exit_code}")
    if result.exit_code == 2:
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith(f"Error: {path}:"), line
        assert snapshot(home) == before
    else:
        after = snapshot(home)
        # The saved session is another trace's: untouched; the ledger only grew.
        assert {k: v for k, v in after.items() if k in before and k != "billing.jsonl"} == \
            {k: v for k, v in before.items() if k != "billing.jsonl"}
        assert after["billing.jsonl"][0].startswith(before["billing.jsonl"][0])
        for created in {Path(k).parts[1] for k in after if k.startswith("sessions/") and k not in before}:
            verified = invoke("sessions", "verify", created, *storage(home))
            assert verified.exit_code == 0, verified.output


def test_a_trace_imported_from_parts_cut_anywhere_gives_the_live_session(live, tmp_path):
    """Each part alone may hold a sub-agent whose agent above it is in the other part: that
    sub-agent is no run of its own (import once made it one, and billed its call under it)."""
    live_home, live_store, otlp = live
    lines = otlp.read_bytes().splitlines(keepends=True)
    expected_ledger = read_records(live_home / "billing.jsonl")
    for cut in range(5, len(lines) - 4, 4):
        home = tmp_path / f"cut{cut}"
        early, late = home / "early.jsonl", home / "late.jsonl"
        home.mkdir()
        early.write_bytes(b"".join(lines[:cut]))
        late.write_bytes(b"".join(lines[cut - 3:]))  # overlapping, as rotated files may
        for part in (early, late):
            result = invoke("import", part, *storage(home))
            assert result.exit_code == 0, (cut, result.stderr)
        store = SessionStore(home / "sessions" / live_store.session_id)
        assert read_records(home / "billing.jsonl") == expected_ledger, cut
        assert store.load_tree() == live_store.load_tree(), cut
        assert invoke("sessions", "verify", live_store.session_id, *storage(home)).exit_code == 0, cut


def test_one_span_read_two_ways_is_refused_naming_the_span_and_what_differs(live, env, tmp_path):
    """A Jaeger download of a trace keeps microseconds where its OTLP file keeps nanoseconds: the
    copies differ, yet hold the same records. Refused, naming the span, not a derived id."""
    _, live_store, otlp = live
    assert invoke("import", otlp, *storage(env)).exit_code == 0
    document = orjson.loads(otlp.read_bytes().splitlines()[0])
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    start = int(span["startTimeUnixNano"])
    span["startTimeUnixNano"] = str(start - start % 1000 - 1000)  # as a microsecond clock would have it, moved
    other = tmp_path / "other.json"
    other.write_bytes(orjson.dumps(document))
    before = snapshot(env)
    result = invoke("import", other, *storage(env))
    assert result.exit_code == 2
    assert result.stderr == (f"Error: {other}: session {live_store.session_id}: span {span['spanId']} is saved already "
                             f"and this copy of it differs (start_ns); "
                             "import one trace in one format (OTLP or Jaeger), not both\n")
    assert snapshot(env) == before
