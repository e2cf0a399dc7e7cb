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
