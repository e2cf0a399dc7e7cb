"""Shared CLI options: a session id that names nothing is one line and exit 2 in every command."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from otel_agents.cli import cli


@pytest.mark.parametrize("args", [
    ["view", "{sid}", "agents"],
    ["sessions", "show", "{sid}"],
    ["sessions", "verify", "{sid}"],
    ["resume", "{sid}", "go on"],
    ["send", "{sid}", "--to", "main", "hello"],
    ["fork", "{sid}", "--at", "msg_000001", "go on"],
    ["export", "{sid}", "--endpoint", "http://127.0.0.1:9/v1/traces"],
    ["replay", "{sid}"],
])
@pytest.mark.parametrize("session_id", ["nope", "bad id!"])
def test_a_session_that_is_not_there_is_one_line_and_exit_2(args, session_id, home):
    """Not a usage problem (the command was written rightly): no usage block, no --help hint."""
    result = CliRunner().invoke(cli, [a.format(sid=session_id) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("Error: "), result.stderr
    assert not home.exists() or not any((home / "sessions").glob("*"))  # nothing written


@pytest.mark.parametrize("args", [
    ["run", "hello"],
    ["resume", "{sid}", "go on"],
    ["send", "{sid}", "--to", "main", "hello"],
    ["fork", "{sid}", "--at", "msg_000001", "go on"],
])
@pytest.mark.parametrize("where", ["missing/spans.jsonl", "a_file/spans.jsonl"])
def test_an_otlp_file_whose_directory_is_not_there_is_refused_before_anything_runs(args, where, home, tmp_path):
    """It ran, warned twice that it could write neither spans nor metrics, and exited 0."""
    runner = CliRunner()
    first = runner.invoke(cli, ["run", "--script", "jack-and-jill", "hi"])
    assert first.exit_code == 0, first.output
    session_id = first.stderr.strip().splitlines()[-1].split()[-1]
    (tmp_path / "a_file").write_text("")
    saved = sorted(p.name for p in (home / "sessions").iterdir())
    ledger = (home / "billing.jsonl").read_bytes()
    result = runner.invoke(cli, [a.format(sid=session_id) for a in args] + ["--otlp-file", str(tmp_path / where)])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert "--otlp-file" in result.stderr and "does not exist" in result.stderr, result.stderr
    assert "warning" not in result.stderr
    assert sorted(p.name for p in (home / "sessions").iterdir()) == saved  # no session made, none forked
    assert (home / "billing.jsonl").read_bytes() == ledger
    assert not (tmp_path / "missing").exists()


def test_an_otlp_file_inside_the_sessions_directory_or_on_the_ledger_is_refused(home, tmp_path, monkeypatch):
    """`resume ID --otlp-file $HOME/sessions/ID/events.jsonl` appended OTLP lines to the conversation."""
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    first = CliRunner().invoke(cli, ["run", "hi"])
    assert first.exit_code == 0, first.output
    (directory,) = (home / "sessions").iterdir()
    sid = directory.name
    link = tmp_path / "link"
    link.symlink_to(directory)
    saved = {p.name: p.read_bytes() for p in directory.iterdir()}
    ledger = (home / "billing.jsonl").read_bytes()
    for args, target in [
        (["resume", sid, "go on"], directory / "events.jsonl"),
        (["resume", sid, "go on"], link / "spans.jsonl"),  # symlinks followed
        (["send", sid, "--to", "main", "hello"], directory / "spans.jsonl"),
        (["fork", sid, "--at", "msg_000001", "go on"], directory / "events.jsonl"),
        (["run", "hi"], home / "sessions" / "spans.jsonl"),
        (["run", "hi"], home / "billing.jsonl"),
        (["run", "hi"], home / "sessions" / "x"),  # its metrics file, x.metrics.jsonl, would be there too
    ]:
        refused = CliRunner().invoke(cli, [*args, "--otlp-file", str(target)])
        assert refused.exit_code == 2, (args, refused.output)
        assert "inside the sessions directory" in refused.output or "is a billing ledger" in refused.output
    assert [p.name for p in (home / "sessions").iterdir()] == [sid]  # no new session, not even a lock
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == saved
    assert (home / "billing.jsonl").read_bytes() == ledger


@pytest.mark.parametrize("args", [
    ["run", "--script", "", "hello"],
    ["run", "--model", " ", "hello"],
    ["resume", "{sid}", "--script", "", "go on"],
    ["fork", "{sid}", "--at", "msg_000001", "--script", "", "go on"],
    ["send", "{sid}", "--to", "main", "--script", "", "hello"],
    ["send", "{sid}", "--to", "main", "--model", "", "hello"],
])
def test_an_empty_script_or_model_is_refused_not_read_as_none_given(args, home):
    """``--script ''`` ran the built-in demo and ``--model ''`` the script's model, without a word."""
    result = CliRunner().invoke(cli, [a.format(sid="nope") for a in args])
    assert result.exit_code == 2, result.output
    assert "must not be empty" in result.stderr and result.stdout == ""
    assert not home.exists() or not any((home / "sessions").glob("*"))
