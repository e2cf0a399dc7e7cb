"""``otel-agents export``: bad input is exit 2 with one line, a refusing endpoint exit 1 with the count,
and the session is only read, also while another process owns it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.persistence.ownership import take
from support.otlp_receivers import HttpTraceReceiver

PROMPT = "Create Jack and Jill for a cafe discussion"


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[Path, str]:
    """One demo session, recorded by a real run with no endpoint."""
    home = tmp_path_factory.mktemp("export") / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_AGENTS_HOME"] = str(home)
    result = subprocess.run([sys.executable, "-m", "otel_agents", "run", PROMPT], env=env,
                            capture_output=True, text=True, timeout=120, cwd=home.parent)
    assert result.returncode == 0, result.stderr
    return home, result.stderr.strip().splitlines()[-1].split("session: ", 1)[1]


@pytest.fixture
def env(saved, monkeypatch):
    for var in list(os.environ):
        if var.startswith("OTEL_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("OTEL_AGENTS_HOME", str(saved[0]))
    return monkeypatch


def invoke(*args: str):
    return CliRunner().invoke(cli, ["export", *args], catch_exceptions=False)


def _journal(directory: Path) -> list[dict]:
    return [orjson.loads(line) for line in (directory / "spans.jsonl").read_bytes().splitlines()]


def _files(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.iterdir())}


@pytest.mark.parametrize(
    "args, variables, message",
    [
        ((), {}, "Error: no OTLP endpoint: give --endpoint URL or set OTEL_EXPORTER_OTLP_ENDPOINT"),
        (("--endpoint", "localhost:4318"), {}, "Error: invalid OTLP endpoint 'localhost:4318' for http/protobuf"),
        (("--endpoint", "http://[::1"), {}, "Error: invalid OTLP endpoint 'http://[::1' for http/protobuf"),
        (("--endpoint", "http://127.0.0.1:4318", "--headers", "garbage"), {},
         "Error: --headers must be key=value pairs separated by commas, values URL-encoded"),
        (("--endpoint", "http://127.0.0.1:4318"), {"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"},
         "Error: OTEL_EXPORTER_OTLP_TIMEOUT must be a positive number of seconds, not 'soon'"),
        (("--endpoint", "http://127.0.0.1:4318"), {"OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"},
         "Error: unsupported OTEL_EXPORTER_OTLP_PROTOCOL 'thrift'"),
        # gRPC takes host:port without a scheme, but a bare word was sent to and failed as exit 1.
        # A bad variable is named, with its value as set (not with the path export adds to it).
        ((), {"OTEL_EXPORTER_OTLP_ENDPOINT": "bogus"},
         "Error: invalid OTLP endpoint 'bogus' in OTEL_EXPORTER_OTLP_ENDPOINT for http/protobuf"),
        (("--endpoint", "notaurl"), {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
         "Error: invalid OTLP endpoint 'notaurl' for grpc"),
        (("--endpoint", "notaurl"), {}, "Error: invalid OTLP endpoint 'notaurl' for http/protobuf"),
        (("--endpoint", "http://127.0.0.1:4318"), {"OTEL_EXPORTER_OTLP_COMPRESSION": "brotli"},
         "Error: unsupported OTEL_EXPORTER_OTLP_COMPRESSION 'brotli' (use gzip, deflate or none)"),
        # Read only once the spans were: a traceback and exit 1.
        (("--endpoint", "http://127.0.0.1:4318"), {"OTEL_SPAN_LINK_COUNT_LIMIT": "abc"},
         "Error: OTEL_SPAN_LINK_COUNT_LIMIT must be a whole number of at least 0, not 'abc'"),
        (("--endpoint", "http://127.0.0.1:4318"), {"OTEL_AGENTS_EXPORT_VALUE_CAP": "abc"},
         "Error: OTEL_AGENTS_EXPORT_VALUE_CAP must be a whole number of bytes, not 'abc'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(saved, env, args, variables, message):
    for name, value in variables.items():
        env.setenv(name, value)
    result = invoke(saved[1], *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == ""


def test_unknown_sessions_and_sessions_without_a_journal_are_refused(saved, env, tmp_path):
    result = invoke("20990101-000000-abcdef", "--endpoint", "http://127.0.0.1:4318")
    assert result.exit_code == 2 and "no session '20990101-000000-abcdef'" in result.stderr
    sessions = tmp_path / "sessions"
    shutil.copytree(saved[0] / "sessions" / saved[1], sessions / saved[1])
    (sessions / saved[1] / "spans.jsonl").unlink()
    result = invoke(saved[1], "--endpoint", "http://127.0.0.1:4318", "--sessions-dir", str(sessions))
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: session {saved[1]} has no span journal ({sessions / saved[1] / 'spans.jsonl'})"


SECRET = "sk-live-SECRET1234567890"


@pytest.mark.parametrize(
    "args, variables, named, entry",
    [
        (("--headers", f"Authorization: Bearer {SECRET}"), {}, "--headers", 1),
        ((), {"OTEL_EXPORTER_OTLP_HEADERS": f"Authorization: Bearer {SECRET}"}, "OTEL_EXPORTER_OTLP_HEADERS", 1),
        # The HTTP exporter parses the variable even when --headers is given.
        (("--headers", "x-a=b"), {"OTEL_EXPORTER_OTLP_TRACES_HEADERS": f"x-a=b,Authorization: Bearer {SECRET}"},
         "OTEL_EXPORTER_OTLP_TRACES_HEADERS", 2),
    ],
)
def test_a_malformed_header_list_is_exit_2_and_never_echoed(saved, tmp_path, args, variables, named, entry):
    """The SDK's parse_env_headers printed the list verbatim (twice), secret included, and the export went on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(variables, OTEL_AGENTS_HOME=str(saved[0]))
    with HttpTraceReceiver() as receiver:
        proc = subprocess.run([sys.executable, "-m", "otel_agents", "export", saved[1], "--endpoint", receiver.endpoint,
                               *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
        assert receiver.spans() == []
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"Error: {named} must be key=value pairs separated by commas, values URL-encoded "
        f"(e.g. authorization=Bearer%20TOKEN); entry {entry} is not (its value is not shown)"
    ], proc.stderr
    assert SECRET not in proc.stderr


def test_an_endpoint_that_refuses_is_exit_1_with_the_count(saved, env):
    spans = sum(1 for line in _journal(saved[0] / "sessions" / saved[1]) if "end" in line)
    with HttpTraceReceiver("refuse", refuse_status=403) as receiver:  # not retried: refused at once
        result = invoke(saved[1], "--endpoint", receiver.endpoint, "--headers", "authorization=Bearer%20t")
        assert [h["authorization"] for h in receiver.headers] == ["Bearer t"]
    assert result.exit_code == 1
    assert result.stdout.strip() == f"0 of {spans} spans of session {saved[1]} sent to {receiver.traces_url}"
    assert result.stderr.strip() == (
        f"error: {spans} of {spans} spans not delivered to {receiver.traces_url} "
        "(refused, unreachable or no answer in time)"
    )


def test_export_only_reads_and_leaves_out_what_a_live_writer_has_not_ended(saved, env, tmp_path):
    sessions = tmp_path / "sessions"
    directory = sessions / saved[1]
    shutil.copytree(saved[0] / "sessions" / saved[1], directory)
    lines = (directory / "spans.jsonl").read_bytes().splitlines(keepends=True)
    root = next(orjson.loads(l)["start"] for l in lines if b'"start"' in l and b'"parent"' not in l)
    # The root never ended: as a run still going (or a dead writer) leaves it.
    (directory / "spans.jsonl").write_bytes(b"".join(l for l in lines if orjson.loads(l).get("end") != root))
    ended = {line["end"] for line in _journal(directory) if "end" in line}
    command = [sys.executable, "-m", "otel_agents", "export", saved[1], "--sessions-dir", str(sessions), "--json"]
    with HttpTraceReceiver() as receiver:
        # No writer: the open root goes as interrupted, as every reader shows it.
        dead = CliRunner().invoke(cli, ["export", saved[1], "--endpoint", receiver.endpoint, "--sessions-dir", str(sessions)])
        assert dead.exit_code == 0, dead.stderr
        assert {s.span_id for s in receiver.spans()} == ended | {root}
        (sent_root,) = [s for s in receiver.spans() if s.span_id == root]
        assert sent_root.end_time_unix_nano > 0
        receiver.clear()
        owner = take(directory)  # another process writes the session: reading is allowed
        try:
            before = _files(directory)
            live = subprocess.run(command + ["--endpoint", receiver.endpoint], capture_output=True, text=True,
                                  timeout=60, env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
            assert _files(directory) == before  # nothing written, not even the lock file
        finally:
            owner.release()
        assert live.returncode == 0, live.stderr
        summary = orjson.loads(live.stdout)
        assert summary["still_open"] == 1 and summary["spans"] == summary["delivered"] == len(ended)
        assert {s.span_id for s in receiver.spans()} == ended


def test_the_protocol_variable_picks_grpc(saved, env):
    from support.otlp_receivers import GrpcTraceReceiver

    ended = {line["end"] for line in _journal(saved[0] / "sessions" / saved[1]) if "end" in line}
    env.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with GrpcTraceReceiver() as receiver:
        result = invoke(saved[1], "--endpoint", receiver.endpoint, "--json")
        received = {s.span_id for s in receiver.spans()}
    assert result.exit_code == 0, result.stderr
    assert orjson.loads(result.stdout)["endpoint"] == receiver.endpoint  # gRPC takes host:port, no path
    assert received == ended


def test_a_copy_sent_without_contents_imports_as_a_session_that_refuses_to_resume(saved, env, tmp_path):
    # Its records have no contents: resumed, the model would have been sent empty messages.
    from google.protobuf.json_format import MessageToJson

    home, session_id = saved
    env.setenv("OTEL_AGENTS_EXPORT_CONTENT", "false")
    with HttpTraceReceiver() as receiver:
        assert invoke(session_id, "--endpoint", receiver.endpoint).exit_code == 0
        requests = receiver.requests
    copy = tmp_path / "copy.jsonl"
    copy.write_text("".join(MessageToJson(r, indent=None) + "\n" for r in requests))
    env.delenv("OTEL_AGENTS_EXPORT_CONTENT")
    env.setenv("OTEL_AGENTS_HOME", str(tmp_path / "central"))
    imported = CliRunner().invoke(cli, ["import", str(copy)], catch_exceptions=False)
    assert imported.exit_code == 0, imported.output
    resumed = CliRunner().invoke(cli, ["resume", session_id, "again"], catch_exceptions=False)
    assert resumed.exit_code == 2
    assert "was saved without message contents" in resumed.output
    assert "OTEL_AGENTS_EXPORT_CONTENT=false" in resumed.output


def test_a_copy_with_values_cut_imports_as_a_session_that_refuses_to_resume(saved, env, tmp_path):
    # Its records hold truncation markers: resumed, the model would read them as what was said.
    from google.protobuf.json_format import MessageToJson

    home, session_id = saved
    env.setenv("OTEL_AGENTS_EXPORT_VALUE_CAP", "256")
    with HttpTraceReceiver() as receiver:
        assert invoke(session_id, "--endpoint", receiver.endpoint).exit_code == 0
        requests = receiver.requests
    copy = tmp_path / "copy.jsonl"
    copy.write_text("".join(MessageToJson(r, indent=None) + "\n" for r in requests))
    env.delenv("OTEL_AGENTS_EXPORT_VALUE_CAP")
    env.setenv("OTEL_AGENTS_HOME", str(tmp_path / "central"))
    assert CliRunner().invoke(cli, ["import", str(copy)], catch_exceptions=False).exit_code == 0
    meta = orjson.loads((tmp_path / "central" / "sessions" / session_id / "meta.json").read_bytes())
    assert meta["truncated_values"] > 0
    _assert_said_cut_by_the_senders_export(session_id, meta["truncated_values"])


def _assert_said_cut_by_the_senders_export(session_id: str, count: int) -> None:
    """list, verify, resume and fork name what is known: the sender's export limits, caps or standard ones."""
    cause = ("by the sender's export limits (its caps, OTEL_AGENTS_EXPORT_VALUE_CAP and 1 MiB a span, "
             "or the standard OTEL_*_LIMIT variables)")
    listed = CliRunner().invoke(cli, ["sessions", "list"], catch_exceptions=False)
    assert f"({count} values cut or events dropped by the sender's export)" in listed.output
    verified = CliRunner().invoke(cli, ["sessions", "verify", session_id], catch_exceptions=False)
    assert verified.exit_code == 0 and f"{count} value(s) cut or event(s) dropped {cause}" in verified.output
    for command in (["resume", session_id, "again"], ["fork", session_id, "--at", "msg_000002", "again"]):
        refused = CliRunner().invoke(cli, command, catch_exceptions=False)
        assert refused.exit_code == 2, refused.output
        assert f"was received with {count} value(s) cut or event(s) dropped {cause}, so" in " ".join(
            refused.output.split())


def test_a_copy_cut_by_the_standard_limits_imports_as_a_session_known_cut_and_said_so(saved, env, tmp_path):
    # The standard limits cut with no marker and drop events: the span's count is what says the values are not whole.
    # (The span-specific one: cut, an event's JSON-valued record field would not import at all.)
    from google.protobuf.json_format import MessageToJson

    home, session_id = saved
    env.setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "30")  # session ids (22) whole
    env.setenv("OTEL_SPAN_EVENT_COUNT_LIMIT", "2")
    with HttpTraceReceiver() as receiver:
        assert invoke(session_id, "--endpoint", receiver.endpoint).exit_code == 0
        requests = receiver.requests
    strings = [a.value.string_value for r in requests for rs in r.resource_spans for ss in rs.scope_spans
               for span in ss.spans for a in span.attributes]
    assert strings and max(map(len, strings)) == 30
    copy = tmp_path / "copy.jsonl"
    copy.write_text("".join(MessageToJson(r, indent=None) + "\n" for r in requests))
    assert any(span.dropped_events_count for r in requests for rs in r.resource_spans for ss in rs.scope_spans
               for span in ss.spans)
    env.delenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT")
    env.delenv("OTEL_SPAN_EVENT_COUNT_LIMIT")
    env.setenv("OTEL_AGENTS_HOME", str(tmp_path / "central"))
    imported = CliRunner().invoke(cli, ["import", str(copy)], catch_exceptions=False)
    assert imported.exit_code == 0, imported.output
    meta = orjson.loads((tmp_path / "central" / "sessions" / session_id / "meta.json").read_bytes())
    assert meta["truncated_values"] > 0
    # No cap cut anything and no marker is there: the texts must not say a cap did.
    _assert_said_cut_by_the_senders_export(session_id, meta["truncated_values"])


@pytest.mark.parametrize("limit", [25, 40])  # 25: within the first call's id (session ids, 22, stay whole)
def test_a_copy_whose_tool_calls_a_length_limit_cut_imports_with_what_they_kept(saved, env, tmp_path, limit):
    # The general limit cuts event values too: an assistant entry's tool_calls JSON, cut mid-text, made
    # `import` refuse the whole copy ("Unterminated string"); what the cut kept (ids, names) is read now.
    from google.protobuf.json_format import MessageToJson

    home, session_id = saved
    env.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", str(limit))
    with HttpTraceReceiver() as receiver:
        assert invoke(session_id, "--endpoint", receiver.endpoint).exit_code == 0
        requests = receiver.requests
    cut_calls = [a.value.string_value for r in requests for rs in r.resource_spans for ss in rs.scope_spans
                 for span in ss.spans for e in span.events for a in e.attributes
                 if a.key.endswith("tool_calls")]
    assert cut_calls and all(len(text) == limit for text in cut_calls)  # every call's JSON was cut mid-way
    copy = tmp_path / "copy.jsonl"
    copy.write_text("".join(MessageToJson(r, indent=None) + "\n" for r in requests))
    env.delenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
    env.setenv("OTEL_AGENTS_HOME", str(tmp_path / "central"))
    imported = CliRunner().invoke(cli, ["import", str(copy)], catch_exceptions=False)
    assert imported.exit_code == 0, imported.output
    central = tmp_path / "central" / "sessions" / session_id
    assert orjson.loads((central / "meta.json").read_bytes())["truncated_values"] > 0
    records = [orjson.loads(line) for line in (central / "events.jsonl").read_bytes().splitlines()]
    originals = {r["message_id"]: r for r in map(orjson.loads, (home / "sessions" / session_id / "events.jsonl")
                                                   .read_bytes().splitlines())}
    called = [r for r in records if "tool_calls" in r]
    assert called and len(called) == len([r for r in originals.values() if r.get("tool_calls")])
    for record in called:  # each call kept what came before the cut: at 40 characters, its whole id
        (original,) = originals[record["message_id"]]["tool_calls"]
        (kept,) = record["tool_calls"]
        assert original["id"].startswith(kept["id"]) and (limit < 40 or kept["id"] == original["id"])


def test_a_timeout_that_looks_like_milliseconds_is_warned_of(saved, env):
    # The specification's OTEL_EXPORTER_OTLP_TIMEOUT=10000 (10 s) is read as seconds, as the exporters read it:
    # against a receiver that never answers, export would wait hours without a word.
    env.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "10000")
    with HttpTraceReceiver() as receiver:
        result = invoke(saved[1], "--endpoint", receiver.endpoint)
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("warning: the OTLP export timeout 10000 is read as seconds")
    assert result.stderr.rstrip().endswith("each request may wait that long")  # no run's exit cap here
    env.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "10")
    with HttpTraceReceiver() as receiver:
        assert invoke(saved[1], "--endpoint", receiver.endpoint).stderr == ""
